package testweb

import (
	"cmp"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"hash"
	"hash/fnv"
	"html"
	"io"
	"math"
	"math/rand/v2"
	"net"
	"net/http"
	"sort"
	"strconv"
	"strings"
	"sync"
	"time"
)

// Config shapes a synthetic web. The zero value of a field means its default.
type Config struct {
	Hosts        int     // default 10
	PagesPerHost int     // pages at start, default 50
	LinksPerPage int     // same-host links per page, default 5
	CrossLinks   int     // links to other hosts per page, default 1
	UpdateRate   float64 // updates per live page per second (Poisson), default 0: static
	// RateSpread spreads the pages' update rates log-uniformly over this
	// many orders of magnitude around UpdateRate (its geometric centre): 3
	// gives rates from UpdateRate/31.6 to UpdateRate×31.6. 0: every page
	// changes at UpdateRate. Rates reports each page's true rate.
	RateSpread float64
	CreateRate float64 // page creations per host per second, default 0
	DeleteRate float64 // page deletions per host per second, default 0
	// NoLastModifiedEvery: every k-th host sends no Last-Modified, so a
	// crawler must detect changes by content. 0: every host sends it.
	NoLastModifiedEvery int
	// LastModifiedNow makes every host send the time of the response as
	// Last-Modified, as a dynamic site does (unless NoLastModifiedEvery
	// takes it away).
	LastModifiedNow bool
	// RobotsEvery: every k-th host has a robots.txt that disallows
	// /private/ (which its pages link to) and sets Crawl-delay.
	RobotsEvery int
	CrawlDelay  time.Duration // Crawl-delay of those hosts, whole seconds
	// RobotsDownHost makes the last host answer robots.txt with 503: a
	// polite crawler fetches nothing else from it.
	RobotsDownHost bool
	// Traps gives host 0 a calendar (/cal/N links to /cal/N+1), a path
	// that repeats itself (/loop/a/ links to "a/"), and a search page whose
	// results link to further searches (/search?q=N).
	Traps bool
	// Sitemap makes every host serve /sitemap.xml listing its live pages:
	// SitemapHonest with each page's last modification as <lastmod>,
	// SitemapLying with every page dated the moment of the request (a site
	// that stamps its build time). Hosts with a robots.txt name it there.
	Sitemap SitemapMode
	// SitemapLiars makes the first SitemapLiars hosts serve LiarSitemap
	// (default SitemapLying) where Sitemap is honest: one liar among
	// honest hosts.
	SitemapLiars int
	LiarSitemap  SitemapMode
	// Feed makes every host serve an Atom feed at /feed.xml of its ten
	// most recently changed pages (their modification as <updated>),
	// named by a <link rel="alternate"> on its home page.
	Feed bool
	// FeedAsSitemap serves the same feed, named by a robots.txt Sitemap:
	// line (sitemaps.org accepts RSS and Atom feeds as sitemaps) and not by
	// the home page.
	FeedAsSitemap bool
	Seed          uint64
	// PortBase, when set, puts host i on 127.0.0.1:PortBase+i, so
	// documented commands can name the seeds; 0 picks free ports.
	PortBase int
	// Clock lets tests drive time; nil means time.Now.
	Clock func() time.Time

	// Kinds, when set, makes the web behave like the real one (issue
	// "web-events that are true"): host i serves its pages as
	// Kinds[i%len(Kinds)], and answers for deleted and unknown paths in
	// the style Deletions[(i/len(Kinds))%len(Deletions)] (NotFound when
	// Deletions is empty). Unset: every host is Static, with 404s.
	Kinds     []PageKind
	Deletions []DeletionStyle
	// NoRequestLog keeps no request log (Host.Log returns none): a web
	// that serves for hours, as `cocrawl testweb` does, would otherwise
	// hold some 160 bytes per request, 1.7 GB at ten million, and its
	// collector would scan them all on every cycle.
	NoRequestLog bool
	// ServedDigests keeps the SHA-256 of every page body served with 200,
	// with its version (VersionOf), so a measurement can tell which version
	// a record holds by the digest it carries, where the pages carry no
	// validator and their dates have whole seconds (Dynamic pages changing
	// more often than once a second). About 100 bytes a response.
	ServedDigests bool
}

// PageKind is how a host serves its pages.
type PageKind int

const (
	// Static pages carry a real Last-Modified and a strong ETag.
	Static PageKind = iota
	// Dynamic pages carry no validators, and every response has template
	// noise: a "generated at" time, a CSRF token and a "related" box
	// whose links rotate.
	Dynamic
	// LastModifiedNow pages carry the time of the response as their
	// Last-Modified (and no ETag), as many CMSs send.
	LastModifiedNow
	// WeakETagPerResponse pages carry a weak ETag that differs on every
	// response (and no Last-Modified).
	WeakETagPerResponse
	// DynamicPlain pages are Dynamic pages whose template is made of plain
	// divs rather than header, footer, aside and form elements: nothing in
	// the markup says where the noise is.
	DynamicPlain
	// DynamicInline pages are DynamicPlain pages whose every paragraph
	// also ends with a count that differs on every response ("read 1234
	// times"): noise inside the content, where no mask can go.
	DynamicInline
)

