package peer

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"log/slog"
	"maps"
	"math/rand/v2"
	"net"
	"net/http"
	"net/netip"
	"net/url"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	lpeer "github.com/libp2p/go-libp2p/core/peer"
	"golang.org/x/time/rate"

	"github.com/cocrawl/cocrawl/crawl"
	"github.com/cocrawl/cocrawl/peer/p2p"
	"github.com/cocrawl/cocrawl/peer/rho"
	"github.com/cocrawl/cocrawl/protocol"
	"github.com/cocrawl/cocrawl/webevents"
)

// p2pNode is what the cooperation needs of its libp2p node (package
// p2p): addresses, found peers, a client per peer ID, status.
type p2pNode interface {
	ID() lpeer.ID
	Addrs() []string
	ListenAddrs() []string
	OnFound(func(ai lpeer.AddrInfo, source string))
	Run(ctx context.Context, share bool)
	DialMerge(ctx context.Context, id lpeer.ID) (*p2p.Dial, error)
	ConnectionOf(id lpeer.ID) string
	Status() p2p.Status
	Close() error
}

// Config configures a Peer. Zero fields take the defaults named.
type Config struct {
	// Addr is the host:port its share repository is reached at; it makes
	// the cid ("host:port Moniker") written in every event it polls and the
	// crawler field of its robots.shr. Required.
	Addr    string
	Moniker string // default "cocrawl/<protocol version>"
	Contact string // the operator's e-mail: robots.shr contact and From header
	Special []string

	Crawl      crawl.Config   // CID is filled from Addr and Moniker
	Controller rho.Controller // default: the rate controller
	Mode       string         // the behaviour's name, for status only
	Share      bool           // publish what it learns

	Peers    []string // robots.shr URLs of static peers
	Schedule MergeSchedule
	// KeepDays is how many days of logs the store keeps, today included,
	// and how long a deleted URL's state is kept; 0 means
	// webevents.DefaultKeepDays, and never fewer than MinKeepDays (a first
	// merge reaches back 7 days).
	KeepDays int
	// MergeInScope merges only records of URLs within the crawler's scope
	// (its seeds' hosts or domains); the others are dropped.
	MergeInScope bool
	// NoSplit turns off the rendezvous split (split.go): each peer then
	// polls in its own random order (Crawl.Spread) and URLs settle on
	// whichever peer reaches them first, the emergent split.
	NoSplit bool
	// DayQuota is how many records one peer's file of one day may bring;
	// 0 means protocol.Merger's default (1,000,000).
	DayQuota int64
	// Slots is how many network operations run at once; default
	// Crawl.Workers. Each slot draws poll or merge with probability rho.
	Slots int
	// RequestsPerSecond caps the peer's HTTP requests, polls and merges
	// together (a merge counts each request it made); 0 means no cap
	// beyond politeness. It gives peers compared with each other the same
	// network budget.
	RequestsPerSecond float64
	// AllowPrivate lets merges reach loopback and private addresses; the
	// crawler has its own switch in Crawl.Fetch.
	AllowPrivate bool
	MergeLimits  protocol.Limits
	// Trust sets the spot-checks of what peers tell (peer/checks.go).
	Trust TrustConfig
	// P2P, when set, runs a libp2p host: the share repository is served
	// over libp2p streams too, and (unless P2P.NoDHT) community peers are
	// found through the DHT and merged over libp2p.
	P2P *p2p.Config
	// Grace is how long in-flight operations may take to finish after Run's
	// context ends; default 10 s. Then they are cancelled: a cancelled poll
	// is due again, a cancelled merge resumes from its cursor.
	Grace time.Duration

	Logger *slog.Logger
}

// Stores are where a peer keeps what must survive a restart; with Badger
// they share one database.
type Stores struct {
	Events   webevents.Store
	Frontier crawl.FrontierStore
	Peers    PeerStore
}

