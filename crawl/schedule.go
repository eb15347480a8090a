package crawl

import (
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
// change rates. μ is refitted to the host every fitEvery (or when its URLs
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
	mu     float64   // 0: the budget covers every URL at RevisitMin; +Inf: none beyond RevisitMax
	at     time.Time // when it was fitted; zero: never
	budget float64   // requests per second the fit had to spend on estimated URLs
	urls   int       // URLs to revisit when it was fitted
}

// nextInterval sets a URL's revisit interval after a look at it, by the
// crawler's policy. c.mu held.
func (c *Crawler) nextInterval(h *host, st *URLState, changed bool, now time.Time) {
	switch c.cfg.Revisit {
	case RevisitUniform:
		st.Interval = c.cfg.RevisitMin
		return
	case RevisitAdaptive:
		c.adapt(st, changed)
		return
	}
	lambda, ok := st.Rate.Estimate()
	if !ok {
		// Not estimated yet: adaptive, but no more often than uniform
		// revisits of the host's URLs within its budget would come.
		c.adapt(st, changed)
		even := time.Duration(float64(h.queued()+1) / (c.budget(h) * budgetShare) * float64(time.Second))
		st.Interval = min(c.cfg.RevisitMax, max(st.Interval, even))
		return
	}
	c.refit(h, now)
	st.Interval = revisit.Interval(lambda, h.fit.mu, st.Rate.Saturated(), st.Interval, c.cfg.RevisitMin, c.cfg.RevisitMax)
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
	if grown := h.queue.Len() > h.fit.urls+h.fit.urls/8; !h.fit.at.IsZero() && now.Sub(h.fit.at) < fitEvery && !grown {
		return
	}
	var bins revisit.Bins
	avail := c.budget(h) * budgetShare
	if h.first.Len() > 0 {
		avail *= 1 - c.f.explore
	}
	// A URL without an estimate takes what its adaptive interval asks,
	// but no more than an even share of the budget: that is all a queue
	// served in due order gives it when the host is saturated.
	share := avail / float64(max(1, h.queued()))
	for _, st := range h.queue.items {
		lambda, ok := st.Rate.Estimate()
		if !ok {
			if st.Interval > 0 {
				avail -= min(share, 1/st.Interval.Seconds())
			}
			continue
		}
		bins.Add(lambda)
	}
	h.fit.at, h.fit.budget, h.fit.urls = now, avail, h.queue.Len()
	h.fit.mu = bins.Multiplier(avail, 1/c.cfg.RevisitMax.Seconds(), 1/c.cfg.RevisitMin.Seconds())
}
