package crawl

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"mime"
	"net"
	"net/http"
	"net/http/httptrace"
	"net/url"
	"strconv"
	"strings"
	"sync/atomic"
	"time"

	"golang.org/x/net/html/charset"

	"github.com/cocrawl/cocrawl/crawl/fingerprint"
	"github.com/cocrawl/cocrawl/internal/iolimit"
	"github.com/cocrawl/cocrawl/internal/netguard"
	"github.com/cocrawl/cocrawl/webevents"
)

// FetchConfig configures a Fetcher. Zero fields take the defaults named.
type FetchConfig struct {
	UserAgent    string        // full User-Agent; default "cocrawl/1.1"
	From         string        // the operator's e-mail, sent in From
	Timeout      time.Duration // one request, body included; default 30 s
	MaxBodyBytes int64         // bytes read of a body; default 4 MiB
	// MinSpeed aborts a transfer slower than this many bytes per second,
	// averaged from its start, once MinSpeedAfter has passed; default 1 KiB/s
	// after 10 s.
	MinSpeed      int64
	MinSpeedAfter time.Duration
	ConnsPerHost  int  // connections per host; default 1
	AllowPrivate  bool // allow loopback and private addresses
	// IdleConns is how many idle connections the fetcher keeps, all hosts
	// together; default a quarter of the process's open-file limit,
	// between 1,024 and 4,096 (defaultIdleConns).
	IdleConns int
	// KeepResponse keeps each page's request and response headers and the
	// body as read in its Result (Result.Raw), for an archive (Config.Archive).
	KeepResponse bool
}

func (c *FetchConfig) defaults() {
	if c.UserAgent == "" {
		c.UserAgent = "cocrawl/1.1"
	}
	if c.Timeout <= 0 {
		c.Timeout = 30 * time.Second
	}
	if c.MaxBodyBytes <= 0 {
		c.MaxBodyBytes = 4 << 20
	}
	if c.MinSpeed <= 0 {
		c.MinSpeed = 1 << 10
	}
	if c.MinSpeedAfter <= 0 {
		c.MinSpeedAfter = 10 * time.Second
	}
	if c.ConnsPerHost <= 0 {
		c.ConnsPerHost = 1
	}
	if c.IdleConns <= 0 {
		c.IdleConns = defaultIdleConns()
	}
}

// defaultIdleConns is a quarter of the open-file limit, between 1,024 and
// 4,096. The pool drops its least recently used connection when full, so
// a crawl going round more hosts than it holds opens a connection for
// nearly every request: at 3,000 hosts and a pool of 1,024, dialling was
// a twentieth of the crawler's CPU (docs/performance.md). An idle
// connection holds a file, two goroutines and two 4 KB buffers; the
// quarter leaves the rest of the files to the store and the peer.
func defaultIdleConns() int {
	return min(max(openFileLimit()/4, 1024), 4096)
}

// Fetcher makes the crawler's HTTP requests.
type Fetcher struct {
	cfg    FetchConfig
	pages  *http.Client // does not follow redirects: a Location is a new link
	robots *http.Client // follows up to 5 redirects (RFC 9309 section 2.3.1.2)
	docs   *http.Client // follows up to 5 redirects on the same host (FetchDoc)
	// noFingerprint leaves pages without a fingerprint: only for
	// BenchmarkCrawl's comparison.
	noFingerprint bool
	dials         atomic.Int64 // connections opened
}

// NewFetcher returns a fetcher. Its transport opens at most ConnsPerHost
// connections to a host.
func NewFetcher(cfg FetchConfig) *Fetcher {
	cfg.defaults()
	f := &Fetcher{cfg: cfg}
	dialer := netguard.Dialer(cfg.AllowPrivate, 10*time.Second)
	tr := &http.Transport{
		DialContext: func(ctx context.Context, network, addr string) (net.Conn, error) {
			conn, err := dialer.DialContext(ctx, network, addr)
			if err == nil {
				f.dials.Add(1)
			}
			return conn, err
		},
		MaxConnsPerHost:        cfg.ConnsPerHost,
		MaxIdleConnsPerHost:    cfg.ConnsPerHost,
		MaxIdleConns:           cfg.IdleConns,
		IdleConnTimeout:        60 * time.Second,
		TLSHandshakeTimeout:    10 * time.Second,
		ResponseHeaderTimeout:  cfg.Timeout,
		MaxResponseHeaderBytes: 64 << 10,
	}
	f.pages = &http.Client{Transport: tr, Timeout: cfg.Timeout,
		CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}
	f.robots = &http.Client{Transport: tr, Timeout: cfg.Timeout,
		CheckRedirect: func(_ *http.Request, via []*http.Request) error {
			if len(via) > 5 {
				return errors.New("crawl: more than 5 redirects")
			}
			return nil
		}}
	// A redirect to another host would be a request to a host whose
	// delay the crawler does not count for it.
	f.docs = &http.Client{Transport: tr, Timeout: cfg.Timeout,
		CheckRedirect: func(req *http.Request, via []*http.Request) error {
			switch {
			case len(via) > 5:
				return errors.New("crawl: more than 5 redirects")
			case req.URL.Scheme != via[0].URL.Scheme || req.URL.Host != via[0].URL.Host:
				return errors.New("crawl: a redirect to another host")
			}
			return nil
		}}
	return f
}

