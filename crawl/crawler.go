package crawl

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"hash/maphash"
	"net/http"
	"regexp"
	"sync"
	"sync/atomic"
	"time"

	"golang.org/x/time/rate"

	"github.com/cocrawl/cocrawl/crawl/fingerprint"
	"github.com/cocrawl/cocrawl/webevents"
)

// Stats counts what a crawler did. Read it with Crawler.Stats.
type Stats struct {
	Polls, NotModified, Created, Updated, Deleted int64
	DeletedBy                                     map[string]int64 // how deletions were decided: 404, soft-404, redirect
	Confirmed                                     int64            // polls that saw no change, recorded as confirmations (Config.Confirm)
	Hinted                                        int64            // hints that counted as a visit (a peer's poll)
	Errors                                        map[string]int64 // by kind: network, timeout, 4xx, 5xx, 429, slow
	RobotsExcluded, RobotsFetches                 int64
	Discovered, Skipped                           int64 // URLs added, links refused by scope or trap rules
	Delegated                                     int64 // polls left to a peer whose special set holds the URL
	Stalled                                       int64 // polls not sent while events waited for the store
	Advanced                                      int64 // revisits a refit brought forward (schedule.go)
	// Hosts not trusted now for their Last-Modified dates, and for their
	// ETags (validators.go).
	DistrustedLM, DistrustedETag int64
	Connections                  int64 // connections the fetcher opened
	Known                        int
	Spilled                      int // of Known, first visits in the backlog on disk (backlog.go)
	Parked                       int // of Known, revisits parked on disk (parking.go)
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
	robotsMem int      // bytes of the robots.txt files hosts keep (cacheRobots)
	noiseHeld int      // pages hosts hold while they learn their noise (noise.go)
	// noiseHeldFeatures: their text features, in all; noiseHolders: the
	// hosts holding some.
	noiseHeldFeatures int
	noiseHolders      map[*hostNoise]bool
	storeErr          error    // the last failed write, nil once one succeeds (errMu)
	delegated         []string // URL prefixes left to peers (their special sets)
	started           bool

	queue       *persistQueue
	persistDone chan error
	persisted   atomic.Uint64 // the persister's rounds that wrote without an error (storeWrites)
	// countStop and countDone stop and wait for countAllParked.
	countStop, countDone chan struct{}

	global   globalFit     // the crawler-wide revisit budget (schedule.go); c.mu
	pool     pooledPrior   // every host's estimates, the prior of hosts with few (schedule.go); c.mu
	self     *selfCheck    // sampled polls that measure freshness (selfcheck.go)
	fitEvery time.Duration // how often budgets are refitted: fitEvery, shorter in tests

	order                                          maphash.Seed // this crawler's own order (Config.Spread)
	rdvMu                                          sync.RWMutex
	rdv                                            rendezvous // the community's order, when set (order.go)
	polls, notModified, created, updated, deleted  atomic.Int64
	confirmed, hinted                              atomic.Int64
	robotsExcluded, robotsFetches                  atomic.Int64
	stalled                                        atomic.Int64 // polls not sent while the store lagged
	advanced                                       atomic.Int64 // revisits a refit brought forward
	distrustedLM, distrustedETag                   atomic.Int64 // hosts not trusted now for those validators
	sitemapReads, sitemapErrors, sitemapURLs       atomic.Int64 // signals.go
	lastmodHints, lastmodConfirmed, lastmodRefuted atomic.Int64
	sitemapVisits, feedReads, publisherEvents      atomic.Int64
	indexNowURLs, indexNowRefused                  atomic.Int64
	discovered, skipped, delegatedSkips            atomic.Int64
	errMu                                          sync.Mutex
	errs                                           map[string]int64
	deletedBy                                      map[string]int64 // errMu
}