// StoresIn returns the stores of a peer kept in one Badger store: the web
// events, and the frontier and peer table in their tables of its keyspace.
func StoresIn(st *webevents.BadgerStore) Stores {
	return Stores{
		Events:   st,
		Frontier: crawl.StoredFrontier{Table: st.Table(webevents.TableFrontier), Backlog: st.Table(webevents.TableBacklog), Revisits: st.Table(webevents.TableRevisits)},
		Peers:    StoredPeers{Table: st.Table(webevents.TablePeers)},
	}
}

// Peer is a running cooperating crawler.
type Peer struct {
	merging atomic.Int32 // slots merging now (mergeSlot)
	// store failures (storeFailed)
	storeMu       sync.Mutex
	storeFailures int64
	storeErr      string
	storeFailedAt time.Time
	// the frontier's change-rate summary, cached (rateStats, under heldMu)
	rates   crawl.RateStats
	ratesAt time.Time
	// warnedAt is when a disagreement of measured and expected freshness
	// was last logged (sampler goroutine only).
	warnedAt time.Time

	cfg     Config
	cid     string
	stores  Stores
	crawler *crawl.Crawler
	merger  protocol.Merger
	share   *protocol.Server
	peers   *peerSet
	log     *slog.Logger
	stats   *stats
	metrics *protocol.Metrics // the share server's and merge client's
	started time.Time

	ctlMu   sync.Mutex
	ctl     rho.Controller
	rhoNow  float64
	rhoFrom time.Time
	timeAt  map[string]time.Duration // time spent at each rho, rounded to 0.05

	kick chan struct{} // a peer was added, or a merge moved forward

	excludedMu sync.Mutex
	excluded   map[string]string // per peer row, its repository the crawler never polls ("self": this peer's own)

	histMu  sync.Mutex
	history []Sample

	node      p2pNode // nil without Config.P2P
	closeOnce sync.Once
	budget    *rate.Limiter // nil: no cap
	checks    *checker

	heldMu sync.Mutex
	held   map[string]int64 // Status.Held, counted at heldAt
	heldAt time.Time
}

// New builds a peer from its configuration and stores, and loads its peer
// table. Run starts it.
func New(cfg Config, st Stores) (*Peer, error) {
	if cfg.Addr == "" {
		return nil, configErrorf("peer: Addr (host:port of the share repository) is required")
	}
	if st.Events == nil || st.Frontier == nil || st.Peers == nil {
		return nil, configErrorf("peer: events, frontier and peer stores are required")
	}
	cfg.defaults()
	cid := cfg.Addr + " " + cfg.Moniker
	c, err := crawl.New(cfg.crawlConfig(cid), st.Events, st.Frontier)
	if err != nil {
		return nil, err
	}
	if cfg.Slots <= 0 {
		cfg.Slots = max(cfg.Crawl.Workers, 8)
	}
	p := &Peer{
		cfg: cfg, cid: cid, stores: st, crawler: c, peers: newPeerSet(withBudget(cfg.Schedule, cfg.RequestsPerSecond)), log: cfg.Logger,
		ctl: cfg.Controller, timeAt: map[string]time.Duration{}, kick: make(chan struct{}, 1),
		excluded: map[string]string{}, stats: newStats(), metrics: protocol.NewMetrics(), started: time.Now(),
		checks: newChecker(cfg.Trust),
	}
	p.rhoNow = p.ctl.Rho()
	if cfg.RequestsPerSecond > 0 {
		p.budget = rate.NewLimiter(rate.Limit(cfg.RequestsPerSecond), 1)
	}
	p.merger = p.newMerger()
	if p.share, err = p.newShareServer(); err != nil {
		return nil, err
	}
	if cfg.P2P != nil {
		n, err := p2p.New(*cfg.P2P, p.share, cfg.Logger)
		if err != nil {
			if ce := (*p2p.ConfigError)(nil); errors.As(err, &ce) {
				err = &ConfigError{err}
			}
			return nil, err
		}
		n.OnFound(p.addP2PPeer)
		p.node = n
	}
	if err := p.loadPeers(); err != nil {
		p.closeP2P()
		return nil, err
	}
	return p, nil
}