func (k PageKind) String() string {
	return [...]string{"static", "dynamic", "lm-now", "etag-per-response", "dynamic-plain", "dynamic-inline"}[k]
}

// DeletionStyle is how a host answers for a path it does not have.
type DeletionStyle int

const (
	NotFound     DeletionStyle = iota // 404 (or 410)
	Soft404                           // 200 and a "page not found" page
	RedirectHome                      // 302 to the home page
)

func (d DeletionStyle) String() string {
	return [...]string{"404", "soft-404", "redirect-home"}[d]
}

func (c *Config) defaults() {
	if c.Hosts <= 0 {
		c.Hosts = 10
	}
	if c.PagesPerHost <= 0 {
		c.PagesPerHost = 50
	}
	if c.LinksPerPage <= 0 {
		c.LinksPerPage = 5
	}
	if c.CrossLinks < 0 {
		c.CrossLinks = 0
	} else if c.CrossLinks == 0 {
		c.CrossLinks = 1
	}
	if c.Clock == nil {
		c.Clock = time.Now
	}
}

// SitemapMode is what a host's sitemap says (Config.Sitemap).
type SitemapMode int

const (
	NoSitemap SitemapMode = iota
	SitemapHonest
	SitemapLying // every page dated the moment of the request
	// SitemapFrozen dates every page when the web started: lastmods that
	// never move (a sitemap written once), which say no page changed.
	SitemapFrozen
)

// Web is a running synthetic web: one HTTP server per host on 127.0.0.1.
type Web struct {
	cfg   Config
	start time.Time
	mu    sync.Mutex
	// digests: the version of each page body served (Config.ServedDigests).
	digestMu sync.Mutex
	digests  map[string]int
	rng      *rand.Rand
	hosts    []*Host
	stats    Stats
}

// Stats counts what the web did.
type Stats struct {
	Creates, Updates, Deletes int
}

// Host is one web server of the synthetic web.
type Host struct {
	web     *Web
	index   int
	URL     string // "http://127.0.0.1:PORT"
	srv     *http.Server
	ln      net.Listener
	pages   []*page
	noLM    bool
	robots  string // robots.txt body; "" means 404
	robotsD bool   // robots.txt answers 503

	homeVersion int
	homeLMD     time.Time
	kind        PageKind
	deletion    DeletionStyle
	served      uint64 // responses, for template noise

	logMu    sync.Mutex
	log      []Request
	inFlight int
	maxConc  int
}

// page is one page of a host. A scale web holds tens of millions, on the
// machine the crawler it serves runs on, so the fields are ordered to
// leave no padding and the last modification is Unix nanoseconds, not a
// time.Time: 96 bytes rather than 128, and the page cache the crawler's
// store needs is what the web leaves (docs/performance.md, issue 30).
type page struct {
	path    string
	version int
	lmdNano int64     // last modification (or deletion), Unix nanoseconds
	rate    float64   // updates per second when RateSpread is set; 0: UpdateRate
	links   []string  // the links of a page not made by newPage
	refs    []linkRef // the links of a page made by newPage, in order
	live    bool
	gone410 bool // answer 410 rather than 404 once deleted
}

// lmd is the page's last modification (or deletion).
func (p *page) lmd() time.Time { return time.Unix(0, p.lmdNano) }

func (p *page) setLMD(t time.Time) { p.lmdNano = t.UnixNano() }

// Request is one entry of a host's request log.
type Request struct {
	Path       string
	Start, End time.Time
	Status     int
	UserAgent  string
	// Version is the version of the page a 200 served (0: not a page).
	Version int
}

