package peer

import (
	"math/rand/v2"
	"sync"
	"time"

	"github.com/cocrawl/cocrawl/crawl"
	"github.com/cocrawl/cocrawl/crawl/fingerprint"
	"github.com/cocrawl/cocrawl/peer/trust"
	"github.com/cocrawl/cocrawl/webevents"
)

// TrustConfig sets how a peer checks what other peers tell it (spec sections
// 12.3 and 12.4):
// after each merge it re-polls a random sample of the records it got, and
// judges each claim against what its own poll sees. Zero fields take the
// defaults named.
type TrustConfig struct {
	// Policy is when a source is distrusted or vouched for, and how many
	// records of each merge are checked (peer/trust, shared with the
	// simulator).
	trust.Policy
	// CheckTimeout is how long a check may wait for its poll (robots.txt,
	// politeness and backoff decide when it is sent); default 10 min.
	CheckTimeout time.Duration
}

func (t *TrustConfig) defaults() {
	t.Policy = t.Policy.WithDefaults()
	if t.CheckTimeout <= 0 {
		t.CheckTimeout = 10 * time.Minute
	}
}

// distrusts says whether a source's record of checks passes the bound.
func (t *TrustConfig) distrusts(r *Record) bool { return t.Distrusts(r.Confirmed, r.Refuted) }

// vouches says whether this peer publishes a source's records onward.
func (t *TrustConfig) vouches(r *Record) bool {
	return r.Distrusted.IsZero() && t.Vouches(r.Confirmed, r.Refuted)
}

// Verdict is what a spot-check concluded of one claim.
type Verdict int

// The verdicts of a spot-check.
const (
	Inconclusive Verdict = iota // the page changed since, or the poll failed
	Confirmed
	Refuted
)

func (v Verdict) String() string {
	return [...]string{"inconclusive", "confirmed", "refuted"}[v]
}

// skew is how far a web server's clock and a peer's may disagree before a
// Last-Modified earlier than a claim's lpd refutes it.
const skew = 5 * time.Minute

// peerSkew is how far two peers' clocks may disagree before this peer's
// own look earlier than a claim's lmd counts as before the claimed event.
// Without a Last-Modified a peer dates an event by its own clock; a peer
// whose clock runs ahead by more than this could be refuted for a true
// claim, but only when the page changed within that time after its poll.
const peerSkew = 30 * time.Second

// clockDated is how close (seconds) a claim's lmd may be to its lpd and be
// the claiming peer's own clock rather than a Last-Modified: a page that
// changed twice within one second of its Last-Modified has a new version
// with the old date, which a poller dates by its clock, a second or two
// after the date a checker's poll sees. Such a claim is not refuted by
// that date (on a page changing every 2 s, 3 honest claims in 25 were,
// and two honest peers distrusted each other).
const clockDated = 2

// Judge compares a claim (a record a peer gave) with what this peer's poll
// of the URL saw:
//   - a live claim (CREATE, UPDATE) with lmd L is confirmed by a page whose
//     Last-Modified is L (or, without one, whose ETag is the claim's); it is
//     refuted by a Last-Modified before L (that version never existed;
//     unless L is within clockDated of the claim's lpd) or
//     after L but well before the claim's lpd (at lpd the page was another
//     version); a later Last-Modified or a 404 may be a change since;
//   - a DELETE is confirmed by a 404 or 410 and refuted by a page whose
//     Last-Modified is older than the claimed deletion.
//
// Where dates say nothing (a dynamic page has no Last-Modified, or one
// that is the response's time), the page's text does (spec section 12.3):
//   - a live claim whose fingerprint (fp) is the page's is confirmed;
//   - a claim is refuted when this peer's own looks found the version it
//     finds now at every look since before the claimed event, and the
//     claim's fp is not that version (for a DELETE: the page is that
//     version now): the page did not change across the claim, so the
//     version claimed, or the deletion, never was.
//
// A failed poll tells nothing.
func Judge(claim webevents.Event, r crawl.PollResult) Verdict {
	if r.ErrKind != "" && r.ErrKind != "4xx" {
		return Inconclusive
	}
	lm := int64(0)
	if !r.LastModified.IsZero() {
		lm = r.LastModified.Unix()
	}
	gone := r.Status == 404 || r.Status == 410
	// unchangedSince says whether this peer's own look before t found the
	// version the poll finds now.
	unchangedSince := func(t int64) bool {
		return r.HasLocal && !r.OwnBeforeAt.IsZero() && r.OwnBeforeAt.Unix() < t-int64(peerSkew/time.Second) &&
			fingerprint.Distance(r.OwnBefore, r.Local) <= max(fingerprint.Near, r.LocalNear)
	}
	if claim.Stat == webevents.Delete {
		switch {
		case gone:
			return Confirmed
		case r.Status == 200 && lm > 0 && lm < claim.LMD:
			return Refuted
		case r.Status == 200 && unchangedSince(claim.LMD):
			return Refuted
		}
		return Inconclusive
	}
	if r.Status != 200 {
		return Inconclusive
	}
	fp, hasFP := fingerprint.Parse(claim.Fingerprint)
	switch {
	case lm > 0 && lm == claim.LMD:
		return Confirmed
	case lm > 0 && lm < claim.LMD && claim.LPD-claim.LMD > clockDated:
		return Refuted
	case lm > 0 && lm < claim.LPD-int64(skew/time.Second):
		return Refuted
	case hasFP && r.HasFingerprint && fingerprint.Distance(fp, r.Fingerprint) <= max(fingerprint.Near, r.Near):
		// Within what the host's noise moves a page's fingerprint.
		return Confirmed
	case lm == 0 && claim.ETag != "" && r.ETag == claim.ETag:
		return Confirmed
	case unchangedSince(claim.LMD):
		return Refuted
	}
	return Inconclusive
}

