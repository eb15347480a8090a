package protocol

import (
	"cmp"
	"context"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/cocrawl/cocrawl/webevents"
)

// ShareStore is what the share server reads from a store.
type ShareStore interface {
	ID() string
	DayInfo(day int64) (webevents.DayInfo, bool, error)
	ReadDay(day, from int64, fn func(offset int64, e webevents.Event) error) error
}

// Server is the share repository as an http.Handler: /robots.shr,
// /robots.txt and <repository>/<day>.dat generated from a store.
type Server struct {
	store    ShareStore
	control  ShareControl
	repo     string // path of the repository, with a trailing slash
	log      *slog.Logger
	slots    chan struct{} // bounds concurrent day-file streams
	clients  *clientSlots  // bounds them per client
	inflight inflight
	update   func(c *ShareControl)
	metrics  *Metrics
	// withhold: see ServerOptions.Withhold
	withhold func(from string) bool
	indexNow func(IndexNowSubmission) error
	// live streams (stream.go): bounded in all and per client
	streams     chan struct{}
	subscribers *clientSlots
	streamWrite time.Duration
	closing     chan struct{}
	closeOnce   sync.Once
	now         func() time.Time
	hub         *hub // WebSub (websub.go)
}

// ServerOptions configure NewServer.
type ServerOptions struct {
	// Control is the robots.shr to publish. Repository may be a path
	// ("/share/") or an absolute URL whose path is used; when it is a path
	// the published field is made absolute from the request's Host, as 1.0
	// peers expect an absolute URL. An empty Crawler is taken from the Host
	// too. An empty Version means CurrentVersion.
	Control ShareControl
	Logger  *slog.Logger
	// MaxStreams bounds day files being sent at once; 0 means 32. Further
	// requests get 503 with Retry-After.
	MaxStreams int
	// MaxStreamsPerClient bounds those sent to one client at once; 0 means
	// 4. A client is what ClientKey says, by default its IP address; a
	// peer over libp2p passes its peer ID. One client cannot then hold
	// every stream.
	MaxStreamsPerClient int
	ClientKey           func(*http.Request) string
	// Update, when set, fills the fields that change while a peer runs
	// (the advertised rho, libp2p addresses) in a copy of Control before
	// each robots.shr is written.
	Update func(c *ShareControl)
	// Metrics counts requests and bytes sent; nil counts nothing.
	Metrics *Metrics
	// Withhold, when set, names the sources (Event.From) whose records
	// the peer no longer vouches for: each of their records in a day file
	// is sent as comment lines of the same length (spec section 4.5), so
	// offsets, sizes and ranges stay valid.
	Withhold func(from string) bool
	// IndexNow, when set, takes IndexNow submissions (/indexnow,
	// indexnow.go): it verifies the key before any URL counts, and
	// returns ErrIndexNowScope or ErrIndexNowBusy to refuse one.
	IndexNow func(IndexNowSubmission) error
	// MaxSubscribers bounds the live streams of /events (stream.go) at
	// once; 0 means 256. MaxSubscribersPerClient bounds one client's, by
	// ClientKey; 0 means 4. Further requests get 503 with Retry-After.
	MaxSubscribers, MaxSubscribersPerClient int
	// StreamWriteTimeout is how long a write to a live stream may wait
	// for a subscriber that does not read before it is dropped; 0 means
	// 30 s.
	StreamWriteTimeout time.Duration
	// WebSubClient makes the hub's requests to subscribers' callbacks
	// (intent checks, notifications); nil means NewHTTPClient's, which
	// refuses loopback and private addresses. The hub's subscriptions
	// count against MaxSubscribers, and 4 per callback host.
	WebSubClient *http.Client
}