// Start builds the web and starts its servers.
func Start(cfg Config) (*Web, error) {
	cfg.defaults()
	w := &Web{cfg: cfg, rng: rand.New(rand.NewPCG(cfg.Seed, cfg.Seed^0x9e3779b97f4a7c15))}
	now := cfg.Clock()
	w.start = now
	for i := range cfg.Hosts {
		addr := "127.0.0.1:0"
		if cfg.PortBase > 0 {
			addr = fmt.Sprintf("127.0.0.1:%d", cfg.PortBase+i)
		}
		ln, err := net.Listen("tcp", addr)
		if err != nil {
			w.Close()
			return nil, err
		}
		h := &Host{web: w, index: i, ln: ln, URL: "http://" + ln.Addr().String()}
		h.noLM = cfg.NoLastModifiedEvery > 0 && i%cfg.NoLastModifiedEvery == cfg.NoLastModifiedEvery-1
		if cfg.RobotsEvery > 0 && i%cfg.RobotsEvery == cfg.RobotsEvery-1 {
			h.robots = "User-agent: *\nDisallow: /private/\n"
			if cfg.CrawlDelay > 0 {
				h.robots += fmt.Sprintf("Crawl-delay: %d\n", int(cfg.CrawlDelay.Seconds()))
			}
			if cfg.Sitemap != NoSitemap {
				h.robots += "Sitemap: " + h.URL + "/sitemap.xml\n"
			}
		}
		if cfg.FeedAsSitemap {
			if h.robots == "" {
				h.robots = "User-agent: *\nDisallow:\n"
			}
			h.robots += "Sitemap: " + h.URL + "/feed.xml\n"
		}
		h.robotsD = cfg.RobotsDownHost && i == cfg.Hosts-1
		if len(cfg.Kinds) > 0 {
			h.kind = cfg.Kinds[i%len(cfg.Kinds)]
			if len(cfg.Deletions) > 0 {
				h.deletion = cfg.Deletions[(i/len(cfg.Kinds))%len(cfg.Deletions)]
			}
		}
		h.homeVersion, h.homeLMD = 1, now
		h.srv = &http.Server{Handler: h, ReadHeaderTimeout: 5 * time.Second}
		w.hosts = append(w.hosts, h)
	}
	for _, h := range w.hosts {
		for range cfg.PagesPerHost {
			h.newPage(now.Add(-time.Duration(w.rng.IntN(86400*30)) * time.Second))
		}
		if h.robots != "" {
			h.pages = append(h.pages, &page{path: "/private/secret.html", live: true, version: 1, lmdNano: now.UnixNano(), links: []string{"/"}})
		}
		go h.srv.Serve(h.ln)
	}
	return w, nil
}

// newPage adds a live page; the caller holds w.mu or is in Start.
func (h *Host) newPage(lmd time.Time) *page {
	w := h.web
	p := &page{path: fmt.Sprintf("/p/%d.html", len(h.pages)), live: true, version: 1, lmdNano: lmd.UnixNano(), gone410: w.rng.IntN(2) == 0}
	if w.cfg.RateSpread > 0 { // drawn only then, so other webs stay as they were
		p.rate = w.cfg.UpdateRate * math.Pow(10, w.cfg.RateSpread*(w.rng.Float64()-0.5))
	}
	p.refs = make([]linkRef, 0, w.cfg.LinksPerPage+1+max(0, w.cfg.CrossLinks))
	for range w.cfg.LinksPerPage {
		p.refs = append(p.refs, sameHost(w.rng.IntN(len(h.pages)+1)))
	}
	if h.robots != "" {
		p.refs = append(p.refs, privateRef)
	}
	if len(w.hosts) > 1 {
		for range w.cfg.CrossLinks {
			o := w.rng.IntN(len(w.hosts))
			p.refs = append(p.refs, otherHost(o, w.rng.IntN(w.cfg.PagesPerHost)))
		}
	}
	h.pages = append(h.pages, p)
	return p
}

// linkRef is a link of a page made by newPage, in 8 bytes and no
// pointer: the page's index (/p/N.html) in the low 32 bits and, for a link
// to another host, that host's index plus one above them. With link
// strings a page took 378 bytes and 9 objects of the heap for the
// collector to mark, 218 and 3 with these (BenchmarkWebMemory): 9.5 GB
// for the scale runs' 25 million pages, beside the crawler it serves.
type linkRef uint64

// privateRef is the link to /private/secret.html.
const privateRef = linkRef(math.MaxUint64)

func sameHost(page int) linkRef        { return linkRef(uint32(page)) }
func otherHost(host, page int) linkRef { return linkRef(uint64(host+1)<<32 | uint64(uint32(page))) }

// appendLink appends the href of a link of a page of host h.
func (h *Host) appendLink(b []byte, r linkRef) []byte {
	if r == privateRef {
		return append(b, "/private/secret.html"...)
	}
	if host := int(r >> 32); host > 0 {
		b = append(b, h.web.hosts[host-1].URL...)
	}
	b = append(b, "/p/"...)
	b = strconv.AppendUint(b, uint64(uint32(r)), 10)
	return append(b, ".html"...)
}

// page finds a host's page by its path; w.mu held. A page made by newPage
// is /p/N.html at index N of h.pages, so it is found at once: a scan of a
// host's pages for every request was most of the web's CPU on hosts of
// thousands of pages, and held w.mu, which every host shares, all along.
func (h *Host) page(path string) *page {
	if n, ok := pageIndex(path); ok {
		if n < len(h.pages) && h.pages[n].path == path {
			return h.pages[n]
		}
		return nil // no other page is named /p/N.html
	}
	for _, p := range h.pages { // the one page made otherwise
		if p.path == path {
			return p
		}
	}
	return nil
}

