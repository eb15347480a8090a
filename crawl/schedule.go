package crawl

import (
	"math"
	"time"

	"github.com/cocrawl/cocrawl/crawl/revisit"
)

// Revisit policies (Config.Revisit).
const (
	// RevisitOptimal schedules revisits by each URL's estimated change
	// rate so that a host's expected freshness is the greatest its
	// politeness budget allows (Cho and Garcia-Molina's Lagrangian
	// optimum, package revisit). The default.
	RevisitOptimal = "optimal"
	// RevisitAdaptive halves a URL's interval on a change and grows it by
	// half without one: the first plan's policy.
	RevisitAdaptive = "adaptive"
	// RevisitUniform revisits every URL every RevisitMin (or as often as
	// the host's budget allows, when that is less often).
	RevisitUniform = "uniform"
)

// The schedule under a budget (package revisit). Politeness gives each
// host a request rate it may not exceed, B = 1/(download time + delay),
// and the optimum splits it among the host's URLs by their estimated
// change rates, each pulled toward the host's other estimates by as much
// as its own noise explains (revisit.Prior). μ is refitted to the host every fitEvery (or when its URLs
// to revisit grew by an eighth), not at every poll: a pass over the host's
// URLs into revisit.Bins; between fits a URL's interval uses the last μ
// with its own estimate.
//
// What the fit spends: budgetShare of B, less the share explore kept for
// first visits while the host has some, less what URLs without an
// estimate (fewer than two visits after the first) take. Those are
// revisited on their adaptive intervals, but no more often than uniform
// revisits of all the host's URLs would be, so each takes at most an even
// share and the estimated URLs keep at least theirs.
const (
	fitEvery    = 15 * time.Second
	budgetShare = 0.99 // the rest absorbs the jitter of due times, so revisits are not late
)

// revisitFit is a host's fitted multiplier.
type revisitFit struct {
	mu     float64          // 0: the budget covers every URL at RevisitMin; +Inf: none beyond RevisitMax
	floor  float64          // the least visits per second of an estimated URL the optimum would skip (revisit.FloorShare)
	at     time.Time        // when it was fitted; zero: never
	budget float64          // requests per second the fit had to spend on estimated URLs
	urls   int              // URLs to revisit when it was fitted
	held   int              // of them, in memory and held back past their plan (heldBack)
	prior  revisit.Prior    // the host's estimates as a whole, which each is pulled toward; or the crawler's (pooledPrior)
	sums   revisit.PriorFit // what the fit took of the host's estimates, its part in the crawler's pooledPrior
	// sent counts the requests to the host; sentAt is sent at scaledAt,
	// the fit that last set scale. scale plans more than budgetShare of B
	// when the host sent less than that since: due times that fall
	// together leave the host idle at times, and what it could have sent
	// then is lost.
	sent, sentAt int64
	scaledAt     time.Time
	scale        float64
	// hinted counts the peers' polls that counted as this host's visits
	// (Hint); hintedAt is hinted at the fit. They are looks the budget
	// did not pay for, so the fit plans them on top of it: a peer whose
	// peers poll what it would have polled spends its own budget on the
	// rest, rather than sending less.
	hinted, hintedAt int64
	// dropped is the rate, in requests per second, that URLs' longer
	// intervals took out of the plan since the fit (a look that moved an
	// estimate past the point where the optimum skips the URL): more
	// than an eighth of the budget refits sooner.
	dropped float64
}

// Bounds of revisitFit.scale.
const maxPlanScale = 1.25

// limits are the bounds of a fit whose budget gives each URL even
// requests per second, spread evenly.
func (c *Crawler) limits(even float64) revisit.Limits {
	l := revisit.Limits{Least: 1 / c.cfg.RevisitMax.Seconds(), Most: 1 / c.cfg.RevisitMin.Seconds(), PerChange: visitsPerChange}
	// Without a floor, on pages that change 25 times per cycle
	// (docs/performance.md), URLs the optimum skipped made a lone crawler
	// send a fifth of what politeness allowed.
	l.Floor = min(l.Most, max(l.Least, revisit.FloorShare*even))
	return l
}

// longest is the longest interval the optimum gives an estimated URL of
// host h: the floor's (revisit.Limits.Floor), the lower of the host's and,
// when it binds, the crawler's, within [RevisitMin, RevisitMax].
func (c *Crawler) longest(h *host) time.Duration {
	floor := h.fit.floor
	if c.global.mu > 0 && c.global.floor > 0 {
		floor = min(floor, c.global.floor)
	}
	if floor <= 0 {
		return c.cfg.RevisitMax
	}
	return min(c.cfg.RevisitMax, max(c.cfg.RevisitMin, time.Duration(float64(time.Second)/floor)))
}

