package crawl

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"net/url"
	"regexp"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"golang.org/x/net/publicsuffix"

	"github.com/cocrawl/cocrawl/webevents"
)

// Store is what the crawler needs of a peer's web-event store.
type Store interface {
	Get(url string) (webevents.Event, bool, error)
	Record(events []webevents.Event) error
}

// Config configures a Crawler. Zero fields take the defaults named, which
// are polite for the real web.
type Config struct {
	Seeds []string
	CID   string // "host:port Moniker" written in every event; required
	Agent string // robots.txt product token; default "cocrawl"
	Fetch FetchConfig

	Workers       int           // fetches in flight across hosts; default 8
	MinDelay      time.Duration // per-host delay floor; default 1 s; 0 allowed with DelaySet
	DelaySet      bool          // MinDelay was set explicitly (so 0 means 0)
	MaxCrawlDelay time.Duration // cap on robots.txt Crawl-delay; default 30 s
	DelayFactor   float64       // delay at least this times the last download time; default 2
	BackoffBase   time.Duration // first backoff after 429/5xx/errors; default 30 s
	BackoffMax    time.Duration // default 1 h
	RobotsTTL     time.Duration // how long a robots.txt is cached; default (and at most) 24 h
	RobotsRetry   time.Duration // retry after a 5xx robots.txt; default 10 min

	RevisitMin time.Duration // adaptive revisit interval bounds; default 1 h
	RevisitMax time.Duration // default 30 days

	// Scope: "host" (the seeds' hosts, default), "domain" (their registrable
	// domains) or "all"; Include and Exclude are regular expressions that a
	// URL must match (when Include is set) and must not match.
	Scope   string
	Include []string
	Exclude []string

	// Traps (Castillo, chapter 5 and appendix A): depth from a seed for
	// static and dynamic (with a query) pages, URLs per host, URL length,
	// and a limit on a path segment repeated.
	MaxStaticDepth  int // default 15
	MaxDynamicDepth int // default 5
	MaxURLsPerHost  int // default 100,000
	MaxURLLength    int // default 2,048
	MaxSegmentRepet int // default 3

	Logger *slog.Logger
}

func (c *Config) defaults() error {
	if c.CID == "" {
		return errors.New("crawl: a CID (\"host:port Moniker\") is required")
	}
	if c.Agent == "" {
		c.Agent = "cocrawl"
	}
	def := func(d *time.Duration, v time.Duration) {
		if *d <= 0 {
			*d = v
		}
	}
	if !c.DelaySet {
		def(&c.MinDelay, time.Second)
	}
	def(&c.MaxCrawlDelay, 30*time.Second)
	def(&c.BackoffBase, 30*time.Second)
	def(&c.BackoffMax, time.Hour)
	def(&c.RobotsRetry, 10*time.Minute)
	def(&c.RevisitMin, time.Hour)
	def(&c.RevisitMax, 30*24*time.Hour)
	if c.RobotsTTL <= 0 || c.RobotsTTL > 24*time.Hour {
		c.RobotsTTL = 24 * time.Hour
	}
	if c.RevisitMax < c.RevisitMin {
		return fmt.Errorf("crawl: revisit max %v is below revisit min %v", c.RevisitMax, c.RevisitMin)
	}
	if c.Workers <= 0 {
		c.Workers = 8
	}
	if c.DelayFactor <= 0 {
		c.DelayFactor = 2
	}
	ints := []struct {
		p *int
		v int
	}{{&c.MaxStaticDepth, 15}, {&c.MaxDynamicDepth, 5}, {&c.MaxURLsPerHost, 100000}, {&c.MaxURLLength, 2048}, {&c.MaxSegmentRepet, 3}}
	for _, x := range ints {
		if *x.p <= 0 {
			*x.p = x.v
		}
	}
	switch c.Scope {
	case "":
		c.Scope = "host"
	case "host", "domain", "all":
	default:
		return fmt.Errorf("crawl: scope %q is not host, domain or all", c.Scope)
	}
	if c.Logger == nil {
		c.Logger = slog.Default()
	}
	return nil
}