// Connections is how many connections the fetcher has opened.
func (f *Fetcher) Connections() int64 { return f.dials.Load() }

// Result is what one poll saw.
type Result struct {
	Status       int
	Err          error     // network error, timeout, body too slow; no status then
	LastModified time.Time // zero when absent or unparsable
	ETag         string
	LastModRaw   string // the Last-Modified header as sent, for If-Modified-Since
	Digest       string // "sha256:<hex>" of the body read (GET only)
	// Fingerprint is the simhash of an HTML page's visible text
	// (crawl/fingerprint); HasFingerprint says there is one (an HTML page
	// with words, read whole).
	Fingerprint    uint64
	HasFingerprint bool
	// Set by the crawler, not the fetcher (noise.go): the fingerprint
	// without the host's noise (HasLocal), and, when this crawler's last
	// look was made with the same mask, the one it found (HasHeldLocal);
	// WireNear is how far two records' fingerprints may be on this host,
	// LocalNear two of the Local ones.
	Local, HeldLocal       uint64
	HasLocal, HasHeldLocal bool
	WireNear, LocalNear    int
	page                   *fingerprint.Builder // the page's text, for the host's noise
	Size                   int64                // bytes of the body, or Content-Length for HEAD
	HTML                   bool                 // an HTML document
	Links                  Links                // for HTML bodies
	Location               string               // for redirects, resolved and normalised
	RetryAfter             time.Duration
	Truncated              bool // the body was longer than MaxBodyBytes
	Start, End             time.Time
	// Server is the address (IP:port) of the connection that served the
	// request: virtual hosts on one server share it (servers.go).
	Server string
	// Raw is the exchange as sent and read, when FetchConfig.KeepResponse.
	Raw *RawExchange
}

// RawExchange is a request and its response as the HTTP client sent and
// parsed them.
type RawExchange struct {
	Method    string
	ReqHeader http.Header
	Proto     string
	Header    http.Header
	Body      []byte
}

// ErrTooSlow is returned for a transfer under the minimum speed.
var ErrTooSlow = errors.New("crawl: transfer below the minimum speed")

// Fetch polls rawURL. With head it sends HEAD (only metadata is wanted);
// etag and lastMod, when set, make the request conditional.
func (f *Fetcher) Fetch(ctx context.Context, rawURL string, head bool, etag, lastMod string) (r Result) {
	r.Start = time.Now()
	defer func() { r.End = time.Now() }() // r is named: the deferred write reaches the caller
	method := http.MethodGet
	if head {
		method = http.MethodHead
	}
	req, err := http.NewRequestWithContext(traceServer(ctx, &r.Server), method, rawURL, nil)
	if err != nil {
		r.Err = err
		return r
	}
	f.headers(req)
	if etag != "" {
		req.Header.Set("If-None-Match", etag)
	}
	if lastMod != "" {
		req.Header.Set("If-Modified-Since", lastMod)
	}
	resp, err := f.pages.Do(req)
	if err != nil {
		r.Err = err
		return r
	}
	defer closeBody(resp.Body)
	r.Status = resp.StatusCode
	if f.cfg.KeepResponse {
		r.Raw = &RawExchange{Method: method, ReqHeader: req.Header.Clone(), Proto: resp.Proto, Header: resp.Header.Clone()}
	}
	params := readHeaders(resp.Header, &r)
	switch {
	case resp.StatusCode >= 300 && resp.StatusCode < 400 && resp.StatusCode != http.StatusNotModified:
		if loc := resp.Header.Get("Location"); loc != "" {
			base, _ := url.Parse(rawURL)
			r.Location, _ = Normalize(base, loc)
		}
		return r
	case resp.StatusCode != http.StatusOK:
		return r
	case head:
		r.Size = headSize(resp.ContentLength)
		return r
	}
	f.readBody(&r, resp, rawURL, params["charset"])
	return r
}