// defaults fills the zero fields New defaults.
func (cfg *Config) defaults() {
	cfg.Moniker = cmp.Or(cfg.Moniker, "cocrawl/"+protocol.CurrentVersion)
	if cfg.Controller == nil {
		cfg.Controller = rho.NewRate()
	}
	if cfg.Logger == nil {
		cfg.Logger = slog.Default()
	}
	if cfg.Grace <= 0 {
		cfg.Grace = 10 * time.Second
	}
	if f, ok := cfg.Controller.(rho.Fixed); ok && f == 0 {
		cfg.Trust.Checks = -1 // it never polls, so it cannot check
	}
}

// crawlConfig is the crawler's configuration as the peer runs it: its cid,
// logger and contact, and what cooperation asks of its polls.
func (cfg *Config) crawlConfig(cid string) crawl.Config {
	cc := cfg.Crawl
	cc.CID, cc.Logger = cid, cfg.Logger
	cc.Fetch.From = cmp.Or(cc.Fetch.From, cfg.Contact)
	// What it polls, it tells, unchanged pages included, so its peers can
	// count its polls as their visits; and it polls in its own order, put
	// off by up to ten of the shortest merge intervals (the demo measured
	// 4, 12, 30 and 60 s with merges every 3 s: 30 s was best), and never
	// by more than half a page's revisit interval (crawl.revisitOffset),
	// so that peers interleave.
	cc.Confirm = cc.Confirm || cfg.Share
	if f, ok := cfg.Controller.(rho.Fixed); cc.Spread == 0 && !(ok && f == 1) {
		sched := cfg.Schedule
		sched.defaults()
		cc.Spread = 10 * sched.MergeMin
	}
	if cc.RequestRate == 0 {
		// The revisit schedule plans within the request budget, which the
		// poll/merge slots spend (polls get what merges leave).
		cc.RequestRate = cfg.RequestsPerSecond
	}
	return cc
}

// newMerger is the merge client, its records checked and handed to the
// crawler (onMerged).
func (p *Peer) newMerger() protocol.Merger {
	m := protocol.Merger{
		Store:  p.stores.Events,
		Client: protocol.NewHTTPClient(protocol.ClientOptions{AllowPrivate: p.cfg.AllowPrivate}),
		Limits: p.cfg.MergeLimits, From: p.cfg.Contact, Logger: p.cfg.Logger, Metrics: p.metrics,
		Merged: p.onMerged, DayQuota: p.cfg.DayQuota,
	}
	if p.cfg.MergeInScope {
		m.Filter = func(e *webevents.Event) bool { return p.crawler.InScope(e.URL) }
	}
	return m
}

// newShareServer is the share repository: the peer's day files, or none
// when it does not share.
func (p *Peer) newShareServer() (*protocol.Server, error) {
	var shareStore protocol.ShareStore = p.stores.Events
	if !p.cfg.Share {
		shareStore = emptyShare{p.stores.Events}
	}
	return protocol.NewServer(shareStore, protocol.ServerOptions{
		ClientKey: p2p.ClientOf,
		Control:   protocol.ShareControl{Crawler: p.cid, Contact: p.cfg.Contact, Special: p.cfg.Special, Repository: "/share/"},
		Logger:    p.cfg.Logger,
		Update:    p.updateControl,
		Metrics:   p.metrics,
		Withhold:  p.withhold,
		IndexNow:  p.indexNow,
		// The WebSub hub calls subscribers' callbacks as the merge client
		// fetches peers: public addresses only, unless allowed.
		WebSubClient: protocol.NewHTTPClient(protocol.ClientOptions{AllowPrivate: p.cfg.AllowPrivate}),
	})
}