// claim is a record waiting for its spot-check poll.
type claim struct {
	from  string
	event webevents.Event
	asked time.Time
}

// checker samples what each merge brought and keeps the claims waiting
// for their polls.
type checker struct {
	cfg     TrustConfig
	mu      sync.Mutex
	rng     *rand.Rand
	samples map[string]*sample // by source, during its merge
	pending map[string]claim   // by URL
	counts  [3]int64           // by verdict
	asked   int64
	rolled  int64 // URLs re-polled because their source was distrusted
}

// sample is a reservoir of one merge's records (Vitter's algorithm R).
type sample struct {
	seen   int
	events []webevents.Event
}

func newChecker(cfg TrustConfig) *checker {
	cfg.defaults()
	return &checker{cfg: cfg, rng: rand.New(rand.NewPCG(rand.Uint64(), rand.Uint64())),
		samples: map[string]*sample{}, pending: map[string]claim{}}
}

// offer puts a batch of a merge from a source through the reservoir.
func (c *checker) offer(from string, batch []webevents.Event) {
	if c.cfg.Checks <= 0 {
		return
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	s := c.samples[from]
	if s == nil {
		s = &sample{}
		c.samples[from] = s
	}
	for i := range batch {
		s.seen++
		if len(s.events) < c.cfg.Checks {
			s.events = append(s.events, batch[i])
		} else if j := c.rng.IntN(s.seen); j < c.cfg.Checks {
			s.events[j] = batch[i]
		}
	}
}

// take ends a merge's sampling and returns the records to check.
func (c *checker) take(from string) []webevents.Event {
	c.mu.Lock()
	defer c.mu.Unlock()
	s := c.samples[from]
	delete(c.samples, from)
	if s == nil {
		return nil
	}
	return s.events
}

// await registers a claim whose poll was asked for; false when one is
// already waiting for that URL.
func (c *checker) await(from string, e webevents.Event, now time.Time) bool {
	c.mu.Lock()
	defer c.mu.Unlock()
	if _, ok := c.pending[e.URL]; ok {
		return false
	}
	c.pending[e.URL] = claim{from: from, event: e, asked: now}
	return true
}

// sent counts a check whose poll the crawler accepted.
func (c *checker) sent() {
	c.mu.Lock()
	c.asked++
	c.mu.Unlock()
}

// sentCount is how many checks were sent.
func (c *checker) sentCount() int64 {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.asked
}

// settle returns the claim waiting for a poll of url, if any.
func (c *checker) settle(url string) (claim, bool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	cl, ok := c.pending[url]
	delete(c.pending, url)
	return cl, ok
}

// expire drops claims whose poll did not come in time.
func (c *checker) expire(now time.Time) []claim {
	c.mu.Lock()
	defer c.mu.Unlock()
	var out []claim
	for u, cl := range c.pending {
		if now.Sub(cl.asked) > c.cfg.CheckTimeout {
			delete(c.pending, u)
			out = append(out, cl)
		}
	}
	return out
}

func (c *checker) count(v Verdict) {
	c.mu.Lock()
	c.counts[v]++
	c.mu.Unlock()
}

// CheckStats counts spot-checks.
type CheckStats struct {
	Asked        int64 `json:"asked"`
	Pending      int   `json:"pending"`
	Confirmed    int64 `json:"confirmed"`
	Refuted      int64 `json:"refuted"`
	Inconclusive int64 `json:"inconclusive"`
	RolledBack   int64 `json:"rolled_back"` // URLs re-polled when their source was distrusted
}

func (c *checker) stats() CheckStats {
	c.mu.Lock()
	defer c.mu.Unlock()
	return CheckStats{Asked: c.asked, Pending: len(c.pending), Confirmed: c.counts[Confirmed],
		Refuted: c.counts[Refuted], Inconclusive: c.counts[Inconclusive], RolledBack: c.rolled}
}

// onMerged is the merger's report of a committed batch from a peer: each
// record counts as a visit of its URL by that peer (the frontier puts the
// next poll off, and learns whether the page changed), and the batch joins
// the merge's spot-check sample.
func (p *Peer) onMerged(from string, batch []webevents.Event, res webevents.MergeResult) {
	p.peers.backs(from, batch, time.Now())
	p.peers.polledBy(from, batch, p.crawler.InScope)
	// Lifecycle violations (spec sections 6 and 10) are polled, not only counted:
	// a few per batch, so a flood of them cannot take every poll.
	for _, u := range res.Polls[:min(len(res.Polls), maxViolationPolls)] {
		p.crawler.Recheck(u)
	}
	// A vouched-for peer's polls count as this peer's own in the change-
	// rate estimates too (issue 19); the others only move due times.
	vouched := p.peers.vouches(from, &p.checks.cfg)
	for i := range batch {
		e := &batch[i]
		h := crawl.Hint{URL: e.URL, Seen: time.Unix(e.LPD, 0), Observed: vouched}
		if e.Stat != webevents.Delete {
			h.Changed = time.Unix(e.LMD, 0)
		}
		p.crawler.Hint(h)
	}
	p.checks.offer(from, batch)
}

// maxViolationPolls bounds the lifecycle violations of one merged batch
// that are polled.
const maxViolationPolls = 16

// askChecks asks the crawler to re-poll the sample of a merge just ended:
// all of it while the source is not yet vouched for, one record once it is
// (a liar that turns later is still caught, at a quarter of the cost).
func (p *Peer) askChecks(from string) {
	now := time.Now()
	sample := p.checks.take(from)
	k := p.checks.cfg.Sample(p.peers.vouches(from, &p.checks.cfg), p.checks.sentCount(), p.crawler.Stats().Polls)
	if len(sample) > k {
		sample = sample[:k]
	}
	for _, e := range sample {
		if !p.checks.await(from, e, now) {
			continue // a check of that URL is already waiting
		}
		if !p.crawler.Recheck(e.URL) {
			p.checks.settle(e.URL) // out of this peer's scope: it cannot check
			continue
		}
		p.checks.sent()
	}
}

// settleCheck judges the claim a check poll was for, if there was one.
func (p *Peer) settleCheck(r crawl.PollResult) {
	cl, ok := p.checks.settle(r.URL)
	if !ok {
		return
	}
	p.judged(cl, Judge(cl.event, r))
}

// judged records a verdict against the claim's source and distrusts the
// source when its refutations pass the bound.
func (p *Peer) judged(cl claim, v Verdict) {
	p.checks.count(v)
	row, newly := p.peers.judge(cl.from, v, &p.checks.cfg, time.Now())
	if row.URL == "" {
		return
	}
	if err := p.stores.Peers.SavePeer(row); err != nil {
		p.log.Error("save peer table", "err", err)
	}
	if v == Refuted {
		p.log.Info("spot-check refuted a claim", "peer", cl.from, "url", cl.event.URL, "stat", cl.event.Stat, "lmd", cl.event.LMD)
	}
	if newly {
		p.log.Warn("peer distrusted: its claims failed spot-checks", "peer", cl.from,
			"confirmed", row.Confirmed, "refuted", row.Refuted)
		go p.rollBack(cl.from)
	}
}

// rollBack re-polls every URL whose current state a distrusted source
// gave: a poll of this peer's own then replaces it (an own poll wins over
// merged records, and Detect treats a differing page as an event).
func (p *Peer) rollBack(from string) {
	var urls []string
	err := p.stores.Events.Current(func(e webevents.Event) error {
		if e.From == from {
			urls = append(urls, e.URL)
		}
		return nil
	})
	if err != nil {
		p.log.Error("roll back a distrusted peer's records", "peer", from, "err", err)
	}
	n := 0
	for _, u := range urls {
		if p.crawler.Recheck(u) {
			n++
		}
	}
	p.checks.mu.Lock()
	p.checks.rolled += int64(n)
	p.checks.mu.Unlock()
	p.log.Info("re-polling what a distrusted peer gave", "peer", from, "urls", n)
}

// withhold says whether this peer's day files leave out records merged
// from a source: one it distrusts or does not yet vouch for. Imports and
// sources no longer in the table are published.
// A peer that never polls (a mirror: rho fixed at 0) cannot check anyone
// and publishes what it merges, as the thesis's mirror does.
func (p *Peer) withhold(from string) bool {
	if p.checks.cfg.Checks <= 0 {
		return false
	}
	return p.peers.withholds(from, &p.checks.cfg)
}

// expireChecks counts the claims whose poll never came as inconclusive.
func (p *Peer) expireChecks(now time.Time) {
	for _, cl := range p.checks.expire(now) {
		p.judged(cl, Inconclusive)
	}
}

// heldEvery is how often Status recounts the store by attribution: a scan
// of every current state.
const heldEvery = 30 * time.Second

// heldCounts returns the current states by who vouches for them, counted
// at most every heldEvery.
func (p *Peer) heldCounts() map[string]int64 {
	p.heldMu.Lock()
	defer p.heldMu.Unlock()
	if p.held != nil && time.Since(p.heldAt) < heldEvery {
		return p.held
	}
	held := map[string]int64{}
	err := p.stores.Events.Current(func(e webevents.Event) error {
		k := e.From
		if k == "" {
			k = "own"
		}
		held[k]++
		return nil
	})
	if err != nil {
		return p.held
	}
	p.held, p.heldAt = held, time.Now()
	return held
}