// NewServer returns the handler for store.
func NewServer(store ShareStore, o ServerOptions) (*Server, error) {
	c := o.Control
	if c.Version == "" {
		c.Version = CurrentVersion
	}
	if c.Repository == "" {
		c.Repository = "/share/"
	}
	if _, _, err := ParseVersion(c.Version); err != nil {
		return nil, err
	}
	path := c.Repository
	if i := strings.Index(path, "://"); i >= 0 {
		rest := path[i+3:]
		if j := strings.IndexByte(rest, '/'); j >= 0 {
			path = rest[j:]
		} else {
			path = "/"
		}
	}
	if !strings.HasPrefix(path, "/") || strings.ContainsAny(path, "?#") {
		return nil, fmt.Errorf("protocol: repository path %q must start with / and hold no query", path)
	}
	if !strings.HasSuffix(path, "/") {
		path += "/"
	}
	lg := o.Logger
	if lg == nil {
		lg = slog.Default()
	}
	n := o.MaxStreams
	if n <= 0 {
		n = 32
	}
	perClient := o.MaxStreamsPerClient
	if perClient <= 0 {
		perClient = 4
	}
	key := o.ClientKey
	if key == nil {
		key = ClientIP
	}
	subs := o.MaxSubscribers
	if subs <= 0 {
		subs = defaultSubscribers
	}
	subsPerClient := o.MaxSubscribersPerClient
	if subsPerClient <= 0 {
		subsPerClient = defaultSubscribersPerClient
	}
	return &Server{store: store, control: c, repo: path, log: lg, slots: make(chan struct{}, n), update: o.Update, metrics: o.Metrics,
		withhold: o.Withhold, indexNow: o.IndexNow, clients: &clientSlots{max: perClient, key: key, held: map[string]int{}},
		streams: make(chan struct{}, subs), subscribers: &clientSlots{max: subsPerClient, key: key, held: map[string]int{}},
		streamWrite: cmp.Or(o.StreamWriteTimeout, defaultStreamWriteTimeout), closing: make(chan struct{}), now: time.Now,
		hub: &hub{subs: map[subKey]*hubSub{}, perHost: map[string]int{}, client: cmp.Or(o.WebSubClient, defaultClient), verifying: make(chan struct{}, maxVerifying)}}, nil
}

// Wait returns when no request is being served, or with ctx's error. The
// owner of the store calls it after stopping the listeners and before
// closing the store, so no request reads a closed store.
func (s *Server) Wait(ctx context.Context) error { return s.inflight.wait(ctx) }

// inflight counts requests being served. Unlike a WaitGroup it may be
// waited on while new requests arrive.
type inflight struct {
	mu   sync.Mutex
	n    int
	idle chan struct{} // closed when n drops to 0, for the waiters
}

func (f *inflight) add() {
	f.mu.Lock()
	f.n++
	f.mu.Unlock()
}

func (f *inflight) done() {
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.n--; f.n == 0 && f.idle != nil {
		close(f.idle)
		f.idle = nil
	}
}

func (f *inflight) wait(ctx context.Context) error {
	f.mu.Lock()
	if f.n == 0 {
		f.mu.Unlock()
		return nil
	}
	if f.idle == nil {
		f.idle = make(chan struct{})
	}
	idle := f.idle
	f.mu.Unlock()
	select {
	case <-idle:
		return nil
	case <-ctx.Done():
		return ctx.Err()
	}
}

// RepositoryPath returns the path day files are served under.
func (s *Server) RepositoryPath() string { return s.repo }

func (s *Server) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	s.inflight.add()
	defer s.inflight.done()
	sw := &statusWriter{ResponseWriter: w, code: http.StatusOK}
	resource := "other"
	defer func() { s.metrics.request(resource, sw.code) }()
	if r.URL.Path == "/indexnow" {
		resource = "indexnow"
		s.serveIndexNow(sw, r)
		return
	}
	if r.URL.Path == WebSubPath {
		resource = "websub"
		s.serveWebSub(sw, r)
		return
	}
	if r.Method != http.MethodGet && r.Method != http.MethodHead {
		sw.Header().Set("Allow", "GET, HEAD")
		http.Error(sw, "method not allowed", http.StatusMethodNotAllowed)
		return
	}
	switch p := r.URL.Path; {
	case p == StreamPath:
		resource = "events"
		s.serveStream(sw, r)
	case p == "/robots.shr":
		resource = "shr"
		s.serveControl(sw, r)
	case p == "/robots.txt":
		resource = "robots"
		// The share repository is for peers, not for crawlers (spec 8.1).
		sw.Header().Set("Content-Type", "text/plain; charset=utf-8")
		fmt.Fprintf(sw, "User-agent: *\nDisallow: %s\nDisallow: /robots.shr\n", s.repo)
	case strings.HasPrefix(p, s.repo) && strings.HasSuffix(p, ".dat"):
		resource = "dat"
		day, err := strconv.ParseInt(p[len(s.repo):len(p)-4], 10, 64)
		if err != nil || day < 0 || day > 1<<31 || strings.ContainsAny(p[len(s.repo):len(p)-4], "+-") {
			http.NotFound(sw, r)
			return
		}
		s.serveDay(sw, r, day)
	case isResourceSync(p):
		resource = "resourcesync"
		s.serveResourceSync(sw, r)
	default:
		http.NotFound(sw, r)
	}
}