// Stats counts what a crawler did. Read it with Crawler.Stats.
type Stats struct {
	Polls, NotModified, Created, Updated, Deleted int64
	Errors                                        map[string]int64 // by kind: network, timeout, 4xx, 5xx, 429, slow
	RobotsExcluded, RobotsFetches                 int64
	Discovered, Skipped                           int64 // URLs added, links refused by scope or trap rules
	Delegated                                     int64 // polls left to a peer whose special set holds the URL
	Known                                         int
}

// Crawler is the polling crawler.
type Crawler struct {
	cfg     Config
	store   Store
	fstore  FrontierStore
	fetcher *Fetcher
	include []*regexp.Regexp
	exclude []*regexp.Regexp
	scope   map[string]bool // hosts or registrable domains of the seeds

	mu        sync.Mutex
	f         *frontier
	loaded    bool // the stored frontier is in f
	wake      chan struct{}
	excluded  []string // URL prefixes never polled: peers' share repositories
	delegated []string // URL prefixes left to peers (their special sets)
	started   bool

	persist     chan persistItem
	persistDone chan error

	polls, notModified, created, updated, deleted atomic.Int64
	robotsExcluded, robotsFetches                 atomic.Int64
	discovered, skipped, delegatedSkips           atomic.Int64
	errMu                                         sync.Mutex
	errs                                          map[string]int64
}

type persistItem struct {
	event *webevents.Event
	state *URLState
}

// New returns a crawler; Run starts it.
func New(cfg Config, store Store, fs FrontierStore) (*Crawler, error) {
	if err := cfg.defaults(); err != nil {
		return nil, err
	}
	c := &Crawler{cfg: cfg, store: store, fstore: fs, fetcher: NewFetcher(cfg.Fetch), f: newFrontier(),
		wake: make(chan struct{}, 1), persist: make(chan persistItem, 4096), errs: map[string]int64{}, scope: map[string]bool{}}
	for _, p := range cfg.Include {
		re, err := regexp.Compile(p)
		if err != nil {
			return nil, fmt.Errorf("crawl: include %q: %w", p, err)
		}
		c.include = append(c.include, re)
	}
	for _, p := range cfg.Exclude {
		re, err := regexp.Compile(p)
		if err != nil {
			return nil, fmt.Errorf("crawl: exclude %q: %w", p, err)
		}
		c.exclude = append(c.exclude, re)
	}
	for _, s := range cfg.Seeds {
		n, err := Normalize(nil, s)
		if err != nil {
			return nil, fmt.Errorf("crawl: seed %q: %w", s, err)
		}
		c.scope[c.scopeKey(n)] = true
	}
	return c, nil
}

// ExcludePrefix stops the crawler from polling URLs that start with p: a
// known peer's share repository (spec section 10).
func (c *Crawler) ExcludePrefix(p string) {
	c.mu.Lock()
	c.excluded = append(c.excluded, p)
	c.mu.Unlock()
}

func (c *Crawler) scopeKey(u string) string {
	p, err := url.Parse(u)
	if err != nil {
		return ""
	}
	switch c.cfg.Scope {
	case "domain":
		if d, err := publicsuffix.EffectiveTLDPlusOne(p.Hostname()); err == nil {
			return d
		}
		return p.Hostname()
	case "all":
		return ""
	}
	return p.Host
}