// New returns a crawler; Run starts it.
func New(cfg Config, store Store, fs FrontierStore) (*Crawler, error) {
	if err := cfg.defaults(); err != nil {
		return nil, &ConfigError{err}
	}
	cfg.Fetch.KeepResponse = cfg.Fetch.KeepResponse || cfg.Archive != nil
	c := &Crawler{cfg: cfg, store: store, fstore: fs, fetcher: NewFetcher(cfg.Fetch), f: newFrontier(),
		wake: make(chan struct{}, 1), queue: newPersistQueue(), errs: map[string]int64{}, deletedBy: map[string]int64{}, scope: map[string]bool{},
		order: maphash.MakeSeed(), fitEvery: fitEvery, self: newSelfCheck(cfg.SampleShare)}
	// With a spread order, backlink counts order first visits in classes
	// (powers of two), inside which each crawler's spread order decides.
	c.f.firstLess = firstVisitOrder(cfg.FirstVisits, cfg.Spread > 0)
	c.f.explore = cfg.Explore
	c.f.sitemaps = !cfg.NoSitemaps
	c.f.grace = cfg.Spread/4 + time.Second
	c.f.serverPolicy = serverPolicy{conns: cfg.ServerConns, delayShare: cfg.ServerDelayShare, maxHosts: cfg.MaxHostsPerServer}
	if b, ok := fs.(backlogger); ok && cfg.FirstVisitsInMemory >= 0 {
		if bs := b.backlogStore(); bs != nil {
			c.f.spill = newBacklog(bs, cmp.Or(cfg.FirstVisitsInMemory, DefaultFirstVisitsInMemory), cfg.FirstVisits == FirstByBreadth)
			c.f.readAhead = true
			c.f.spillError = func(err error) { c.storeFailed(fmt.Errorf("crawl: backlog: %w", err)) }
			c.f.save = c.save
		}
	}
	if p, ok := fs.(parkStorer); ok && cfg.RevisitsInMemory >= 0 {
		if ps := p.parkStore(); ps != nil {
			c.f.park = newParking(ps, cmp.Or(cfg.RevisitsInMemory, DefaultRevisitsInMemory))
			c.f.parkError = func(err error) { c.storeFailed(fmt.Errorf("crawl: parked revisits: %w", err)) }
			c.f.save = c.save
		}
	}
	for _, p := range cfg.Include {
		re, err := regexp.Compile(p)
		if err != nil {
			return nil, &ConfigError{fmt.Errorf("crawl: include %q: %w", p, err)}
		}
		c.include = append(c.include, re)
	}
	for _, p := range cfg.Exclude {
		re, err := regexp.Compile(p)
		if err != nil {
			return nil, &ConfigError{fmt.Errorf("crawl: exclude %q: %w", p, err)}
		}
		c.exclude = append(c.exclude, re)
	}
	for _, s := range cfg.Seeds {
		n, err := Normalize(nil, s)
		if err != nil {
			return nil, &ConfigError{fmt.Errorf("crawl: seed %q: %w", s, err)}
		}
		c.scope[c.scopeKey(n)] = true
	}
	return c, nil
}

// addURL puts a discovered URL in the frontier and returns its state (nil
// when the scope and trap rules refuse it, or it waits in the backlog) and
// whether it was new; c.mu held.
func (c *Crawler) addURL(u string, depth int, now time.Time) (*URLState, bool) {
	st, isNew, _ := c.addFound(u, depth, now)
	return st, isNew
}