func (s *Server) serveControl(w http.ResponseWriter, r *http.Request) {
	c := s.control
	c.Special = append([]string(nil), c.Special...)
	if s.update != nil {
		s.update(&c)
	}
	scheme := "http"
	if r.TLS != nil {
		scheme = "https"
	}
	if strings.HasPrefix(c.Repository, "/") {
		c.Repository = scheme + "://" + r.Host + c.Repository
	}
	if c.Crawler == "" {
		c.Crawler = hostPort(r.Host, scheme) + " cocrawl/" + CurrentVersion
	}
	w.Header().Set("Content-Type", "text/plain; charset=utf-8")
	w.Header().Set("Cache-Control", "max-age=300")
	if r.Method == http.MethodHead {
		return
	}
	_, _ = c.WriteTo(w)
}

func hostPort(host, scheme string) string {
	if _, _, err := splitHostPort(host); err == nil {
		return host
	}
	if scheme == "https" {
		return host + ":443"
	}
	return host + ":80"
}

type statusWriter struct {
	http.ResponseWriter
	code int
}

func (w *statusWriter) WriteHeader(code int) {
	w.code = code
	w.ResponseWriter.WriteHeader(code)
}

// Unwrap lets http.ResponseController reach the connection's Flush and
// write deadline, which live streams need.
func (w *statusWriter) Unwrap() http.ResponseWriter { return w.ResponseWriter }

// Timeouts bound how long a client may hold a server connection. Zero
// fields take the defaults of DefaultTimeouts.
type Timeouts struct {
	ReadHeader time.Duration // to send the request headers
	Read       time.Duration // to send the whole request
	Write      time.Duration // to receive the whole response
	Idle       time.Duration // between requests on a kept-alive connection
}

// DefaultTimeouts: a day file of a million records takes seconds on a fair
// link, so Write is generous; the others stop slowloris clients.
var DefaultTimeouts = Timeouts{ReadHeader: 10 * time.Second, Read: 30 * time.Second, Write: 10 * time.Minute, Idle: 2 * time.Minute}

// NewHTTPServer wraps h in an http.Server with the timeouts t (zero fields
// take their defaults) and a 32 KiB header limit.
func NewHTTPServer(addr string, h http.Handler, t Timeouts) *http.Server {
	d := DefaultTimeouts
	pick := func(v, def time.Duration) time.Duration {
		if v > 0 {
			return v
		}
		return def
	}
	return &http.Server{
		Addr:              addr,
		Handler:           h,
		ReadHeaderTimeout: pick(t.ReadHeader, d.ReadHeader),
		ReadTimeout:       pick(t.Read, d.Read),
		WriteTimeout:      pick(t.Write, d.Write),
		IdleTimeout:       pick(t.Idle, d.Idle),
		MaxHeaderBytes:    32 << 10,
	}
}

// clientSlots counts the day-file streams each client holds.
type clientSlots struct {
	mu   sync.Mutex
	max  int
	key  func(*http.Request) string
	held map[string]int
}

// take holds a stream for the client of r; false when it holds max.
func (c *clientSlots) take(k string) bool {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.held[k] >= c.max {
		return false
	}
	c.held[k]++
	return true
}

func (c *clientSlots) give(k string) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.held[k]--; c.held[k] <= 0 {
		delete(c.held, k)
	}
}

// ClientIP is a request's client IP address, its RemoteAddr without the
// port: the default ServerOptions.ClientKey.
func ClientIP(r *http.Request) string {
	if h, _, err := net.SplitHostPort(r.RemoteAddr); err == nil {
		return h
	}
	return r.RemoteAddr
}