// nextInterval sets a URL's revisit interval after a look at it, by the
// crawler's policy. c.mu held.
func (c *Crawler) nextInterval(h *host, st *URLState, changed bool, now time.Time) {
	switch c.cfg.Revisit {
	case RevisitUniform:
		// Every URL alike, as often as the host's budget allows them all
		// (and no more often than RevisitMin): revisits due sooner would
		// only queue, and take the first visits' turns while they wait.
		even := time.Duration(float64(h.planned()+1) / (c.budget(h) * budgetShare) * float64(time.Second))
		st.Interval = min(c.cfg.RevisitMax, max(c.cfg.RevisitMin, even))
		return
	case RevisitAdaptive:
		c.adapt(st, changed)
		return
	}
	c.refit(h, now)
	c.refitGlobal(now)
	lambda, ok := h.fit.prior.Estimate(st.Rate)
	if !ok || math.IsInf(max(h.fit.mu, c.global.mu), 1) {
		// Not estimated yet: adaptive, but no more often than uniform
		// revisits of the host's URLs within its budget would come. So
		// too when the last fit left nothing for the estimated URLs (μ
		// +Inf): at a cold start the URLs without an estimate hold the
		// budget at their adaptive rates, and each that gains one would
		// be put off to the floor before a fit sees what it gave back
		// (on 200 pages a host, 137 parked there, all at once).
		c.adapt(st, changed)
		even := float64(h.planned()+1) / (c.budget(h) * budgetShare)
		if c.global.mu > 0 {
			even = max(even, float64(c.f.size())/c.global.rate)
		}
		st.Interval = min(c.cfg.RevisitMax, max(st.Interval, time.Duration(even*float64(time.Second))))
		return
	}
	// A longer interval takes its difference out of the plan until the
	// next fit (refit).
	prev := st.Interval
	st.Interval = c.optimalInterval(h, lambda, st.Rate, prev)
	if prev > 0 && st.Interval > prev {
		h.fit.dropped += 1/prev.Seconds() - 1/st.Interval.Seconds()
	}
}

// optimalInterval is the interval of an estimated URL of host h after an
// interval of prev. c.mu held.
func (c *Crawler) optimalInterval(h *host, lambda float64, r revisit.Rate, prev time.Duration) time.Duration {
	// The tighter of the two budgets decides: the host's politeness, or
	// what the crawler as a whole may send.
	mu := max(h.fit.mu, c.global.mu)
	iv := revisit.Interval(lambda, mu, r, prev, c.cfg.RevisitMin, c.longest(h))
	return min(c.cfg.RevisitMax, max(iv, worthAVisit(lambda)))
}

// advance brings forward the revisits of host h, queued in memory, whose
// interval its new fit shortens by more than a quarter: a fit that plans a
// URL more often than the interval it waits on spends a budget its queue
// does not send (a URL skipped at one fit, as too fast, and planned back
// in at the next, would wait its long interval out). Only revisits due
// one interval after their last look move (not those a backoff, robots.txt,
// a peer's claim or a hint timed), and none moves later: a longer interval
// waits for the next look. Parked revisits wait for their turn, at the
// floor's interval at most (longest). c.mu held.
func (c *Crawler) advance(h *host, now time.Time) {
	var moved []*URLState
	for st := range h.revisits() {
		// Saturated estimates too: a probe's interval (revisit.Interval)
		// is never longer than the optimum's, so none moves, but one a
		// censored prior put off to the floor (revisit.Prior) and a later
		// fit plans back in would otherwise wait the floor's interval
		// out: where a host's estimates that are not bounds hover about
		// the censored fit's least, its prior goes back and forth, and a
		// lone crawler on replaced pages sent 0.85 of its budget.
		if st.Seen == 0 {
			continue
		}
		lambda, ok := h.fit.prior.Estimate(st.Rate)
		if !ok {
			continue
		}
		// The interval this look would have had under the new fit; no
		// earlier interval bounds it (prev 0), as none did when it was
		// set, or it would not be longer.
		iv := c.optimalInterval(h, lambda, revisit.Rate{}, 0)
		if iv >= st.Interval-st.Interval/4 {
			continue
		}
		seen := time.UnixMilli(st.Seen)
		if d := st.Due.Sub(c.revisitAt(st, seen)); d < -time.Millisecond || d > time.Millisecond {
			continue // timed by something else
		}
		moved = append(moved, st)
		st.Interval = iv
	}
	for _, st := range moved { // after the loop: a move reorders the heap
		c.f.setDue(st, c.revisitAt(st, time.UnixMilli(st.Seen)))
	}
	c.advanced.Add(int64(len(moved)))
}