// loadPeers fills the peer table from its store and the static peers, and
// keeps the repositories of itself and its peers away from polling.
func (p *Peer) loadPeers() error {
	p.excludeRepository("self", "http://"+p.cfg.Addr+"/robots.shr", "http://"+p.cfg.Addr+p.share.RepositoryPath())
	if err := p.stores.Peers.LoadPeers(func(r Record) error {
		p.peers.load(r)
		p.excludeRepository(r.URL, r.URL, r.Repository)
		return nil
	}); err != nil {
		return fmt.Errorf("peer: load peer table: %w", err)
	}
	for _, u := range p.cfg.Peers {
		if err := p.AddPeer(u, "static"); err != nil {
			return err
		}
	}
	p.crawler.Delegate(p.peers.delegated(time.Now()))
	return nil
}

// updateControl fills the robots.shr fields that change while the peer
// runs: its current rho, its controller's probe report if it publishes
// one, and its libp2p identity and addresses.
func (p *Peer) updateControl(sc *protocol.ShareControl) {
	sc.Rho = strconv.FormatFloat(p.Rho(), 'f', 2, 64)
	sc.Probe = ""
	p.ctlMu.Lock()
	if r, ok := p.ctl.(rho.Reporter); ok {
		if rep, ok := r.Report(); ok {
			sc.Probe = rep.String()
		}
	}
	p.ctlMu.Unlock()
	if p.node != nil {
		sc.PeerID = p.node.ID().String()
		sc.P2PAddrs = p.node.Addrs()
	}
}

// Close releases what New started (the libp2p host) and waits, up to 10 s,
// for share requests still being served: the caller closes the store
// next. Call it after the HTTP servers stopped.
func (p *Peer) Close() {
	p.closeP2P()
	p.share.CloseStreams()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if err := p.share.Wait(ctx); err != nil {
		p.log.Warn("share requests still running as the store closes", "err", err)
	}
}

// CloseStreams ends the share server's live streams (/events), which an
// HTTP server's graceful shutdown would otherwise wait for.
func (p *Peer) CloseStreams() { p.share.CloseStreams() }

func (p *Peer) closeP2P() {
	p.closeOnce.Do(func() {
		if p.node != nil {
			if err := p.node.Close(); err != nil {
				p.log.Warn("closing the libp2p host", "err", err)
			}
		}
	})
}

// PeerID is the peer's libp2p identity, "" without libp2p.
func (p *Peer) PeerID() string {
	if p.node == nil {
		return ""
	}
	return p.node.ID().String()
}

// P2PAddrs are the peer's libp2p addresses, each ending in /p2p/<id>:
// those it announces (public ones and relay circuits, unless
// AllowPrivate).
func (p *Peer) P2PAddrs() []string {
	if p.node == nil {
		return nil
	}
	return p.node.Addrs()
}

// P2PListenAddrs are the addresses the libp2p host listens on, announced
// or not.
func (p *Peer) P2PListenAddrs() []string {
	if p.node == nil {
		return nil
	}
	return p.node.ListenAddrs()
}

// NAT is how the peer is reached; false without libp2p.
func (p *Peer) NAT() (p2p.NATStatus, bool) {
	if p.node == nil {
		return p2p.NATStatus{}, false
	}
	return p.node.Status().NAT, true
}

// CID is what this peer writes as the observer of the events it polls.
func (p *Peer) CID() string { return p.cid }

// AddPeer makes the peer whose robots.shr is at shrURL known; adding a known
// peer does nothing. Discovery calls it for every peer it finds.
func (p *Peer) AddPeer(shrURL, source string) error {
	u, err := url.Parse(shrURL)
	if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
		return configErrorf("peer: %q is not an http(s) URL of a robots.shr", shrURL)
	}
	r, isNew := p.peers.add(shrURL, source, time.Now())
	if !isNew {
		return nil
	}
	if err := p.stores.Peers.SavePeer(r); err != nil {
		return fmt.Errorf("peer: save peer %s: %w", shrURL, err)
	}
	p.log.Info("peer added", "url", shrURL, "source", source)
	select {
	case p.kick <- struct{}{}:
	default:
	}
	return nil
}