// readBody hashes the body and, for HTML, extracts its links in the same
// pass, within the size cap and the minimum speed.
func (f *Fetcher) readBody(r *Result, resp *http.Response, rawURL, cs string) {
	h := sha256.New()
	counted := &iolimit.MinSpeed{R: io.LimitReader(resp.Body, f.cfg.MaxBodyBytes+1), Start: r.Start, Min: f.cfg.MinSpeed, After: f.cfg.MinSpeedAfter, TooSlow: ErrTooSlow}
	var hashed io.Writer = h
	var kept *bytes.Buffer
	if r.Raw != nil {
		kept = &bytes.Buffer{}
		hashed = io.MultiWriter(h, kept)
	}
	body := io.TeeReader(counted, hashed)
	if r.HTML {
		base, _ := url.Parse(rawURL)
		var in io.Reader = body
		if cs != "" && !strings.EqualFold(cs, "utf-8") {
			if dec, err := charset.NewReader(body, "text/html; charset="+cs); err == nil {
				in = dec
			}
		}
		// A hostile token ends extraction early; the links found so far
		// are kept and the rest of the body is still hashed below.
		var fb *fingerprint.Builder
		if !f.noFingerprint {
			fb = &fingerprint.Builder{}
			if base != nil {
				fb.IgnoreWordsOf(base.RequestURI())
			}
		}
		var err error
		r.Links, err = extractPage(in, base, fb)
		if fb != nil {
			fb.Seal()
		}
		if err == nil && fb != nil {
			r.Fingerprint, r.HasFingerprint = fb.Sum()
			r.page = fb
		}
	}
	_, _ = io.Copy(io.Discard, body)
	if counted.Err() != nil {
		r.Err = counted.Err()
		return
	}
	r.Size = counted.N()
	if counted.N() > f.cfg.MaxBodyBytes {
		r.Truncated, r.Size = true, f.cfg.MaxBodyBytes
		r.HasFingerprint, r.page = false, nil // of part of a page: not comparable
	}
	if kept != nil {
		r.Raw.Body = kept.Bytes()[:min(int64(kept.Len()), f.cfg.MaxBodyBytes)]
	}
	r.Digest = "sha256:" + hex.EncodeToString(h.Sum(nil))
}

func (f *Fetcher) headers(req *http.Request) {
	req.Header.Set("User-Agent", f.cfg.UserAgent)
	if f.cfg.From != "" {
		req.Header.Set("From", f.cfg.From)
	}
}

// traceServer returns ctx with a trace that sets *addr to the address
// (IP:port) of the first connection a request through it gets.
func traceServer(ctx context.Context, addr *string) context.Context {
	return httptrace.WithClientTrace(ctx, &httptrace.ClientTrace{GotConn: func(info httptrace.GotConnInfo) {
		if a := info.Conn.RemoteAddr(); a != nil && *addr == "" {
			*addr = a.String()
		}
	}})
}

// FetchRobots fetches and interprets the robots.txt of a host (scheme://host)
// as RFC 9309 says: a 2xx body is parsed (its first 500 KiB); 4xx means no
// restrictions; 5xx, a network error or too many redirects mean complete
// disallow, and the second result says the fetch should be retried soon.
func (f *Fetcher) FetchRobots(ctx context.Context, hostURL, agent string) (rb *Robots, retry bool, status int, err error) {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, hostURL+"/robots.txt", nil)
	if err != nil {
		return DisallowAll(), true, 0, err
	}
	f.headers(req)
	resp, err := f.robots.Do(req)
	if err != nil {
		return DisallowAll(), true, 0, err
	}
	defer closeBody(resp.Body)
	switch {
	case resp.StatusCode >= 200 && resp.StatusCode < 300:
		body, err := io.ReadAll(io.LimitReader(resp.Body, MaxRobotsBytes))
		if err != nil {
			return DisallowAll(), true, resp.StatusCode, err
		}
		return ParseRobots(body, agent), false, resp.StatusCode, nil
	case resp.StatusCode >= 400 && resp.StatusCode < 500:
		return AllowAll(), false, resp.StatusCode, nil
	}
	return DisallowAll(), true, resp.StatusCode, fmt.Errorf("crawl: robots.txt: %s", resp.Status)
}