// minChangeChance is the least chance of finding a change that a revisit
// must have: where the budget would allow more (μ near 0, a host with
// few pages or pages that rarely change), the optimum spends it all on
// visits that find nothing, which is load on the site for nothing. At
// 0.15 a page is revisited at most 6.2 times per change, which keeps it
// 0.92 fresh, and a page never seen to change (estimated at half a change
// over the time watched) waits a third of the time watched, so its
// interval grows by a third at each visit: from 1 s to a day in about 40
// visits.
const minChangeChance = 0.15

// visitsPerChange is the most visits per change worthAVisit allows, which
// the fits plan within (revisit.Bins.Multiplier).
var visitsPerChange = -1 / math.Log1p(-minChangeChance)

// worthAVisit is the shortest interval at which a visit to a page of rate
// lambda finds a change with chance minChangeChance.
func worthAVisit(lambda float64) time.Duration {
	if lambda <= 0 {
		return 0
	}
	return time.Duration(-math.Log1p(-minChangeChance) / lambda * float64(time.Second))
}

// globalFit is the crawler-wide budget: what its caller (a peer's request
// budget) and its workers let it send, which politeness alone does not
// know. Config.RequestRate gives it. Without, it binds when hosts that may
// send wait for a request slot: Poll samples, each time it hands out a
// host, whether it waited for one. When enough samples say so, the
// workers hold the crawler back, and the requests it sent since the last
// fit measure what it may send; the fit plans a little more
// (globalHeadroom), so a backlog stays and keeps measuring. Otherwise μ
// is 0 and only the hosts' own fits count. With both, each host takes the
// larger μ: an approximation of the optimum under both constraints (exact
// when one of them binds everywhere).
type globalFit struct {
	mu, rate        float64 // rate: the budget of the last fit, requests per second
	floor           float64 // revisitFit.floor of the crawler-wide fit
	at              time.Time
	sentAt          int64 // the crawler's requests at the last fit
	hintedAt        int64 // its visits by peers' polls (Crawler.hinted) then
	hintedRate      float64
	idle            int64   // Poll's asks that found nothing due, since the fit
	scale           float64 // RequestRate planned times this (1 to maxGlobalScale)
	samples, queued int64   // Poll's samples since, and those of a host that waited for a slot
}

const (
	globalBinds    = 0.2  // share of samples with a host kept waiting that makes the crawler's budget bind
	globalHeadroom = 1.05 // plan this much more than was sent while held back
	maxGlobalScale = 8.0
)

// pooledPrior is every host's estimates together: the prior of a host
// with too few of its own (revisit.PriorFit.Prior needs eight). Without
// it, each estimate of a small host is taken as it came, and on hosts of
// five pages that change alike the noise of three looks' estimates
// shares each host's budget unevenly: 0.978 of uniform revisits'
// freshness, 0.989 with the pool (TestSmallHostsBorrowTheCrawlersPrior;
// live, within the spread of single runs: docs/performance.md, "small
// hosts"). Every estimate counts once, so large hosts weigh most; where
// hosts' rates differ, the pooled variance is large and pulls little.
// c.mu guards it.
type pooledPrior struct {
	sums  revisit.PriorFit
	prior revisit.Prior
	at    time.Time // when prior was fitted from sums
	n     int       // estimates in sums then
}

// fit replaces host h's part in the pool by its new sums and returns the
// prior its estimates are pulled toward: the host's own where it has
// enough, the pool's otherwise. The pool is fitted again every
// minFitEvery, or sooner once its estimates have grown by an eighth (a
// censored fit iterates, and a crawler refits thousands of hosts; at a
// start, the first hosts' few estimates would otherwise stand for all).
func (p *pooledPrior) fit(h *host, sums revisit.PriorFit, now time.Time) revisit.Prior {
	p.sums.Unmerge(h.fit.sums)
	p.sums.Merge(sums)
	h.fit.sums = sums
	if own := sums.Prior(); own.Fitted || sums.Len() == 0 {
		return own
	}
	n := p.sums.Len()
	if p.at.IsZero() || now.Sub(p.at) >= minFitEvery || now.Before(p.at) || n > p.n+p.n/8 {
		p.prior, p.at, p.n = p.sums.Prior(), now, n
	}
	return p.prior
}