// pageIndex reads N from "/p/N.html", N in canonical decimal form.
func pageIndex(path string) (int, bool) {
	digits, ok := strings.CutPrefix(path, "/p/")
	if !ok {
		return 0, false
	}
	digits, ok = strings.CutSuffix(digits, ".html")
	if !ok || digits == "" || len(digits) > 9 || digits[0] == '0' && len(digits) > 1 {
		return 0, false
	}
	n := 0
	for _, c := range []byte(digits) {
		if c < '0' || c > '9' {
			return 0, false
		}
		n = n*10 + int(c-'0')
	}
	return n, true
}

// Close stops every server.
func (w *Web) Close() {
	for _, h := range w.hosts {
		if h.srv != nil {
			h.srv.Close()
		} else if h.ln != nil {
			h.ln.Close()
		}
	}
}

// Hosts returns the hosts in order.
func (w *Web) Hosts() []*Host { return w.hosts }

// Seeds returns the home page of every host.
func (w *Web) Seeds() []string {
	s := make([]string, len(w.hosts))
	for i, h := range w.hosts {
		s[i] = h.URL + "/"
	}
	return s
}

// Stats returns the counts of changes made so far.
func (w *Web) Stats() Stats {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.stats
}

// PageState is the ground truth of one URL.
type PageState struct {
	Live    bool
	LMD     int64 // Unix seconds of the last modification or deletion
	Version int
	ETag    string
}

// Truth returns the state of every page that exists or existed, by URL.
// Home pages are included: they change whenever a page of the host is
// created or deleted.
func (w *Web) Truth() map[string]PageState {
	w.mu.Lock()
	defer w.mu.Unlock()
	t := make(map[string]PageState)
	for _, h := range w.hosts {
		for _, p := range h.pages {
			t[h.URL+p.path] = PageState{Live: p.live, LMD: p.lmd().Unix(), Version: p.version, ETag: etag(p)}
		}
		hp := h.home()
		t[h.URL+"/"] = PageState{Live: true, LMD: hp.lmd().Unix(), Version: hp.version, ETag: etag(hp)}
	}
	return t
}

func etag(p *page) string { return `"v` + strconv.Itoa(p.version) + `"` }

// Update modifies the page at url now; false if there is no live page there.
func (w *Web) Update(url string) bool {
	w.mu.Lock()
	defer w.mu.Unlock()
	_, p := w.find(url)
	if p == nil || !p.live {
		return false
	}
	p.version++
	p.setLMD(w.cfg.Clock())
	w.stats.Updates++
	return true
}

// Delete removes the page at url now.
func (w *Web) Delete(url string) bool {
	w.mu.Lock()
	defer w.mu.Unlock()
	h, p := w.find(url)
	if p == nil || !p.live {
		return false
	}
	p.live = false
	p.setLMD(w.cfg.Clock())
	h.homeVersion++
	h.homeLMD = p.lmd()
	w.stats.Deletes++
	return true
}

// Create adds a page to host i now and returns its URL. The host's home
// page links to it from then on.
func (w *Web) Create(i int) string {
	w.mu.Lock()
	defer w.mu.Unlock()
	h := w.hosts[i%len(w.hosts)]
	p := h.newPage(w.cfg.Clock())
	h.homeVersion++
	h.homeLMD = p.lmd()
	w.stats.Creates++
	return h.URL + p.path
}

func (w *Web) find(url string) (*Host, *page) {
	for _, h := range w.hosts {
		if strings.HasPrefix(url, h.URL+"/") {
			return h, h.page(url[len(h.URL):])
		}
	}
	return nil, nil
}

// Run changes the web by Poisson processes until ctx ends: updates of live
// pages, creations and deletions per host, at the configured rates.
func (w *Web) Run(ctx context.Context) {
	// Events are due at absolute times: a loop that slept each wait in
	// turn would fall behind its rates by the timer's overhead, which at
	// hundreds of events a second is a third of them.
	next := time.Now()
	for {
		w.mu.Lock()
		live := 0
		for _, h := range w.hosts {
			for _, p := range h.pages {
				if p.live {
					live++
				}
			}
		}
		n := float64(len(w.hosts))
		up, cr, de := float64(live)*w.cfg.UpdateRate, n*w.cfg.CreateRate, n*w.cfg.DeleteRate
		if w.cfg.RateSpread > 0 {
			up = w.totalRate()
		}
		total := up + cr + de
		var wait time.Duration
		if total > 0 {
			wait = time.Duration(w.rng.ExpFloat64() / total * float64(time.Second))
		}
		pick := w.rng.Float64() * total
		target := w.rng.IntN(max(live, 1))
		updated := ""
		if w.cfg.RateSpread > 0 && pick < up {
			updated = w.weightedLive(pick) // an update falls on a page by its rate
		}
		host := w.rng.IntN(len(w.hosts))
		w.mu.Unlock()
		if total == 0 {
			<-ctx.Done()
			return
		}
		// Behind by more than a second (a stalled machine): catch up no
		// further, rather than in a burst.
		next = later(next.Add(wait), time.Now().Add(-time.Second))
		if d := time.Until(next); d > 0 {
			select {
			case <-ctx.Done():
				return
			case <-time.After(d):
			}
		} else if ctx.Err() != nil {
			return
		}
		switch {
		case pick < up && updated != "":
			w.Update(updated)
		case pick < up:
			if u := w.nthLive(target); u != "" {
				w.Update(u)
			}
		case pick < up+cr:
			w.Create(host)
		default:
			if u := w.nthLive(target); u != "" {
				w.Delete(u)
			}
		}
	}
}