// MaxDocBytes bounds a document FetchDoc passes on, as sent (a sitemap's
// limit; its reader bounds it again after gzip).
const MaxDocBytes = 50 << 20

// FetchDoc GETs a document the crawler reads but does not record (a
// sitemap, a feed, an IndexNow key), following up to 5 redirects on its
// host, and hands its body to read while
// the response streams, within MaxDocBytes and the minimum speed. It
// returns the status and, for 429 and 503, the Retry-After asked.
func (f *Fetcher) FetchDoc(ctx context.Context, rawURL string, read func(io.Reader) error) (status int, retry time.Duration, err error) {
	start := time.Now()
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, rawURL, nil)
	if err != nil {
		return 0, 0, err
	}
	f.headers(req)
	resp, err := f.docs.Do(req)
	if err != nil {
		return 0, 0, err
	}
	defer closeBody(resp.Body)
	if resp.StatusCode != http.StatusOK {
		return resp.StatusCode, retryAfter(resp.Header.Get("Retry-After"), time.Now()), nil
	}
	body := &iolimit.MinSpeed{R: io.LimitReader(resp.Body, MaxDocBytes), Start: start, Min: f.cfg.MinSpeed, After: f.cfg.MinSpeedAfter, TooSlow: ErrTooSlow}
	err = read(body)
	if body.Err() != nil {
		err = body.Err()
	}
	return resp.StatusCode, 0, err
}

// maxDrainBytes is how much of a body the crawler does not want (a 404's
// page, a redirect's, the rest of a truncated page) it still reads before
// closing it: Go's client keeps a connection only when its response was
// read to the end, and without it a crawl of testweb opened five
// connections per host, not one (TestFetchKeepsTheConnection).
const maxDrainBytes = 16 << 10

// maxDrainTime bounds the read of what is left: a server that trickles a
// 404's body keeps a worker this long, then loses its connection.
const maxDrainTime = time.Second

// closeBody reads what is left of a short body, then closes it. A Close
// from the timer aborts a read in progress (net/http's response bodies
// allow it: the connection is dropped).
func closeBody(body io.ReadCloser) {
	t := time.AfterFunc(maxDrainTime, func() { body.Close() })
	_, _ = io.CopyN(io.Discard, body, maxDrainBytes)
	t.Stop()
	body.Close()
}

// retryAfter reads a Retry-After header: seconds or an HTTP date.
func retryAfter(v string, now time.Time) time.Duration {
	if v == "" {
		return 0
	}
	if s, err := strconv.Atoi(strings.TrimSpace(v)); err == nil && s >= 0 {
		return time.Duration(s) * time.Second
	}
	if t, err := http.ParseTime(v); err == nil && t.After(now) {
		return t.Sub(now)
	}
	return 0
}

// readHeaders fills r from a response's headers and returns the
// Content-Type's parameters. Validators go into events and back into
// request headers: a hostile one (a tab, 2,000 bytes) would make the event
// invalid or every later request fail, so it is dropped, and the page is
// judged by its digest.
func readHeaders(h http.Header, r *Result) map[string]string {
	// A copy: the header's value shares one string with the whole header
	// block, which a URL's state would keep alive as long as it lives.
	r.ETag = strings.Clone(cleanETag(h.Get("ETag")))
	if t, err := http.ParseTime(h.Get("Last-Modified")); err == nil {
		r.LastModified = t
		r.LastModRaw = t.UTC().Format(http.TimeFormat)
	}
	r.RetryAfter = retryAfter(h.Get("Retry-After"), time.Now())
	ct, params, _ := mime.ParseMediaType(h.Get("Content-Type"))
	r.HTML = ct == "text/html" || ct == "application/xhtml+xml"
	return params
}

// headSize is a HEAD answer's Content-Length as a page size: -1 (unknown)
// for none or one no page has.
func headSize(n int64) int64 {
	if n >= 0 && n <= webevents.MaxSize {
		return n
	}
	return -1
}

// cleanETag is the ETag header if an event and a request can carry it, ""
// if not: too long, or with control characters.
func cleanETag(v string) string {
	if len(v) > webevents.MaxExtraBytes || strings.ContainsFunc(v, func(r rune) bool { return r < 0x20 || r == 0x7f }) {
		return ""
	}
	return v
}