// Rho is the current poll ratio.
func (p *Peer) Rho() float64 {
	p.ctlMu.Lock()
	defer p.ctlMu.Unlock()
	return p.rhoNow
}

// observe tells the controller about one operation and keeps the time
// spent at each value of rho.
func (p *Peer) observe(o rho.Outcome) {
	now := time.Now()
	o.End = now
	p.ctlMu.Lock()
	defer p.ctlMu.Unlock()
	p.ctl.Observe(o)
	if r := p.ctl.Rho(); r != p.rhoNow {
		p.accountRho(now)
		p.rhoNow = r
	}
}

// accountRho adds the time since the last change to the current rho;
// ctlMu held.
func (p *Peer) accountRho(now time.Time) {
	if !p.rhoFrom.IsZero() {
		p.timeAt[rhoBucket(p.rhoNow)] += now.Sub(p.rhoFrom)
	}
	p.rhoFrom = now
}

// rhoBucket rounds rho to 0.05, so a continuous controller keeps at most
// 21 buckets while the thesis's 0.10 and 0.90 keep their own.
func rhoBucket(r float64) string {
	return strconv.FormatFloat(float64(int(r*20+0.5))/20, 'f', 2, 64)
}

// Run crawls, merges and keeps its statistics until ctx ends, then lets
// in-flight operations finish (for up to Config.Grace), writes what they
// learnt and returns. The caller serves Handler and closes the stores.
func (p *Peer) Run(ctx context.Context) error {
	if err := p.crawler.Start(); err != nil {
		return err
	}
	p.ctlMu.Lock()
	p.rhoFrom = time.Now()
	p.ctlMu.Unlock()

	// Operations run under opCtx, which outlives ctx by the grace period.
	opCtx, cancelOps := context.WithCancel(context.Background())
	defer cancelOps()
	stopGrace := context.AfterFunc(ctx, func() { time.AfterFunc(p.cfg.Grace, cancelOps) })
	defer stopGrace()

	var wg sync.WaitGroup
	if p.node != nil {
		wg.Add(1)
		go func() {
			defer wg.Done()
			p.node.Run(ctx, p.cfg.Share)
		}()
	}
	for i := range p.cfg.Slots {
		wg.Add(1)
		go func() {
			defer wg.Done()
			p.slot(ctx, opCtx, rand.New(rand.NewPCG(uint64(time.Now().UnixNano()), uint64(i))))
		}()
	}
	wg.Add(1)
	go func() {
		defer wg.Done()
		p.sampler(ctx)
	}()
	wg.Add(1)
	go func() {
		defer wg.Done()
		p.retain(ctx)
	}()
	wg.Wait()
	p.ctlMu.Lock()
	p.accountRho(time.Now())
	p.ctlMu.Unlock()
	err := p.crawler.Stop()
	p.closeP2P()
	return err
}

// slot is one worker of algorithm 4.1: it draws poll with probability rho,
// else merge, and gives the slot to the other side when the drawn one has
// nothing due. Rho 0 never polls and rho 1 never merges.
func (p *Peer) slot(ctx, opCtx context.Context, rng *rand.Rand) {
	for ctx.Err() == nil {
		if p.budget != nil && p.budget.Wait(ctx) != nil {
			return
		}
		r := p.Rho()
		drawPoll := rng.Float64() < r
		var did bool
		var pollWait, mergeWait time.Duration
		if drawPoll {
			did, pollWait = p.tryPoll(opCtx, "poll")
			if !did && r < 1 {
				did, mergeWait = p.tryMerge(opCtx, "poll")
			}
		} else {
			did, mergeWait = p.tryMerge(opCtx, "merge")
			if !did && r > 0 {
				did, pollWait = p.tryPoll(opCtx, "merge")
			}
		}
		if did {
			continue
		}
		p.stats.idle.Add(1)
		wait := time.Second
		for _, w := range []time.Duration{pollWait, mergeWait} {
			if w > 0 && w < wait {
				wait = w
			}
		}
		t := time.NewTimer(wait)
		select {
		case <-ctx.Done():
		case <-p.crawler.Ready():
		case <-p.kick:
		case <-t.C:
		}
		t.Stop()
	}
}