// admit applies scope, share-file and trap rules to a normalised URL at
// depth; it is called with c.mu held.
func (c *Crawler) admit(u string, depth int) bool {
	if len(u) > c.cfg.MaxURLLength {
		return false
	}
	if c.cfg.Scope != "all" && !c.scope[c.scopeKey(u)] {
		return false
	}
	if strings.HasSuffix(u, "/robots.shr") || strings.HasSuffix(u, "/robots.txt") {
		return false // share-control and robots files make no web-events
	}
	for _, p := range c.excluded {
		if strings.HasPrefix(u, p) {
			return false
		}
	}
	dynamic := strings.Contains(u, "?")
	if depth > c.cfg.MaxStaticDepth || dynamic && depth > c.cfg.MaxDynamicDepth {
		return false
	}
	if repeatedSegments(u) > c.cfg.MaxSegmentRepet {
		return false
	}
	if h := c.f.hosts[hostKey(u)]; h != nil && h.known >= c.cfg.MaxURLsPerHost {
		return false
	}
	if len(c.include) > 0 && !anyMatch(c.include, u) {
		return false
	}
	return !anyMatch(c.exclude, u)
}

func anyMatch(res []*regexp.Regexp, s string) bool {
	for _, re := range res {
		if re.MatchString(s) {
			return true
		}
	}
	return false
}

// repeatedSegments returns how often the most frequent path segment occurs:
// /a/a/a/ is a loop of relative links, not a site.
func repeatedSegments(u string) int {
	p, err := url.Parse(u)
	if err != nil {
		return 0
	}
	seen := map[string]int{}
	most := 0
	for _, s := range strings.Split(p.Path, "/") {
		if s == "" {
			continue
		}
		seen[s]++
		most = max(most, seen[s])
	}
	return most
}

// addURL puts a discovered URL in the frontier; c.mu held.
func (c *Crawler) addURL(u string, depth int, now time.Time) {
	if !c.admit(u, depth) {
		c.skipped.Add(1)
		return
	}
	st, isNew := c.f.add(URLState{URL: u, Depth: depth, Due: now, Interval: c.cfg.RevisitMin})
	if isNew {
		c.discovered.Add(1)
		c.save(st)
		return
	}
	if st.Gone {
		// Linked again after a DELETE: look once more, but not soon.
		st.Gone = false
		st.Due = later(now, st.Due.Add(c.cfg.RevisitMax))
		c.f.enqueue(c.f.host(hostKey(u)), st)
		c.save(st)
	}
}

// save queues a copy of st for the persister; c.mu held.
func (c *Crawler) save(st *URLState) {
	cp := *st
	c.persist <- persistItem{state: &cp}
}

func (c *Crawler) signal() {
	select {
	case c.wake <- struct{}{}:
	default:
	}
}

// Load reads the stored frontier, once, and returns how many URLs it holds.
// Run calls it when the caller has not.
func (c *Crawler) Load() (int, error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if !c.loaded {
		err := c.fstore.LoadFrontier(func(s URLState) error {
			c.f.add(s)
			return nil
		})
		if err != nil {
			return 0, fmt.Errorf("crawl: load frontier: %w", err)
		}
		c.loaded = true
	}
	return len(c.f.urls), nil
}

// Run loads the frontier, adds the seeds and crawls with Config.Workers
// fetches in flight until ctx ends. In-flight fetches finish; what they
// learnt is written before Run returns.
func (c *Crawler) Run(ctx context.Context) error {
	if err := c.Start(); err != nil {
		return err
	}
	var wg sync.WaitGroup
	for range c.cfg.Workers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			c.worker(ctx)
		}()
	}
	wg.Wait()
	return c.Stop()
}

// Start loads the frontier, adds the seeds and starts the writer of what
// polls learn. Callers that schedule polls themselves (a cooperating peer)
// call Start, then Poll from as many goroutines as they like, then Stop.
func (c *Crawler) Start() error {
	now := time.Now()
	if _, err := c.Load(); err != nil {
		return err
	}
	c.mu.Lock()
	if c.started {
		c.mu.Unlock()
		return errors.New("crawl: started twice")
	}
	c.started = true
	for _, s := range c.cfg.Seeds {
		if n, err := Normalize(nil, s); err == nil {
			c.addURL(n, 0, now)
		}
	}
	c.mu.Unlock()
	c.persistDone = make(chan error, 1)
	go func() { c.persistDone <- c.persister() }()
	return nil
}