// sampleBacklog notes whether host h, handed out at now, had waited for
// a request slot: for longer than half its politeness cycle, and 50 ms.
// c.mu held.
func (c *Crawler) sampleBacklog(h *host, now time.Time) {
	c.global.samples++
	// Half a cycle, but not less than a timer's and a busy machine's
	// slack in waking a worker.
	slack := max(50*time.Millisecond, (h.lastFetch+c.delay(h, h.lastFetch))/2)
	if now.Sub(h.readyAt()) > slack {
		c.global.queued++
	}
}

// refitGlobal fits the crawler-wide μ every fitEvery. c.mu held.
func (c *Crawler) refitGlobal(now time.Time) {
	g := &c.global
	if !g.at.IsZero() && now.Sub(g.at) < c.fitEvery {
		return
	}
	el := now.Sub(g.at).Seconds()
	sent, hinted := c.polls.Load()+c.robotsFetches.Load(), c.hinted.Load()
	binds := !g.at.IsZero() && g.samples >= 20 && float64(g.queued) > globalBinds*float64(g.samples)
	rate := float64(sent-g.sentAt) / el * globalHeadroom
	if c.cfg.RequestRate > 0 {
		// Given: a caller that holds the crawler back by when it calls
		// Poll would make the wait look like a backlog whatever the
		// demand, and what was sent would then measure the demand, not
		// the budget: fewer revisits planned, fewer sent, fewer planned.
		// The caller's asks that found nothing due say the plan is too
		// thin (its peers' polls, which count as visits, came first):
		// plan more, until none is left unanswered.
		if g.scale == 0 {
			g.scale = 1
		}
		if asks := g.samples + g.idle; asks > 0 && !g.at.IsZero() {
			switch idle := float64(g.idle) / float64(asks); {
			case idle > 0.02:
				g.scale = min(maxGlobalScale, g.scale*1.25)
			case idle == 0:
				g.scale = max(1, g.scale*0.95)
			}
		}
		binds, rate = true, c.cfg.RequestRate*budgetShare*g.scale
	}
	if !g.at.IsZero() {
		// Peers' polls, on top (revisitFit.hinted), smoothed over fits.
		g.hintedRate = (g.hintedRate + float64(hinted-g.hintedAt)/el) / 2
		rate += g.hintedRate
	}
	g.at, g.sentAt, g.hintedAt, g.samples, g.queued, g.idle, g.rate = now, sent, hinted, 0, 0, 0, rate
	if !binds || rate <= 0 {
		g.mu = 0
		return
	}
	var bins revisit.Bins
	avail := rate
	for h := range c.f.allHosts() {
		if h.hasFirst() {
			avail *= 1 - c.f.explore // first visits wait too: keep them their share
			break
		}
	}
	share := avail / float64(max(1, c.f.size()))
	for h := range c.f.allHosts() {
		if pk := h.parkFit; pk != nil {
			avail -= pk.spend(share) // at their parked intervals (parkedFit.plannedHz)
		}
		for st := range h.revisits() {
			if c.heldBack(h, st, now) {
				continue
			}
			if lambda, ok := h.fit.prior.Estimate(st.Rate); ok {
				bins.Add(lambda)
			} else if st.Interval > 0 {
				avail -= min(share, 1/st.Interval.Seconds())
			}
		}
	}
	l := c.limits(share)
	g.mu, g.floor = bins.Multiplier(avail, l), l.Floor
}

// budget is the request rate politeness allows the host: one request per
// download time plus delay.
func (c *Crawler) budget(h *host) float64 {
	cycle := h.lastFetch + c.delay(h, h.lastFetch)
	if cycle <= 0 {
		cycle = time.Millisecond
	}
	return 1 / cycle.Seconds()
}

// refitEvery is how often host h is refitted: every fitEvery, or every
// half of the time its budget takes to revisit all its URLs once when
// that is shorter (but not more often than minFitEvery). Each look moves
// an estimate, and where pages change much faster than the host's cycle
// a look can take a page out of the plan (λμ ≥ 1) that the fit counted
// on; until the next fit puts the budget back (advance), it is not sent.
// A fit's pass over the URLs every half cycle costs about two URLs a
// request. Only where the host's own budget decides: where the crawler's
// binds (global.mu), hosts send less than their budgets and a fit a
// half cycle would cost more than their requests (thousands of hosts in a
// scale crawl); where μ is 0 or +Inf no estimate moves the plan.
func (c *Crawler) refitEvery(h *host) time.Duration {
	if !c.ownBudgetDecides(h) {
		return c.fitEvery
	}
	cycle := time.Duration(float64(h.revisitCount()) / c.budget(h) * float64(time.Second))
	return min(c.fitEvery, max(minFitEvery, cycle/2))
}

const minFitEvery = time.Second

