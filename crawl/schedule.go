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
	mu     float64       // 0: the budget covers every URL at RevisitMin; +Inf: none beyond RevisitMax
	at     time.Time     // when it was fitted; zero: never
	budget float64       // requests per second the fit had to spend on estimated URLs
	urls   int           // URLs to revisit when it was fitted
	prior  revisit.Prior // the host's estimates as a whole, which each is pulled toward
	// sent counts the requests to the host; sentAt is sent at the fit.
	// scale plans more than budgetShare of B when the host sent less
	// than that since the last fit: due times that fall together leave
	// the host idle at times, and what it could have sent then is lost.
	sent, sentAt int64
	scale        float64
	// hinted counts the peers' polls that counted as this host's visits
	// (Hint); hintedAt is hinted at the fit. They are looks the budget
	// did not pay for, so the fit plans them on top of it: a peer whose
	// peers poll what it would have polled spends its own budget on the
	// rest, rather than sending less.
	hinted, hintedAt int64
}

// Bounds of revisitFit.scale.
const maxPlanScale = 1.25

// nextInterval sets a URL's revisit interval after a look at it, by the
// crawler's policy. c.mu held.
func (c *Crawler) nextInterval(h *host, st *URLState, changed bool, now time.Time) {
	switch c.cfg.Revisit {
	case RevisitUniform:
		// Every URL alike, as often as the host's budget allows them all
		// (and no more often than RevisitMin): revisits due sooner would
		// only queue, and take the first visits' turns while they wait.
		even := time.Duration(float64(h.queued()+1) / (c.budget(h) * budgetShare) * float64(time.Second))
		st.Interval = min(c.cfg.RevisitMax, max(c.cfg.RevisitMin, even))
		return
	case RevisitAdaptive:
		c.adapt(st, changed)
		return
	}
	c.refit(h, now)
	c.refitGlobal(now)
	lambda, ok := h.fit.prior.Estimate(st.Rate)
	if !ok {
		// Not estimated yet: adaptive, but no more often than uniform
		// revisits of the host's URLs within its budget would come.
		c.adapt(st, changed)
		even := float64(h.queued()+1) / (c.budget(h) * budgetShare)
		if c.global.mu > 0 {
			even = max(even, float64(c.f.size())/c.global.rate)
		}
		st.Interval = min(c.cfg.RevisitMax, max(st.Interval, time.Duration(even*float64(time.Second))))
		return
	}
	// The tighter of the two budgets decides: the host's politeness, or
	// what the crawler as a whole may send.
	mu := max(h.fit.mu, c.global.mu)
	iv := revisit.Interval(lambda, mu, st.Rate, st.Interval, c.cfg.RevisitMin, c.cfg.RevisitMax)
	st.Interval = min(c.cfg.RevisitMax, max(iv, worthAVisit(lambda)))
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
			bins.Merge(pk.bins)
			avail -= pk.spend(share)
		}
		for st := range h.revisits() {
			if lambda, ok := h.fit.prior.Estimate(st.Rate); ok {
				bins.Add(lambda)
			} else if st.Interval > 0 {
				avail -= min(share, 1/st.Interval.Seconds())
			}
		}
	}
	g.mu = bins.Multiplier(avail, 1/c.cfg.RevisitMax.Seconds(), 1/c.cfg.RevisitMin.Seconds(), visitsPerChange)
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

// refit fits the host's μ when the last fit is older than fitEvery.
// c.mu held.
func (c *Crawler) refit(h *host, now time.Time) {
	// Sooner when the URLs to revisit have grown by an eighth: a fit made
	// for the first few would let them take what the others need.
	if grown := h.revisitCount() > h.fit.urls+h.fit.urls/8; !h.fit.at.IsZero() && now.Sub(h.fit.at) < fitEvery && !grown {
		return
	}
	var bins revisit.Bins
	target := c.budget(h) * budgetShare
	if h.fit.scale == 0 {
		h.fit.scale = 1
	}
	if el := now.Sub(h.fit.at).Seconds(); !h.fit.at.IsZero() && el > 0 && h.fit.mu > 0 && !math.IsInf(h.fit.mu, 1) {
		// Only a fit that spent a binding budget learns from what it sent.
		if sent := float64(h.fit.sent-h.fit.sentAt) / el; sent < target {
			h.fit.scale = min(maxPlanScale, h.fit.scale*target/max(sent, target/2))
		} else {
			h.fit.scale = max(1, h.fit.scale*target/sent)
		}
	}
	h.fit.sentAt = h.fit.sent
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
	share := avail / float64(max(1, h.queued()))
	var prior revisit.PriorFit
	for st := range h.revisits() {
		prior.Add(st.Rate)
	}
	if pk := h.parkFit; pk != nil {
		// Parked URLs count by their sums (parking.go).
		prior.Merge(pk.prior)
		bins.Merge(pk.bins)
		avail -= pk.spend(share)
	}
	h.fit.prior = prior.Prior()
	for st := range h.revisits() {
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
	h.fit.mu = bins.Multiplier(avail, 1/c.cfg.RevisitMax.Seconds(), 1/c.cfg.RevisitMin.Seconds(), visitsPerChange)
}