// pageRate is a page's update rate.
func (w *Web) pageRate(p *page) float64 {
	if p.rate > 0 {
		return p.rate
	}
	return w.cfg.UpdateRate
}

// totalRate sums the update rates of the live pages; w.mu held.
func (w *Web) totalRate() float64 {
	s := 0.0
	for _, h := range w.hosts {
		for _, p := range h.pages {
			if p.live {
				s += w.pageRate(p)
			}
		}
	}
	return s
}

// weightedLive returns the live page where the running sum of rates
// passes x; w.mu held.
func (w *Web) weightedLive(x float64) string {
	last := ""
	for _, h := range w.hosts {
		for _, p := range h.pages {
			if !p.live {
				continue
			}
			last = h.URL + p.path
			if x -= w.pageRate(p); x < 0 {
				return last
			}
		}
	}
	return last
}

// Rates returns the update rate (per second) of every live page, by URL:
// the truth a crawler's change-rate estimates are measured against.
func (w *Web) Rates() map[string]float64 {
	w.mu.Lock()
	defer w.mu.Unlock()
	out := map[string]float64{}
	for _, h := range w.hosts {
		for _, p := range h.pages {
			if p.live {
				out[h.URL+p.path] = w.pageRate(p)
			}
		}
	}
	return out
}

func (w *Web) nthLive(n int) string {
	w.mu.Lock()
	defer w.mu.Unlock()
	for _, h := range w.hosts {
		for _, p := range h.pages {
			if p.live {
				if n == 0 {
					return h.URL + p.path
				}
				n--
			}
		}
	}
	return ""
}

// home describes the host's index page: a listing of its live pages. It
// changes (a new version, a new date) whenever a page is created or deleted.
func (h *Host) home() *page {
	hp := &page{path: "/", live: true, version: h.homeVersion, lmdNano: h.homeLMD.UnixNano()}
	for _, p := range h.pages {
		if p.live && p.path != "/private/secret.html" {
			hp.links = append(hp.links, p.path)
		}
	}
	if h.web.cfg.Traps && h.index == 0 {
		hp.links = append(hp.links, "/cal/0", "/loop/a/", "/search?q=0")
	}
	return hp
}

// Log returns a copy of the host's request log.
func (h *Host) Log() []Request {
	h.logMu.Lock()
	defer h.logMu.Unlock()
	return append([]Request(nil), h.log...)
}

// MaxConcurrent is the most requests the host ever served at once.
func (h *Host) MaxConcurrent() int {
	h.logMu.Lock()
	defer h.logMu.Unlock()
	return h.maxConc
}

// SendsLastModified reports whether the host sends Last-Modified.
func (h *Host) SendsLastModified() bool { return !h.noLM }

// Kind is how the host serves its pages, and Deletion how it answers for
// a path it does not have (Config.Kinds).
func (h *Host) Kind() PageKind          { return h.kind }
func (h *Host) Deletion() DeletionStyle { return h.deletion }

// HostOf returns the host serving url, or nil.
func (w *Web) HostOf(url string) *Host {
	for _, h := range w.hosts {
		if strings.HasPrefix(url, h.URL+"/") {
			return h
		}
	}
	return nil
}

// Robots returns the host's robots.txt body ("" when it has none).
func (h *Host) Robots() string { return h.robots }

func (h *Host) ServeHTTP(rw http.ResponseWriter, r *http.Request) {
	start := h.web.cfg.Clock()
	h.logMu.Lock()
	h.inFlight++
	h.maxConc = max(h.maxConc, h.inFlight)
	h.logMu.Unlock()
	sw := &statusWriter{ResponseWriter: rw, code: 200}
	if h.web.cfg.ServedDigests {
		sw.hash = sha256.New()
	}
	h.serve(sw, r)
	if sw.hash != nil && sw.code == 200 && sw.version > 0 {
		h.web.noteDigest("sha256:"+hex.EncodeToString(sw.hash.Sum(nil)), sw.version)
	}
	h.logMu.Lock()
	h.inFlight--
	if h.web.cfg.NoRequestLog {
		h.logMu.Unlock()
		return
	}
	h.log = append(h.log, Request{Path: r.URL.RequestURI(), Start: start, End: h.web.cfg.Clock(), Status: sw.code, UserAgent: r.UserAgent(), Version: sw.version})
	h.logMu.Unlock()
}