// Stop writes what the polls learnt and returns the first write error. No
// Poll may run during or after Stop.
func (c *Crawler) Stop() error {
	close(c.persist)
	return <-c.persistDone
}

// Ready receives a value when a poll has ended, so a host may be due again.
func (c *Crawler) Ready() <-chan struct{} { return c.wake }

// Delegate replaces the URL prefixes that are left to peers: a cooperating
// peer merges the events of its peers' special sets instead of polling them
// (thesis section 3.2). URLs under them stay in the frontier and are looked
// at again after RevisitMin, so polling resumes if the peer goes away.
func (c *Crawler) Delegate(prefixes []string) {
	c.mu.Lock()
	c.delegated = append([]string(nil), prefixes...)
	c.mu.Unlock()
}

// Poll is one network operation of the crawler: a request to the most due
// host whose delay has passed (its robots.txt when that is due, else its
// most due URL). When no host is ready it sends nothing and returns false
// with how long until one is (0 when the frontier is empty).
func (c *Crawler) Poll(ctx context.Context) (PollResult, bool, time.Duration) {
	for ctx.Err() == nil {
		c.mu.Lock()
		h, wait := c.f.next(time.Now())
		c.mu.Unlock()
		if h == nil {
			return PollResult{}, false, wait
		}
		r := c.serveHost(ctx, h)
		c.signal()
		if r.Requested {
			return r, true, 0
		}
	}
	return PollResult{}, false, 0
}

// PollResult says what one Poll did.
type PollResult struct {
	Requested bool   // a request was sent (false: robots.txt or a peer's special set said no)
	Robots    bool   // the request was for robots.txt
	URL       string // the URL polled
	Status    int
	ErrKind   string // network, timeout, 4xx, 5xx, 429, slow; "" when fine
	Changed   bool   // a web-event was detected
	Event     webevents.Event
	Bytes     int64 // body bytes received
	Cost      time.Duration
}

func (c *Crawler) worker(ctx context.Context) {
	for {
		_, ok, wait := c.Poll(ctx)
		if ctx.Err() != nil {
			return
		}
		if ok {
			continue
		}
		if wait <= 0 || wait > time.Second {
			wait = time.Second // an empty frontier may fill from another worker
		}
		t := time.NewTimer(wait)
		select {
		case <-ctx.Done():
			t.Stop()
			return
		case <-c.wake:
			t.Stop()
		case <-t.C:
		}
	}
}