// addFound is addURL, and says too whether the URL waits in the backlog
// (frontier.addFound).
func (c *Crawler) addFound(u string, depth int, now time.Time) (st *URLState, isNew, spilled bool) {
	if !c.admit(u, depth) {
		c.skipped.Add(1)
		return nil, false, false
	}
	due := now
	if depth > 0 {
		// Links found on the same page would be polled in the same order
		// by every peer; a quarter of the spread is enough to differ.
		due = due.Add(c.offset(u) / 4)
	}
	st, isNew, spilled = c.f.addFound(URLState{URL: u, Depth: depth, Due: due, Interval: c.cfg.RevisitMin})
	if isNew {
		c.discovered.Add(1)
		if st != nil {
			c.save(st)
		}
		return st, true, spilled
	}
	if st == nil {
		return nil, false, spilled
	}
	if st.Gone {
		// Linked again after a DELETE: look once more, but not soon.
		st.Gone = false
		st.Due = later(now, st.Due.Add(c.cfg.RevisitMax))
		c.f.enqueue(c.f.host(hostKey(u)), st)
		c.save(st)
	}
	return st, false, false
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
		// What the stored frontier holds stays in memory: only URLs found
		// from now on spill.
		spill := c.f.spill
		c.f.spill, c.f.placeLater = nil, true
		if e, ok := c.fstore.(tableEstimator); ok {
			// Sized for the keys first: a map that grows as it loads
			// rehashes each segment again and again (BenchmarkFill: four
			// times the time). Under the estimate, which counts deleted
			// keys too (about a third of a crawl's backlog); what is left
			// grows as it comes, and what was too much is trimmed below.
			parked, spilled := e.estimateKeys()
			if c.f.park != nil {
				c.f.park.at.Reserve(parked * 7 / 8)
			}
			if spill != nil {
				spill.ranked.Reserve(spilled * 3 / 4)
			}
		}
		// Both key scans read ahead from the start, each on a goroutine
		// of its own, while the keys before them are counted.
		var parked, spilled *keysAhead
		if c.f.park != nil {
			parked = scanAhead(c.f.park.store.EachParkedKey)
		}
		if spill != nil {
			spilled = scanAhead(func(emit func(string, uint32, uint64) error) error {
				return spill.store.EachSpilled(func(host string, rank uint16, fp uint64) error {
					return emit(host, uint32(rank), fp)
				})
			})
		}
		var err error
		if parked != nil {
			// Parked first: a URL both parked and in the frontier's table
			// (a crash while it moved) is the parked one.
			err = c.f.loadParked(parked)
		}
		err = errors.Join(err, c.fstore.LoadFrontier(func(s URLState) error {
			c.f.add(s)
			// Politeness survives the restart: the host waits until the
			// latest time any of its polls allowed.
			if s.HostNext > 0 {
				h := c.f.host(hostKey(s.URL))
				h.nextAllowed = later(h.nextAllowed, time.UnixMilli(s.HostNext))
			}
			return nil
		}))
		c.f.spill = spill
		if spilled != nil {
			if err == nil {
				err = c.f.loadBacklog(spilled)
			} else {
				spilled.close()
			}
		}
		c.f.placeAll()
		// What the estimates reserved beyond the keys that came (deleted
		// keys not yet compacted away) is given back.
		if c.f.park != nil {
			c.f.park.at.Trim()
		}
		if c.f.spill != nil {
			c.f.spill.ranked.Trim()
		}
		if err != nil {
			return 0, fmt.Errorf("crawl: load frontier: %w", err)
		}
		c.loaded = true
	}
	return c.f.size(), nil
}

// Run loads the frontier, adds the seeds and crawls with Config.Workers
// fetches in flight until ctx ends. In-flight fetches finish; what they
// learnt is written before Run returns.
func (c *Crawler) Run(ctx context.Context) error {
	if err := c.Start(); err != nil {
		return err
	}
	// Config.RequestRate, which Run's workers keep (a caller that calls
	// Poll itself keeps to it by when it calls); nil: none.
	var budget *rate.Limiter
	if c.cfg.RequestRate > 0 {
		budget = rate.NewLimiter(rate.Limit(c.cfg.RequestRate), 1)
	}
	var wg sync.WaitGroup
	for range c.cfg.Workers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			c.worker(ctx, budget)
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
	if c.f.park != nil && c.f.park.counting.Load() {
		c.countStop, c.countDone = make(chan struct{}), make(chan struct{})
		go func() {
			defer close(c.countDone)
			c.countAllParked(c.countStop)
		}()
	}
	return nil
}

// Stop writes what the polls learnt and returns the first write error. No
// Poll may run during or after Stop. A store that does not take the last
// writes within StopTimeout is given up, so a stalled store (a full disk)
// cannot keep the process from stopping; the error says what was lost.
func (c *Crawler) Stop() error {
	if c.countStop != nil {
		close(c.countStop)
		<-c.countDone
	}
	// URLs a take read and left in the store (URLState.left) are written
	// as frontier states, so a restart finds them where they were: in
	// memory, not parked or spilled again.
	c.mu.Lock()
	for st := range c.f.states() {
		if st.left != leftNowhere {
			c.save(st)
		}
	}
	if c.f.spill != nil {
		c.f.spill.releaseHeld("") // the moves of spilled URLs, to keep their ranks
	}
	c.mu.Unlock()
	c.queue.close()
	// The stop waits as long as the store takes writes: what is left to
	// write (every held move, up to maxHeld) may take longer than
	// StopTimeout on a busy store, but not a StopTimeout without one.
	t := time.NewTicker(StopTimeout)
	defer t.Stop()
	last := c.storeWrites()
	for {
		select {
		case err := <-c.persistDone:
			return err
		case <-t.C:
			if n := c.storeWrites(); n != last {
				last = n
				continue
			}
			return fmt.Errorf("crawl: the store took no writes for %v: %d events not stored", StopTimeout, c.queue.backlog())
		}
	}
}