func (h *Host) serve(w http.ResponseWriter, r *http.Request) {
	path := r.URL.Path
	switch {
	case path == "/robots.txt":
		if h.robotsD {
			http.Error(w, "robots.txt unavailable", http.StatusServiceUnavailable)
			return
		}
		if h.robots == "" {
			http.NotFound(w, r)
			return
		}
		w.Header().Set("Content-Type", "text/plain")
		fmt.Fprint(w, h.robots)
		return
	case h.web.cfg.Traps && h.index == 0 && h.trap(w, r):
		return
	case path == "/sitemap.xml" && h.web.cfg.Sitemap != NoSitemap:
		h.serveSitemap(w)
		return
	case path == "/feed.xml" && (h.web.cfg.Feed || h.web.cfg.FeedAsSitemap):
		h.serveFeed(w)
		return
	}
	h.web.mu.Lock()
	var p *page
	if path == "/" {
		p = h.home()
	} else {
		if q := h.page(path); q != nil {
			cp := *q
			p = &cp
		}
	}
	h.web.mu.Unlock()
	if p == nil || !p.live {
		h.serveMissing(w, r, p)
		return
	}
	h.web.mu.Lock()
	h.served++
	n := h.served
	var related []string
	if (h.kind == Dynamic || h.kind == DynamicPlain || h.kind == DynamicInline) && len(h.pages) > 0 {
		for i := range 4 {
			related = append(related, h.pages[(n*7+uint64(i)*13)%uint64(len(h.pages))].path)
		}
	}
	h.web.mu.Unlock()
	tag := etag(p)
	switch h.kind {
	case Dynamic, DynamicPlain, DynamicInline:
		tag = ""
	case LastModifiedNow:
		tag = ""
		w.Header().Set("Last-Modified", time.Now().UTC().Format(http.TimeFormat))
	case WeakETagPerResponse:
		tag = fmt.Sprintf(`W/"%x-%d"`, n*0x9e3779b97f4a7c15, n)
		w.Header().Set("ETag", tag)
	default:
		w.Header().Set("ETag", tag)
		switch {
		case h.noLM:
		case h.web.cfg.LastModifiedNow:
			w.Header().Set("Last-Modified", time.Now().UTC().Format(http.TimeFormat))
		default:
			w.Header().Set("Last-Modified", p.lmd().UTC().Format(http.TimeFormat))
		}
		if inm := r.Header.Get("If-None-Match"); inm != "" && inm == tag {
			w.WriteHeader(http.StatusNotModified)
			return
		}
		if ims := r.Header.Get("If-None-Match"); ims == "" && !h.noLM && !h.web.cfg.LastModifiedNow {
			if t, err := http.ParseTime(r.Header.Get("If-Modified-Since")); err == nil && !p.lmd().Truncate(time.Second).After(t) {
				w.WriteHeader(http.StatusNotModified)
				return
			}
		}
	}
	w.Header().Set("Content-Type", "text/html; charset=utf-8")
	if sw, ok := w.(*statusWriter); ok {
		sw.version = p.version
	}
	feed := ""
	if p.path == "/" && h.web.cfg.Feed {
		feed = `<link rel="alternate" type="application/atom+xml" href="/feed.xml">`
	}
	h.pageHead(w, h.URL+p.path, feed)
	fmt.Fprintf(w, "<main><h1>Page %s, version %d</h1>\n", p.path, p.version)
	for k := range paragraphs {
		text := paragraph(h.index, p.path, k, (p.version+paragraphs-1-k)/paragraphs)
		if h.kind == DynamicInline {
			text += fmt.Sprintf(" (read %d times)", 1000+n*3+uint64(k))
		}
		fmt.Fprintf(w, "<p>%s</p>\n", text)
	}
	fmt.Fprint(w, "<ul>\n")
	for _, l := range p.links {
		fmt.Fprintf(w, "<li><a href=\"%s\">%s</a></li>\n", l, l)
	}
	var href []byte
	for _, r := range p.refs {
		href = h.appendLink(href[:0], r)
		fmt.Fprintf(w, "<li><a href=\"%s\">%s</a></li>\n", href, href)
	}
	fmt.Fprint(w, "</ul></main>\n")
	h.pageFoot(w, n, related)
}

// paragraphs is how many paragraphs of text a page has: an update
// rewrites one of them, a third of the page's text.
const paragraphs = 3

