package crawl

import (
	"math"
	"time"
)

// Revisit policies (Config.Revisit).
const (
	// RevisitOptimal schedules revisits by each URL's estimated change
	// rate so that a host's expected freshness is the greatest its
	// politeness budget allows (Cho and Garcia-Molina's Lagrangian
	// optimum, optimal.go). The default.
	RevisitOptimal = "optimal"
	// RevisitAdaptive halves a URL's interval on a change and grows it by
	// half without one: the first plan's policy.
	RevisitAdaptive = "adaptive"
	// RevisitUniform revisits every URL every RevisitMin (or as often as
	// the host's budget allows, when that is less often).
	RevisitUniform = "uniform"
)

// The schedule under a budget. Politeness gives each host a request rate
// it may not exceed, B = 1/(download time + delay). The optimum for
// freshness splits B among the host's URLs by the condition of optimal.go,
// ∂F/∂f = μ for a multiplier μ shared by the host's URLs; a URL whose
// λμ ≥ 1 changes too fast for any affordable rate and is visited only at
// RevisitMax. Bounds make it f = clamp(f(λ̂, μ), 1/RevisitMax, 1/RevisitMin),
// which is still the optimum of the bounded problem (the KKT conditions).
//
// μ is refitted to the host every fitEvery, not at every poll: the fit
// groups the estimated rates in bins of 1/64 decade (rateBins), so it
// costs one pass over the host's URLs and a bisection over at most a few
// hundred bins, and its error is that of replacing each rate by its bin's
// mean in the spending sum (about one part in ten thousand of the budget,
// TestRefitSpendsTheBudget).
// Between fits a URL's interval uses the last μ with its own estimate.
//
// What the fit spends: budgetShare of B, less the share explore kept for
// first visits while the host has some, less what URLs without an
// estimate (fewer than two visits after the first) take on their adaptive
// intervals. A URL whose every visit found a change, without
// Last-Modified, has an estimate that is only a floor (the count form
// saturates at ln(2N+1)/Ī); its interval is at most half the last one, a
// probe, until a visit finds no change or λ̂μ ≥ 1.
const (
	fitEvery    = 15 * time.Second
	budgetShare = 0.97 // the rest absorbs the jitter of due times, so revisits are not late
	binsPerDec  = 64
	minRateExp  = -10 // rateBins cover 1e-10 to 1e4 changes per second
	maxRateExp  = 4
	rateBins    = (maxRateExp - minRateExp) * binsPerDec
)

// revisitFit is a host's fitted multiplier.
type revisitFit struct {
	mu     float64   // 0: the budget covers every URL at RevisitMin; +Inf: none beyond RevisitMax
	at     time.Time // when it was fitted; zero: never
	budget float64   // requests per second the fit had to spend on estimated URLs
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
	lambda, ok := st.Rate.rate()
	if !ok {
		c.adapt(st, changed)
		return
	}
	c.refit(h, now)
	st.Interval = c.optimalInterval(lambda, h.fit.mu, st.Rate.saturated(), st.Interval)
}

// optimalInterval is the bounded optimum's interval for a rate lambda at
// multiplier mu; a saturated estimate probes at most half of prev.
func (c *Crawler) optimalInterval(lambda, mu float64, saturated bool, prev time.Duration) time.Duration {
	lo, hi := c.cfg.RevisitMin, c.cfg.RevisitMax
	if mu == 0 {
		return lo
	}
	f := frequencyAt(lambda, mu)
	if f <= 0 {
		return hi
	}
	iv := time.Duration(float64(time.Second) / f)
	if saturated {
		iv = min(iv, prev/2)
	}
	return min(hi, max(lo, iv))
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
	if !h.fit.at.IsZero() && now.Sub(h.fit.at) < fitEvery {
		return
	}
	var bins [rateBins]struct {
		n   float64
		sum float64
	}
	avail := c.budget(h) * budgetShare
	if h.first.Len() > 0 {
		avail *= 1 - c.f.explore
	}
	estimated := 0.0
	for _, st := range h.queue.items {
		lambda, ok := st.Rate.rate()
		if !ok {
			if st.Interval > 0 {
				avail -= 1 / st.Interval.Seconds()
			}
			continue
		}
		b := int(math.Floor(math.Log10(lambda)*binsPerDec)) - minRateExp*binsPerDec
		b = min(rateBins-1, max(0, b))
		bins[b].n++
		bins[b].sum += lambda
		estimated++
	}
	h.fit.at, h.fit.budget = now, avail
	fmin, fmax := 1/c.cfg.RevisitMax.Seconds(), 1/c.cfg.RevisitMin.Seconds()
	switch {
	case estimated*fmax <= avail:
		h.fit.mu = 0
		return
	case estimated*fmin >= avail:
		h.fit.mu = math.Inf(1)
		return
	}
	spend := func(mu float64) float64 {
		s := 0.0
		for _, b := range bins {
			if b.n == 0 {
				continue
			}
			f := frequencyAt(b.sum/b.n, mu)
			s += b.n * min(fmax, max(fmin, f))
		}
		return s
	}
	// spend falls as μ grows, from estimated·fmax to estimated·fmin.
	h.fit.mu = multiplierFor(spend, avail, 48)
}