// ownBudgetDecides says whether host h's fit decides its URLs'
// intervals: its μ is neither 0 nor +Inf, and the crawler's own budget
// does not bind. c.mu held.
func (c *Crawler) ownBudgetDecides(h *host) bool {
	return c.global.mu == 0 && h.fit.mu > 0 && !math.IsInf(h.fit.mu, 1)
}

// refit fits the host's μ when the last fit is older than refitEvery.
// c.mu held.
func (c *Crawler) refit(h *host, now time.Time) {
	// Sooner when the URLs to revisit have grown by an eighth: a fit made
	// for the first few would let them take what the others need.
	// Sooner too when looks have taken an eighth of the budget out of
	// the plan, a second after the last fit at the soonest, where the
	// host's own budget decides (refitEvery).
	grown := h.revisitCount() > h.fit.urls+h.fit.urls/8
	dropped := h.fit.dropped > h.fit.budget/8 && now.Sub(h.fit.at) >= minFitEvery && c.ownBudgetDecides(h)
	if !h.fit.at.IsZero() && now.Sub(h.fit.at) < c.refitEvery(h) && !grown && !dropped {
		return
	}
	h.fit.dropped = 0
	var bins revisit.Bins
	target := c.budget(h) * budgetShare
	if h.fit.scale == 0 {
		h.fit.scale = 1
	}
	// The scale learns from what the host sent over fitEvery at least:
	// over a shorter time, a few requests' jitter would move it.
	if el := now.Sub(h.fit.scaledAt).Seconds(); h.fit.scaledAt.IsZero() || h.fit.mu == 0 || math.IsInf(h.fit.mu, 1) {
		h.fit.scaledAt, h.fit.sentAt = now, h.fit.sent
	} else if el >= c.fitEvery.Seconds() {
		// Only a fit that spent a binding budget learns from what it sent.
		if sent := float64(h.fit.sent-h.fit.sentAt) / el; sent < target {
			h.fit.scale = min(maxPlanScale, h.fit.scale*target/max(sent, target/2))
		} else {
			h.fit.scale = max(1, h.fit.scale*target/sent)
		}
		h.fit.scaledAt, h.fit.sentAt = now, h.fit.sent
	}
	avail := target * h.fit.scale
	if el := now.Sub(h.fit.at).Seconds(); !h.fit.at.IsZero() && el > 0 {
		avail += float64(h.fit.hinted-h.fit.hintedAt) / el
	}
	h.fit.hintedAt = h.fit.hinted
	if h.hasFirst() {
		avail *= 1 - c.f.explore
	}
	// A URL without an estimate takes what its adaptive interval asks,
	// but no more than an even share of the budget: that is all a queue
	// served in due order gives it when the host is saturated.
	h.fit.held = 0
	var prior revisit.PriorFit
	for st := range h.revisits() {
		if c.heldBack(h, st, now) {
			h.fit.held++
		} else {
			prior.Add(st.Rate)
		}
	}
	share := avail / float64(max(1, h.planned()))
	if pk := h.parkFit; pk != nil {
		// Parked URLs count by their sums (parking.go), and spend what
		// their intervals say: the fit plans the URLs in memory, whose
		// due times it can move (advance).
		prior.Merge(pk.prior)
		avail -= pk.spend(share)
	}
	h.fit.prior = c.pool.fit(h, prior, now)
	for st := range h.revisits() {
		if c.heldBack(h, st, now) {
			continue
		}
		lambda, ok := h.fit.prior.Estimate(st.Rate)
		if !ok {
			if st.Interval > 0 {
				avail -= min(share, 1/st.Interval.Seconds())
			}
			continue
		}
		bins.Add(lambda)
	}
	h.fit.at, h.fit.budget, h.fit.urls = now, avail, h.revisitCount()
	l := c.limits(share)
	h.fit.mu, h.fit.floor = bins.Multiplier(avail, l), l.Floor
	c.advance(h, now)
}

// heldBack says whether a queued URL of host h waits for something other
// than its revisit interval, for longer than two intervals and the
// floor's: a URL deleted and linked again, looked at once more only after
// RevisitMax; robots.txt or a long backoff. The fit neither plans it at
// its rate nor counts it in the host's even share: planned, its rate was
// budget nothing sent. On a web where a tenth of the pages are replaced
// each cycle and the dead ones stay linked, a third of the queue was such
// URLs, and a lone crawler sent 0.75 to 0.84 of what politeness allowed
// (TestChurnDoesNotHoldTheBudget). c.mu held.
func (c *Crawler) heldBack(h *host, st *URLState, now time.Time) bool {
	return st.Due.Sub(now) > max(2*st.Interval, c.longest(h))
}