// serveMissing answers for a path the host does not have, or no longer
// has, in its deletion style.
func (h *Host) serveMissing(w http.ResponseWriter, r *http.Request, p *page) {
	switch h.deletion {
	case Soft404:
		h.web.mu.Lock()
		h.served++
		n := h.served
		h.web.mu.Unlock()
		w.Header().Set("Content-Type", "text/html; charset=utf-8")
		h.pageHead(w, "Not found", "")
		fmt.Fprintf(w, "<main><h1>Page not found</h1>\n<p>Sorry, there is no page at %s on this site. It may have been moved or deleted. Try the home page, or search the site for what you were looking for.</p></main>\n", html.EscapeString(r.URL.Path))
		h.pageFoot(w, n, nil)
	case RedirectHome:
		http.Redirect(w, r, "/", http.StatusFound)
	default:
		if p != nil && p.gone410 {
			http.Error(w, "gone", http.StatusGone)
			return
		}
		http.NotFound(w, r)
	}
}

// pageHead writes a page's head and the site's header, the same on every
// page of the host.
func (h *Host) pageHead(w io.Writer, title, extra string) {
	fmt.Fprintf(w, "<!doctype html><html><head><title>%s</title>%s</head><body>\n", html.EscapeString(title), extra)
	if h.kind == DynamicPlain || h.kind == DynamicInline {
		fmt.Fprintf(w, "<div class=\"top\"><a href=\"/\">Site %d</a> <a href=\"/\">Home</a> <a href=\"/p/0.html\">About</a></div>\n", h.index)
		return
	}
	fmt.Fprintf(w, "<header><a href=\"/\">Site %d</a> <nav><a href=\"/\">Home</a> <a href=\"/p/0.html\">About</a></nav></header>\n", h.index)
}

// pageFoot writes the site's footer; a Dynamic host adds its template
// noise: the related box (links that rotate), a CSRF token and the time
// the page was generated.
func (h *Host) pageFoot(w io.Writer, n uint64, related []string) {
	if h.kind == DynamicPlain || h.kind == DynamicInline {
		fmt.Fprint(w, "<div class=\"related\"><h2>Related</h2><ul>\n")
		for _, l := range related {
			fmt.Fprintf(w, "<li><a href=\"%s\">See also %s</a></li>\n", l, strings.TrimSuffix(strings.TrimPrefix(l, "/p/"), ".html"))
		}
		fmt.Fprint(w, "</ul></div>\n")
		fmt.Fprintf(w, "<div class=\"comment\"><input type=\"hidden\" name=\"csrf\" value=\"%016x\"></div>\n", n*0x2545f4914f6cdd1d)
		fmt.Fprintf(w, "<div class=\"meta\"><p>Site %d. Page generated at %s in %d ms for visitor %d.</p></div>\n", h.index, time.Now().UTC().Format(time.RFC3339Nano), 3+n%40, n)
	} else if h.kind == Dynamic {
		fmt.Fprint(w, "<aside class=\"related\"><h2>Related</h2><ul>\n")
		for _, l := range related {
			fmt.Fprintf(w, "<li><a href=\"%s\">See also %s</a></li>\n", l, strings.TrimSuffix(strings.TrimPrefix(l, "/p/"), ".html"))
		}
		fmt.Fprint(w, "</ul></aside>\n")
		fmt.Fprintf(w, "<form method=\"post\" action=\"/comment\"><input type=\"hidden\" name=\"csrf\" value=\"%016x\"><button>Comment</button></form>\n", n*0x2545f4914f6cdd1d)
		fmt.Fprintf(w, "<footer><p>Site %d. Page generated at %s in %d ms for visitor %d.</p></footer>\n", h.index, time.Now().UTC().Format(time.RFC3339Nano), 3+n%40, n)
	} else {
		fmt.Fprintf(w, "<footer><p>Site %d.</p></footer>\n", h.index)
	}
	fmt.Fprint(w, "</body></html>\n")
}

// words is the vocabulary of the pages' text.
var words = strings.Fields(`the of and a to in is was for on that with as by at from it his
an were are which this be or has had first one their its new after but who not they have her
she two been other when there all during into school also time may year city out more most
only over where three many government state world people between some city river north
south east west part under years later area system film music team series park house water
market station village church history war life family house report council center early
season work national public line life street building local research book power field
music album game road centre group years land company party development known based`)

// paragraph is the text of a page's k-th paragraph in its v-th version:
// forty words, the same for every response of that version.
func paragraph(host int, path string, k, v int) string {
	f := fnv.New64a()
	fmt.Fprintf(f, "%d %s %d %d", host, path, k, v)
	rng := rand.New(rand.NewPCG(f.Sum64(), 7))
	out := make([]string, 40)
	for i := range out {
		out[i] = words[rng.IntN(len(words))]
	}
	return strings.Join(out, " ")
}