// serveHost sends at most one request to a busy host: its robots.txt when
// that is due, else the most due URL. The host's delay starts when it ends.
func (c *Crawler) serveHost(ctx context.Context, h *host) PollResult {
	now := time.Now()
	if ctx.Err() != nil {
		c.mu.Lock()
		c.f.release(h, h.nextAllowed)
		c.mu.Unlock()
		return PollResult{}
	}
	if h.robots == nil || now.After(h.robotsUntil) {
		c.robotsFetches.Add(1)
		rb, retry, status, err := c.fetcher.FetchRobots(ctx, h.key, c.cfg.Agent)
		end := time.Now()
		c.mu.Lock()
		h.robots, h.robotsUntil = rb, end.Add(c.cfg.RobotsTTL)
		if retry {
			h.robotsUntil = end.Add(c.cfg.RobotsRetry)
			c.cfg.Logger.Debug("robots.txt unavailable: host disallowed for now", "host", h.key, "err", err)
		}
		c.f.release(h, end.Add(c.delay(h, end.Sub(now))))
		c.mu.Unlock()
		r := PollResult{Requested: true, Robots: true, URL: h.key + "/robots.txt", Status: status, Cost: end.Sub(now)}
		if err != nil && status == 0 {
			r.ErrKind = "network"
		}
		return r
	}
	c.mu.Lock()
	st := c.f.pop(h)
	delegated := st != nil && hasAnyPrefix(st.URL, c.delegated)
	if st == nil || delegated {
		if delegated {
			// A peer polls it; look again later in case the peer leaves.
			c.delegatedSkips.Add(1)
			st.Due = now.Add(c.cfg.RevisitMin)
			c.f.reschedule(h, st)
			c.save(st)
		}
		c.f.release(h, h.nextAllowed)
		c.mu.Unlock()
		return PollResult{}
	}
	c.mu.Unlock()
	// Checked right before the fetch, against the cached robots.txt.
	if !h.robots.Allowed(c.cfg.Agent, st.URL) {
		c.robotsExcluded.Add(1)
		c.mu.Lock()
		// Asked again when the robots.txt may have changed; no request was
		// sent, so the host owes no delay.
		st.Excluded, st.Due = true, h.robotsUntil
		c.f.reschedule(h, st)
		c.save(st)
		c.f.release(h, h.nextAllowed)
		c.mu.Unlock()
		return PollResult{}
	}
	res := c.fetcher.Fetch(ctx, st.URL, st.NotHTML && st.Polls > 0, st.ETag, st.LastMod)
	c.polls.Add(1)
	ev, changed := c.afterFetch(h, st, &res)
	return PollResult{Requested: true, URL: st.URL, Status: res.Status, ErrKind: errorKind(&res),
		Changed: changed, Event: ev, Bytes: res.Size, Cost: res.End.Sub(res.Start)}
}

func hasAnyPrefix(s string, prefixes []string) bool {
	for _, p := range prefixes {
		if strings.HasPrefix(s, p) {
			return true
		}
	}
	return false
}

// afterFetch records what a poll saw and schedules the URL and the host.
func (c *Crawler) afterFetch(h *host, st *URLState, res *Result) (webevents.Event, bool) {
	var prev *webevents.Event
	if e, ok, err := c.store.Get(st.URL); err == nil && ok {
		prev = &e
	}
	ev, changed := Detect(st.URL, prev, res, res.End, c.cfg.CID)
	if changed {
		switch ev.Stat {
		case webevents.Create:
			c.created.Add(1)
		case webevents.Update:
			c.updated.Add(1)
		case webevents.Delete:
			c.deleted.Add(1)
		}
		c.persist <- persistItem{event: &ev}
	}
	kind := errorKind(res)
	if kind != "" {
		c.errMu.Lock()
		c.errs[kind]++
		c.errMu.Unlock()
	}
	if res.Status == 304 {
		c.notModified.Add(1)
	}

	c.mu.Lock()
	defer c.mu.Unlock()
	transient := kind != "" && kind != "4xx"
	switch {
	case transient:
		h.failures++
		st.Due = res.End.Add(c.backoff(h, res.RetryAfter))
	case res.Status == 404 || res.Status == 410:
		st.Gone = true
		h.failures = 0
	default:
		h.failures = 0
		st.Excluded = false
		if res.Status == 200 || res.Status == 304 {
			st.Polls++
			if res.Status == 200 {
				st.NotHTML = !res.HTML
				st.ETag, st.LastMod = res.ETag, res.LastModRaw
			}
		}
		// Adaptive revisit: shrink on change, grow without one.
		if changed {
			st.Interval = max(c.cfg.RevisitMin, st.Interval/2)
		} else {
			st.Interval = min(c.cfg.RevisitMax, st.Interval*3/2)
		}
		st.Due = res.End.Add(st.Interval)
	}
	if res.Location != "" {
		c.addURL(res.Location, st.Depth, res.End)
	}
	for _, l := range res.Links.URLs {
		c.addURL(l, st.Depth+1, res.End)
	}
	c.f.reschedule(h, st)
	c.save(st)
	h.lastFetch = res.End.Sub(res.Start)
	notBefore := res.End.Add(c.delay(h, h.lastFetch))
	if transient {
		notBefore = later(notBefore, res.End.Add(c.backoff(h, res.RetryAfter)))
	}
	c.f.release(h, notBefore)
	return ev, changed
}