// tryPoll polls the next due URL; drawn is the side the slot drew.
func (p *Peer) tryPoll(ctx context.Context, drawn string) (bool, time.Duration) {
	res, ok, wait := p.crawler.Poll(ctx)
	if !ok {
		return false, wait
	}
	p.stats.poll(drawn, res)
	if res.Checked {
		p.settleCheck(res)
	}
	ev := 0
	if res.Changed {
		ev = 1
	}
	p.observe(rho.Outcome{Events: ev, Cost: res.Cost})
	return true, 0
}

// addP2PPeer puts a community member found over libp2p in the peer table.
func (p *Peer) addP2PPeer(ai lpeer.AddrInfo, source string) {
	var addrs []string
	for _, a := range ai.Addrs {
		addrs = append(addrs, a.String())
	}
	r, isNew := p.peers.addP2P(p2pURL(ai.ID), ai.ID.String(), addrs, source, time.Now())
	for _, gone := range p.peers.takeEvicted() {
		if err := p.stores.Peers.DeletePeer(gone); err != nil {
			p.log.Error("delete an evicted peer row", "peer", gone, "err", err)
		}
	}
	if !isNew {
		return
	}
	if err := p.stores.Peers.SavePeer(r); err != nil {
		p.log.Error("save peer table", "err", err)
	}
	p.log.Info("community peer found", "peer_id", ai.ID, "source", source)
	select {
	case p.kick <- struct{}{}:
	default:
	}
}

// excludeRepository keeps the crawler away from a peer's day files: the
// repository its robots.shr at shrURL names, replacing what the same row
// named before. Only a repository on the host of the robots.shr is kept
// away from: a peer cannot take a site it does not serve out of polling
// by naming it.
func (p *Peer) excludeRepository(row, shrURL, repo string) {
	p.excludedMu.Lock()
	defer p.excludedMu.Unlock()
	if sameHost(shrURL, repo) {
		p.excluded[row] = repo
	} else {
		delete(p.excluded, row)
	}
	list := slices.Sorted(maps.Values(p.excluded))
	p.crawler.ExcludePrefixes(slices.Compact(list))
}

// sameHost says whether two absolute http(s) URLs have the same scheme
// and host (with port).
func sameHost(a, b string) bool {
	ua, err1 := url.Parse(a)
	ub, err2 := url.Parse(b)
	return err1 == nil && err2 == nil && ua.Host != "" && strings.EqualFold(ua.Scheme, ub.Scheme) && strings.EqualFold(ua.Host, ub.Host)
}

// Handler serves the share repository, /metrics, /api/status, /api/peers
// and the dashboard at /.
func (p *Peer) Handler() http.Handler {
	mux := http.NewServeMux()
	admin := p.AdminHandler()
	mux.Handle("GET /metrics", admin)
	mux.Handle("GET /api/", admin)
	mux.Handle("GET /{$}", admin)
	mux.Handle("/", p.share)
	return mux
}

// ShareHandler serves only what peers need: robots.shr and the share
// repository, for a public listener.
func (p *Peer) ShareHandler() http.Handler { return p.share }

// AdminHandler serves the dashboard, /api/status, /api/peers and /metrics,
// for the operator's listener. It answers only requests whose Host is an
// IP address or localhost: a web page on another site that points its
// own name at this address (DNS rebinding) is refused.
func (p *Peer) AdminHandler() http.Handler {
	mux := http.NewServeMux()
	mux.Handle("GET /metrics", p.metricsHandler())
	mux.HandleFunc("GET /api/status", p.serveStatus)
	mux.HandleFunc("GET /api/peers", p.servePeers)
	mux.HandleFunc("GET /{$}", serveDashboard)
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if !adminHost(r.Host) {
			http.Error(w, "this host name is not allowed here: use the address itself, or localhost", http.StatusForbidden)
			return
		}
		mux.ServeHTTP(w, r)
	})
}