func (h *Host) trap(w http.ResponseWriter, r *http.Request) bool {
	path := r.URL.Path
	switch {
	case strings.HasPrefix(path, "/cal/"):
		n, _ := strconv.Atoi(path[len("/cal/"):])
		fmt.Fprintf(w, `<html><body>Day %d <a href="/cal/%d">next day</a></body></html>`, n, n+1)
	case strings.HasPrefix(path, "/loop/"):
		fmt.Fprint(w, `<html><body><a href="a/">deeper</a></body></html>`)
	case path == "/search":
		n, _ := strconv.Atoi(r.URL.Query().Get("q"))
		fmt.Fprintf(w, `<html><body><a href="/search?q=%d">more results</a></body></html>`, n+1)
	default:
		return false
	}
	return true
}

type statusWriter struct {
	http.ResponseWriter
	code    int
	version int       // of the page served, for the log
	hash    hash.Hash // of the body, with Config.ServedDigests
}

func (s *statusWriter) Write(b []byte) (int, error) {
	if s.hash != nil {
		s.hash.Write(b)
	}
	return s.ResponseWriter.Write(b)
}

func (w *Web) noteDigest(digest string, version int) {
	w.digestMu.Lock()
	defer w.digestMu.Unlock()
	if w.digests == nil {
		w.digests = map[string]int{}
	}
	w.digests[digest] = version
}

// VersionOf is the version of the page whose body, served by this web,
// had digest ("sha256:<hex>", as a crawler's records carry it); ok is
// false for a body it did not serve, or without Config.ServedDigests. A
// body names its page's path, so a digest is one page's.
func (w *Web) VersionOf(digest string) (version int, ok bool) {
	w.digestMu.Lock()
	defer w.digestMu.Unlock()
	version, ok = w.digests[digest]
	return version, ok
}

func (s *statusWriter) WriteHeader(c int) {
	s.code = c
	s.ResponseWriter.WriteHeader(c)
}

// LiveURLs returns the URLs of every live page, sorted.
func (w *Web) LiveURLs() []string {
	var out []string
	for u, s := range w.Truth() {
		if s.Live {
			out = append(out, u)
		}
	}
	sort.Strings(out)
	return out
}

func later(a, b time.Time) time.Time {
	if a.After(b) {
		return a
	}
	return b
}

// sitemapMode is what the host's sitemap says.
func (h *Host) sitemapMode() SitemapMode {
	c := &h.web.cfg
	if c.Sitemap != NoSitemap && h.index < c.SitemapLiars {
		return cmp.Or(c.LiarSitemap, SitemapLying)
	}
	return c.Sitemap
}

// serveSitemap lists the host's live pages (Config.Sitemap).
func (h *Host) serveSitemap(w http.ResponseWriter) {
	now := h.web.cfg.Clock().UTC()
	h.web.mu.Lock()
	var b strings.Builder
	b.WriteString(`<?xml version="1.0" encoding="UTF-8"?>` + "\n" + `<urlset xmlns="http://www.sitemaps.org/schemas/sitemap/0.9">` + "\n")
	for _, p := range h.pages {
		if !p.live {
			continue
		}
		lastmod := p.lmd().UTC()
		switch h.sitemapMode() {
		case SitemapLying:
			lastmod = now
		case SitemapFrozen:
			lastmod = h.web.start.UTC()
		}
		fmt.Fprintf(&b, "<url><loc>%s%s</loc><lastmod>%s</lastmod></url>\n", h.URL, p.path, lastmod.Format(time.RFC3339))
	}
	h.web.mu.Unlock()
	b.WriteString("</urlset>\n")
	w.Header().Set("Content-Type", "application/xml")
	fmt.Fprint(w, b.String())
}

// serveFeed is an Atom feed of the host's ten most recently changed live
// pages (Config.Feed).
func (h *Host) serveFeed(w http.ResponseWriter) {
	h.web.mu.Lock()
	var recent []*page
	for _, p := range h.pages {
		if p.live {
			recent = append(recent, p)
		}
	}
	sort.Slice(recent, func(i, j int) bool { return recent[i].lmd().After(recent[j].lmd()) })
	recent = recent[:min(10, len(recent))]
	var b strings.Builder
	b.WriteString(`<?xml version="1.0" encoding="utf-8"?>` + "\n" + `<feed xmlns="http://www.w3.org/2005/Atom">` + "\n")
	fmt.Fprintf(&b, "<title>%s</title><id>%s/</id>", h.URL, h.URL)
	if len(recent) > 0 {
		fmt.Fprintf(&b, "<updated>%s</updated>\n", recent[0].lmd().UTC().Format(time.RFC3339))
	}
	for _, p := range recent {
		fmt.Fprintf(&b, "<entry><title>%s</title><id>%s%s</id><link href=\"%s%s\"/><updated>%s</updated></entry>\n",
			p.path, h.URL, p.path, h.URL, p.path, p.lmd().UTC().Format(time.RFC3339))
	}
	h.web.mu.Unlock()
	b.WriteString("</feed>\n")
	w.Header().Set("Content-Type", "application/atom+xml")
	fmt.Fprint(w, b.String())
}