// delay is the pause after a request to h: the larger of the configured
// floor, the robots.txt Crawl-delay (capped) and a multiple of how long the
// last download took.
func (c *Crawler) delay(h *host, took time.Duration) time.Duration {
	d := c.cfg.MinDelay
	if h.robots != nil {
		d = max(d, min(h.robots.CrawlDelay, c.cfg.MaxCrawlDelay))
	}
	return max(d, time.Duration(c.cfg.DelayFactor*float64(took)))
}

// backoff grows exponentially with consecutive failures, and honours a
// longer Retry-After.
func (c *Crawler) backoff(h *host, retryAfter time.Duration) time.Duration {
	b := c.cfg.BackoffBase
	for i := 1; i < h.failures && b < c.cfg.BackoffMax; i++ {
		b *= 2
	}
	return max(min(b, c.cfg.BackoffMax), min(retryAfter, 24*time.Hour))
}

func errorKind(r *Result) string {
	switch {
	case r.Err != nil && errors.Is(r.Err, ErrTooSlow):
		return "slow"
	case r.Err != nil && (errors.Is(r.Err, context.DeadlineExceeded) || isTimeout(r.Err)):
		return "timeout"
	case r.Err != nil:
		return "network"
	case r.Status == 429:
		return "429"
	case r.Status >= 500:
		return "5xx"
	case r.Status >= 400 && r.Status != 404 && r.Status != 410:
		return "4xx"
	}
	return ""
}

func isTimeout(err error) bool {
	var ne net.Error
	return errors.As(err, &ne) && ne.Timeout()
}

// persister writes events and frontier states in batches: every 100 ms or
// 512 items, and once more when the crawler stops.
func (c *Crawler) persister() error {
	var events []webevents.Event
	states := map[string]URLState{}
	var firstErr error
	flush := func() {
		if len(events) > 0 {
			if err := c.store.Record(events); err != nil && firstErr == nil {
				firstErr = fmt.Errorf("crawl: record events: %w", err)
			}
			events = events[:0]
		}
		if len(states) > 0 {
			batch := make([]URLState, 0, len(states))
			for _, s := range states {
				batch = append(batch, s)
			}
			if err := c.fstore.SaveFrontier(batch); err != nil && firstErr == nil {
				firstErr = fmt.Errorf("crawl: save frontier: %w", err)
			}
			clear(states)
		}
	}
	tick := time.NewTicker(100 * time.Millisecond)
	defer tick.Stop()
	for {
		select {
		case it, ok := <-c.persist:
			if !ok {
				flush()
				return firstErr
			}
			if it.event != nil {
				events = append(events, *it.event)
			}
			if it.state != nil {
				states[it.state.URL] = *it.state
			}
			if len(events)+len(states) >= 512 {
				flush()
			}
		case <-tick.C:
			flush()
		}
	}
}

// Stats returns the counters so far.
func (c *Crawler) Stats() Stats {
	c.errMu.Lock()
	errs := make(map[string]int64, len(c.errs))
	for k, v := range c.errs {
		errs[k] = v
	}
	c.errMu.Unlock()
	c.mu.Lock()
	known := len(c.f.urls)
	c.mu.Unlock()
	return Stats{
		Polls: c.polls.Load(), NotModified: c.notModified.Load(),
		Created: c.created.Load(), Updated: c.updated.Load(), Deleted: c.deleted.Load(),
		Errors: errs, RobotsExcluded: c.robotsExcluded.Load(), RobotsFetches: c.robotsFetches.Load(),
		Discovered: c.discovered.Load(), Skipped: c.skipped.Load(), Delegated: c.delegatedSkips.Load(), Known: known,
	}
}