// adminHost says whether a Host header may reach the admin pages: an IP
// literal or localhost, with or without a port.
func adminHost(h string) bool {
	if host, _, err := net.SplitHostPort(h); err == nil {
		h = host
	}
	h = strings.TrimSuffix(strings.TrimPrefix(h, "["), "]")
	if _, err := netip.ParseAddr(h); err == nil {
		return true
	}
	return strings.EqualFold(h, "localhost") || strings.EqualFold(h, "localhost.")
}

// emptyShare publishes nothing: the share repository of a peer that does
// not share (thesis algorithm 4.1, sharing = false). Its robots.shr is
// still served, so peers learn it is a cocrawl peer with nothing to give.
type emptyShare struct{ protocol.ShareStore }

func (e emptyShare) DayInfo(int64) (webevents.DayInfo, bool, error) {
	return webevents.DayInfo{}, false, nil
}

func (e emptyShare) ReadDay(int64, int64, func(int64, webevents.Event) error) error { return nil }

// FrontierSize loads the stored frontier, once, and returns how many URLs
// it holds.
func (p *Peer) FrontierSize() (int, error) { return p.crawler.Load() }

// storeFailed records a failure of this peer's own store.
func (p *Peer) storeFailed(err error, at time.Time) {
	p.storeMu.Lock()
	p.storeFailures++
	p.storeErr, p.storeFailedAt = err.Error(), at
	p.storeMu.Unlock()
	p.log.Error("the store failed", "err", err)
}

// retain applies the store's retention once at start and every hour:
// logs of days older than KeepDays and long-deleted URLs go.
func (p *Peer) retain(ctx context.Context) {
	webevents.Retain(ctx, p.stores.Events, p.cfg.KeepDays, time.Hour, func(from int64, x webevents.Expired, err error) {
		if err != nil {
			p.log.Error("retention", "err", err)
		} else if x.Days+x.URLs+x.Cursors > 0 {
			p.log.Info("retention", "days", x.Days, "records", x.Records, "deleted_urls", x.URLs, "cursors", x.Cursors, "kept_from_day", from)
		}
		if n, err := p.crawler.ForgetGone(time.Unix(webevents.DayStart(from), 0)); err != nil {
			p.log.Error("retention", "err", err)
		} else if n > 0 {
			p.log.Info("retention: gone URLs forgotten by the frontier", "urls", n)
		}
	})
}

// wake tells an idle slot that a merge may be due.
func (p *Peer) wake() {
	select {
	case p.kick <- struct{}{}:
	default:
	}
}

// NudgeGap is the shortest time between two merges from a peer that
// IndexNow pings can bring about.
const NudgeGap = time.Second

// indexNow hands an IndexNow submission to the crawler, which verifies
// its key before any URL counts.
func (p *Peer) indexNow(sub protocol.IndexNowSubmission) error {
	// A host left to a peer (a publisher's special prefix) is not polled:
	// its ping moves the next merge from that peer forward instead, at
	// most one a NudgeGap, so it needs no key.
	if len(sub.URLs) > 0 {
		if u, err := crawl.Normalize(nil, sub.URLs[0]); err == nil && p.peers.nudge(u, time.Now(), NudgeGap) {
			p.wake()
			return nil
		}
	}
	switch err := p.crawler.IndexNow(sub.Key, sub.KeyLocation, sub.URLs); {
	case errors.Is(err, crawl.ErrSubmissionScope):
		return protocol.ErrIndexNowScope
	case errors.Is(err, crawl.ErrSubmissionBusy):
		return protocol.ErrIndexNowBusy
	default:
		return err
	}
}

// withBudget gives a merge schedule the peer's request budget, unless it
// has one of its own.
func withBudget(s MergeSchedule, rate float64) MergeSchedule {
	if s.RequestRate == 0 {
		s.RequestRate = rate
	}
	return s
}