// storeWrites counts the persister's writes so far, for Stop to see that
// the store still takes them.
func (c *Crawler) storeWrites() uint64 {
	n := c.persisted.Load()
	if c.f.spill != nil {
		n += c.f.spill.writes.Load()
	}
	return n
}

// delegatedRelook is how long a URL left to a peer waits before the
// crawler looks at whether it still is (at least RevisitMin).
const delegatedRelook = 30 * time.Second

// StopTimeout bounds how long Stop waits for the store.
var StopTimeout = 30 * time.Second

// Ready receives a value when a poll has ended, so a host may be due again.
func (c *Crawler) Ready() <-chan struct{} { return c.wake }

// Poll is one network operation of the crawler: a request to the most due
// host whose delay has passed (its robots.txt when that is due, else its
// most due URL). When no host is ready it sends nothing and returns false
// with how long until one is (0 when the frontier is empty).
func (c *Crawler) Poll(ctx context.Context) (PollResult, bool, time.Duration) {
	if c.queue.backlog() >= c.cfg.MaxBacklog {
		// The store is not keeping up (stalled, full): no request whose
		// result could not be kept.
		c.stalled.Add(1)
		return PollResult{}, false, 100 * time.Millisecond
	}
	for ctx.Err() == nil {
		c.mu.Lock()
		now := time.Now()
		h, wait := c.f.next(now)
		if h == nil {
			if wait > 0 {
				c.global.idle++ // asked, with nothing due (schedule.go)
			}
			c.mu.Unlock()
			return PollResult{}, false, wait
		}
		c.sampleBacklog(h, now)
		r := c.serveHost(ctx, h) // lets c.mu go
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
	// What the response said of the page, for a caller that checks a
	// claim against it (a spot-check of a peer's record).
	LastModified time.Time
	ETag, Digest string
	Checked      bool // the poll was asked for by Recheck
	// The fingerprint of the page's text (HasFingerprint), and that of the
	// version this crawler's own looks before found, with the time they
	// first found it (zero: none): whether the page changed since.
	Fingerprint    uint64
	HasFingerprint bool
	// Local is the fingerprint without the host's noise (HasLocal), the
	// one OwnBefore was taken as; Near how far two records' fingerprints
	// may be on this host and be one version, LocalNear two Local ones.
	Local       uint64
	HasLocal    bool
	Near        int
	LocalNear   int
	OwnBefore   uint64
	OwnBeforeAt time.Time
}

func (c *Crawler) worker(ctx context.Context, budget *rate.Limiter) {
	for {
		// A token a worker takes and then finds nothing due for is lost:
		// only while nothing is due, when the budget does not bind.
		if budget != nil && budget.Wait(ctx) != nil {
			return
		}
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
// It is called with c.mu held, taken when the host was handed out, and
// lets it go: the URL is chosen in the same hold, not in a second one
// after a wait for the lock again (a third of the workers waited for it
// at 11.6 million URLs).
func (c *Crawler) serveHost(ctx context.Context, h *host) PollResult {
	now := time.Now()
	if ctx.Err() != nil {
		c.f.releaseUnused(h)
		c.mu.Unlock()
		return PollResult{}
	}
	if c.f.park != nil && c.f.park.counting.Load() {
		// Its parked URLs' last polls may ask the host to wait (HostNext).
		c.f.countParked(h)
		if h.nextAllowed.After(now) {
			c.f.releaseUnused(h)
			c.mu.Unlock()
			return PollResult{}
		}
	}
	if h.robots == nil || now.After(h.robotsUntil) {
		c.mu.Unlock()
		c.robotsFetches.Add(1)
		var server string
		rb, retry, status, err := c.fetcher.FetchRobots(traceServer(ctx, &server), h.key, c.cfg.Agent)
		end := time.Now()
		c.mu.Lock()
		c.learnServer(h, server)
		h.fit.sent++
		c.cacheRobots(h, rb)
		c.sitemapsFrom(h, rb.body)
		h.robotsUntil = end.Add(c.cfg.RobotsTTL)
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
	if k, ok := c.nextKeyCheck(h); ok {
		if h.robots.Allowed(c.cfg.Agent, k.url) {
			c.mu.Unlock()
			return c.checkKey(ctx, h, k)
		}
		c.dropSubmissions(h, k.key) // a key robots.txt forbids us to fetch cannot be verified
	}
	if u, ok := c.nextNotFoundProbe(h, now); ok && h.robots.Allowed(c.cfg.Agent, u) {
		c.mu.Unlock()
		return c.probeNotFound(ctx, h, u)
	}
	if u, ok := c.nextSitemap(h, now); ok && h.robots.Allowed(c.cfg.Agent, u) {
		c.mu.Unlock()
		return c.readSitemap(ctx, h, u)
	}
	if !h.urlDue(now) {
		// Handed out for a sitemap round that robots.txt turned down.
		c.f.releaseUnused(h)
		c.mu.Unlock()
		return PollResult{}
	}
	st := c.f.pop(h, now)
	var ownFP uint64
	var ownAt time.Time
	if st != nil && st.hasOwnFP {
		ownFP, ownAt = st.ownFP, time.UnixMilli(st.ownAt)
	}
	// A spot-check (Recheck) is polled even where a peer polls: it checks
	// that peer.
	delegated := st != nil && !st.checking && !st.sampling && hasAnyPrefix(st.URL, c.delegated)
	if st == nil || delegated {
		if delegated {
			// A peer polls it; look again later in case the peer leaves.
			c.delegatedSkips.Add(1)
			st.Due = now.Add(max(c.cfg.RevisitMin, delegatedRelook))
			c.save(st) // before it may be parked
			c.f.reschedule(h, st)
		}
		c.f.releaseUnused(h)
		c.mu.Unlock()
		return PollResult{}
	}
	// Read under the lock: a Recheck may mark st while it is fetched.
	checked := st.checking
	etag, lastMod := st.ETag, st.LastMod
	if checked || st.sampling {
		// A check wants the page's own validators, never a 304; so does a
		// sample, judged against what is held, whoever gave it.
		etag, lastMod = "", ""
	}
	notHTML := st.NotHTML && st.Polls > 0
	// The URL too: once afterFetch hands the host back, another worker
	// may poll st again and rewrite its fields (packStrings).
	u := st.URL
	read, readAhead := c.f.readWanted(h)
	c.mu.Unlock()
	if readAhead {
		c.readAhead(h, read)
	}
	// Checked right before the fetch, against the cached robots.txt.
	if !h.robots.Allowed(c.cfg.Agent, u) {
		c.robotsExcluded.Add(1)
		c.mu.Lock()
		// Asked again when the robots.txt may have changed; no request was
		// sent, so the host owes no delay.
		st.Excluded, st.Due = true, h.robotsUntil
		if st.sampling {
			st.sampling = false
			c.noVerdict()
		}
		c.save(st) // before it may be parked
		c.f.reschedule(h, st)
		c.f.releaseUnused(h)
		c.mu.Unlock()
		return PollResult{}
	}
	res := c.fetcher.Fetch(ctx, u, notHTML, etag, lastMod)
	c.polls.Add(1)
	ev, changed, kind, prev := c.afterFetch(h, st, &res)
	c.archive(u, &res, prev, changed)
	return PollResult{Requested: true, URL: u, Status: res.Status, ErrKind: kind,
		Changed: changed, Event: ev, Bytes: res.Size, Cost: res.End.Sub(res.Start),
		LastModified: res.LastModified, ETag: res.ETag, Digest: res.Digest, Checked: checked,
		Fingerprint: res.Fingerprint, HasFingerprint: res.HasFingerprint, Local: res.Local, HasLocal: res.HasLocal, Near: res.WireNear, LocalNear: res.LocalNear,
		OwnBefore: ownFP, OwnBeforeAt: ownAt}
}

// afterFetch records what a poll saw and schedules the URL and the host.
// It returns the event, whether it was one, and the poll's error kind, and
// leaves res as it was read: without the validators the host is not
// trusted for, a deletion the host did not announce as a 404.
func (c *Crawler) afterFetch(h *host, st *URLState, res *Result) (webevents.Event, bool, string, *webevents.Event) {
	prev := c.previous(st)
	// One hold of the lock for all of it: the event's detection between
	// is a microsecond or two, and a second hold was a second wait. In a
	// crawl to 11.6 million URLs a third of its 64 workers waited for
	// the lock, and a hold given up woke the next waiter, which then had
	// to be scheduled before the lock did any work again.
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.takeNoiseRead(h, st, res, prev) {
		return webevents.Event{}, false, "", prev
	}
	deletedBy := c.unannouncedDeletion(h, res)
	if deletedBy != "" {
		*res = *asNotFound(res)
	} else if res.Status == 404 || res.Status == 410 {
		deletedBy = deletedBy404
	}
	ev, changed, refused := c.record(st, prev, res, deletedBy)
	kind := c.countKind(res, refused)
	c.afterLook(h, st, res, prev, changed, kind, refused)
	return ev, changed, kind, prev
}

// previous is the URL's last event: the one waiting for the store, else
// the stored one; nil when there is none.
func (c *Crawler) previous(st *URLState) *webevents.Event {
	if e, ok := c.queue.pending(st.URL); ok {
		return &e // polled again before the store took the last poll's event
	}
	if e, ok, err := c.store.Get(st.URL); err == nil && ok {
		return &e
	}
	return nil
}

// takeNoiseRead applies what the host's validators and noise say of res,
// and reports whether the poll was the first of two reads for the host's
// noise (noise.go): the second, at once, decides the event with what the
// two taught (judged now, a revisit would compare without the noise
// learnt), so this one is done with. c.mu held.
func (c *Crawler) takeNoiseRead(h *host, st *URLState, res *Result, prev *webevents.Event) bool {
	lm, etag := h.validators.trustLM(), h.validators.trustETag()
	h.validators.observe(res, prev, h.noise.wireNear())
	c.distrustedLM.Add(trustTurned(lm, h.validators.trustLM()))
	c.distrustedETag.Add(trustTurned(etag, h.validators.trustETag()))
	*res = *h.validators.trusted(res)
	if c.readNoise(h, st, res) {
		h.fit.sent++
		h.signals.since++
		h.failures = 0
		st.Due = time.Unix(0, 0)
		c.hostDone(h, st, res, false)
		return true
	}
	res.WireNear, res.LocalNear = h.noise.wireNear(), h.noise.localNear()
	if st.hasOwnFP && res.HasLocal && st.ownMaskVer == h.noise.version &&
		(prev == nil || prev.From == "" || st.ownAt/1000 >= prev.LPD) {
		// This crawler's last look is the latest word on the page.
		res.HeldLocal, res.HasHeldLocal = st.ownFP, true
	}
	return false
}

// record turns the poll into its web-event, if it saw one, and queues it
// for the store, or queues a confirmation of the held state (Confirm).
// refused: the event failed the store's checks and was not queued.
func (c *Crawler) record(st *URLState, prev *webevents.Event, res *Result, deletedBy string) (ev webevents.Event, changed, refused bool) {
	seen := res
	if res.Status == 304 && prev != nil && prev.From != "" {
		// Unchanged since this crawler's own last fetch, whose validators
		// it sent: that is the page to hold a peer's claim against.
		seen = ownView(res, st, prev)
	}
	ev, changed = Detect(st.URL, prev, seen, res.End, c.cfg.CID)
	if changed {
		// An event the store would refuse is not queued, where it would
		// take its whole batch down with it, and the URL keeps its old
		// validators, so the change is seen again at the next poll.
		if err := ev.Validate(); err != nil {
			c.cfg.Logger.Warn("poll result refused as an event", "url", st.URL, "err", err)
			return ev, false, true
		}
		switch ev.Stat {
		case webevents.Create:
			c.created.Add(1)
		case webevents.Update:
			c.updated.Add(1)
		case webevents.Delete:
			c.deleted.Add(1)
			c.errMu.Lock()
			c.deletedBy[deletedBy]++
			c.errMu.Unlock()
		}
		c.queue.addEvent(ev)
	} else if prev != nil && c.cfg.Confirm && (res.Status == 200 || res.Status == 304) {
		c.confirmed.Add(1)
		conf := *prev
		// This crawler's own look: its cid, whoever saw the version first.
		conf.LPD, conf.From, conf.CID = res.End.Unix(), "", c.cfg.CID
		c.queue.addEvent(conf)
	}
	return ev, changed, false
}

// countKind is the poll's error kind ("" for none), counted.
func (c *Crawler) countKind(res *Result, refused bool) string {
	kind := errorKind(res)
	if refused {
		kind = "refused"
	}
	if kind != "" {
		c.errMu.Lock()
		c.errs[kind]++
		c.errMu.Unlock()
	}
	if res.Status == 304 {
		c.notModified.Add(1)
	}
	return kind
}

// afterLook updates the URL's state after a poll (a sample judged, a
// failure backed off, a page gone, the change rate and next revisit), adds
// the URLs it names and hands the host back. c.mu held.
func (c *Crawler) afterLook(h *host, st *URLState, res *Result, prev *webevents.Event, changed bool, kind string, refused bool) {
	h.fit.sent++
	h.signals.since++
	st.checking = false
	if st.sampling {
		st.sampling = false
		c.judgeSample(prev, changed, res, kind, st.sampleWeight, res.End)
	} else {
		c.polledForSample(res.End)
	}
	// The links of a page's first view count as backlinks (IB'); later
	// views count only links to URLs they add, so no page counts twice.
	firstView := st.Polls == 0
	transient := kind != "" && kind != "4xx" && kind != "refused"
	switch {
	case transient:
		h.failures++
		st.Due = res.End.Add(c.backoff(h, res.RetryAfter))
	case res.Status == 404 || res.Status == 410:
		st.Gone, st.hasOwnFP = true, false
		h.failures = 0
	default:
		h.failures = 0
		st.Excluded = false
		if res.Status == 200 || res.Status == 304 {
			c.learnLook(h, st, res, changed, refused)
		}
		c.nextInterval(h, st, changed, res.End)
		st.Due = c.revisitAt(st, res.End)
	}
	if res.Location != "" {
		c.addURL(res.Location, st.Depth, res.End)
	}
	if len(res.Links.Feeds) > 0 && !c.cfg.NoSitemaps {
		c.feedsFrom(h, res.Links.Feeds)
	}
	for _, l := range res.Links.URLs {
		if to, isNew, spilled := c.addFound(l, st.Depth+1, res.End); to != st && (firstView || isNew) && (to != nil || spilled) {
			c.f.linked(l, to)
		}
	}
	c.hostDone(h, st, res, transient)
}

// learnLook takes what a look that found the page (200 or 304) tells: the
// sitemap's claim judged, the page's own fingerprint, its change rate, its
// validators. c.mu held.
func (c *Crawler) learnLook(h *host, st *URLState, res *Result, changed, refused bool) {
	c.judgeLastmod(h, st, changed, res.LastModified, res.End)
	if res.Status == 200 {
		if !res.HasLocal || !st.hasOwnFP || st.ownMaskVer != h.noise.version || fingerprint.Distance(st.ownFP, res.Local) > h.noise.localNear() {
			st.ownAt = res.End.UnixMilli() // another version: first seen now
		}
		st.ownFP, st.hasOwnFP, st.ownMaskVer = res.Local, res.HasLocal, h.noise.version
	}
	st.Polls++
	c.observeLook(st, res.End, changed, res.LastModified)
	if res.Status == 200 && !refused {
		st.NotHTML = !res.HTML
		if st.ETag != res.ETag || st.LastMod != res.LastModRaw {
			st.URL, st.ETag, st.LastMod = packStrings(st.URL, res.ETag, res.LastModRaw)
		}
	}
}

// hostDone reschedules st and hands its host back after a request, for
// when its politeness delay (and a transient failure's backoff) allows.
// c.mu held.
func (c *Crawler) hostDone(h *host, st *URLState, res *Result, transient bool) {
	c.learnServer(h, res.Server)
	h.lastFetch = res.End.Sub(res.Start)
	notBefore := res.End.Add(c.delay(h, h.lastFetch))
	if transient {
		notBefore = later(notBefore, res.End.Add(c.backoff(h, res.RetryAfter)))
	}
	st.HostNext = notBefore.UnixMilli()
	if c.f.parkable(h, st) {
		// The parked entry holds the state: saved as a frontier state as
		// well, it would be deleted by the parking's own write (one of about
		// nine store writes a first visit made). One saved before, not yet
		// written, goes too.
		if queued, ok := c.queue.dropState(st.URL); ok {
			st.keepLeftEntry(&queued)
		}
		c.f.parkState(h, st)
	} else {
		c.save(st)
		c.f.reschedule(h, st)
	}
	c.f.release(h, notBefore)
}

// learnServer notes the address that served the host's request. c.mu
// held.
func (c *Crawler) learnServer(h *host, addr string) {
	if c.f.assignServer(h, addr) {
		c.cfg.Logger.Info("a host past the cap of hosts on its server address: not polled", "host", h.key, "server", addr, "cap", c.cfg.MaxHostsPerServer)
	}
}

// ownView is a 304 read as the 200 of the version this crawler last
// fetched: its validators, and the size held.
func ownView(res *Result, st *URLState, prev *webevents.Event) *Result {
	v := *res
	v.Status, v.Size, v.Digest = 200, prev.Size, ""
	if v.ETag == "" {
		v.ETag = st.ETag
	}
	if v.LastModified.IsZero() && st.LastMod != "" {
		if t, err := http.ParseTime(st.LastMod); err == nil {
			v.LastModified = t
		}
	}
	return &v
}

// Stats returns the counters so far.
func (c *Crawler) Stats() Stats {
	c.errMu.Lock()
	errs := make(map[string]int64, len(c.errs))
	for k, v := range c.errs {
		errs[k] = v
	}
	deletedBy := make(map[string]int64, len(c.deletedBy))
	for k, v := range c.deletedBy {
		deletedBy[k] = v
	}
	c.errMu.Unlock()
	c.mu.Lock()
	known, spilled, parked := c.f.size(), 0, c.f.parkedCount()
	if c.f.spill != nil {
		spilled = c.f.spill.ranked.Len()
	}
	c.mu.Unlock()
	return Stats{
		Polls: c.polls.Load(), NotModified: c.notModified.Load(),
		Created: c.created.Load(), Updated: c.updated.Load(), Deleted: c.deleted.Load(), DeletedBy: deletedBy, Confirmed: c.confirmed.Load(), Hinted: c.hinted.Load(),
		Errors: errs, RobotsExcluded: c.robotsExcluded.Load(), RobotsFetches: c.robotsFetches.Load(),
		Discovered: c.discovered.Load(), Skipped: c.skipped.Load(), Delegated: c.delegatedSkips.Load(), Advanced: c.advanced.Load(), Known: known,
		DistrustedLM: c.distrustedLM.Load(), DistrustedETag: c.distrustedETag.Load(),
		Spilled: spilled, Parked: parked, Stalled: c.stalled.Load(), Connections: c.fetcher.Connections(),
	}
}

// ForgetGone drops from the frontier, and its store, the URLs found gone
// (404, 410) whose last poll was before before: retention. A link to one
// later adds it again as new. It returns how many went.
func (c *Crawler) ForgetGone(before time.Time) (int, error) {
	c.mu.Lock()
	var urls []string
	for st := range c.f.states() {
		if st.Gone && st.qi == 0 && st.HostNext > 0 && st.HostNext < before.UnixMilli() {
			urls = append(urls, st.URL)
			c.f.drop(st)
		}
	}
	c.mu.Unlock()
	if len(urls) == 0 {
		return 0, nil
	}
	if err := c.fstore.DeleteFrontier(urls); err != nil {
		return 0, fmt.Errorf("crawl: forget gone URLs: %w", err)
	}
	return len(urls), nil
}
