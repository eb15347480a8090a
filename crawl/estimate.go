package crawl

import (
	"math"
	"time"
)

// observeLook feeds a look at the URL, at at, to its change-rate
// estimate: the interval since the previous look, whether the look found a
// change, and the page's Last-Modified (lastMod; zero when unknown). A
// successful poll is a look, and so is a vouched-for peer's record (its
// lpd and lmd). c.mu held.
func (c *Crawler) observeLook(st *URLState, at time.Time, changed bool, lastMod time.Time) {
	now := at.UnixMilli()
	if st.Seen > 0 && now > st.Seen {
		since := time.Duration(-1)
		if !lastMod.IsZero() {
			// An HTTP date (and a record's lmd) is cut to the second: the
			// change came half a second after it on average.
			since = max(0, at.Sub(lastMod)-500*time.Millisecond)
		}
		st.Rate.Observe(time.Duration(now-st.Seen)*time.Millisecond, changed, since, !lastMod.IsZero())
	}
	st.Seen = now
}

// RateStats sums up the frontier's change-rate estimates: how many URLs
// fall in each band of estimated changes per day, how many have none yet,
// and the freshness their present revisit intervals should give,
// (1 − e^(−λI)) / (λI) averaged over the URLs with an estimate (Cho and
// Garcia-Molina's freshness of a Poisson page revisited every I), with λ
// the estimate as the plan takes it, pulled toward its host's prior. Parked
// URLs count in the bands by the rates their hosts' fits keep of them
// (to 1/64 decade), not in the freshness.
type RateStats struct {
	PerDay            map[string]int `json:"per_day"` // band of changes per day: URLs
	Unknown           int            `json:"unknown"`
	ExpectedFreshness float64        `json:"expected_freshness"`
}

// rateBands are the bands of RateStats.PerDay, in changes per day.
var rateBands = []struct {
	name  string
	below float64
}{{"<0.1", 0.1}, {"0.1-1", 1}, {"1-10", 10}, {"10-100", 100}, {">=100", math.Inf(1)}}

// RateStats walks the frontier (O(URLs)); callers cache it.
func (c *Crawler) RateStats() RateStats {
	s := RateStats{PerDay: map[string]int{}}
	c.mu.Lock()
	defer c.mu.Unlock()
	var fresh float64
	n := 0
	for st := range c.f.states() {
		if st.Gone {
			continue
		}
		r, ok := st.Rate.Estimate()
		if !ok {
			s.Unknown++
			continue
		}
		perDay := r * 86400
		for _, b := range rateBands {
			if perDay < b.below {
				s.PerDay[b.name]++
				break
			}
		}
		// The freshness the plan expects is that of the rates it planned
		// with: each estimate pulled toward its host's prior. A raw
		// estimate of a few looks is noisy, and freshness is convex in
		// the rate, so raw estimates expect more than the plan gives.
		if h := c.f.lookup(hostKey(st.URL)); h != nil {
			if pulled, ok := h.fit.prior.Estimate(st.Rate); ok {
				r = pulled
			}
		}
		if x := r * st.Interval.Seconds(); x > 0 {
			fresh += (1 - math.Exp(-x)) / x
			n++
		}
	}
	if n > 0 {
		s.ExpectedFreshness = fresh / float64(n)
	}
	if c.f.spill != nil {
		s.Unknown += c.f.spill.ranked.Len() // never polled, on disk
	}
	for h := range c.f.allHosts() {
		pk := h.parkFit
		if pk == nil || pk.n == 0 {
			continue
		}
		banded := 0
		if pk.bins != nil {
			pk.bins.Each(func(n, lambda float64) {
				for _, b := range rateBands {
					if lambda*86400 < b.below {
						s.PerDay[b.name] += int(n)
						banded += int(n)
						break
					}
				}
			})
		}
		s.Unknown += max(0, pk.n-banded)
	}
	return s
}

// ChangeRate returns a URL's estimated changes per second and the visits
// the estimate rests on; ok is false while it has none (fewer than two
// visits after the first). A parked URL's state is read from the store.
func (c *Crawler) ChangeRate(rawURL string) (perSecond float64, visits int, ok bool) {
	u, err := Normalize(nil, rawURL)
	if err != nil {
		return 0, 0, false
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	st := c.f.get(u)
	if st == nil {
		parked, ok := c.f.lookParked(u)
		if !ok {
			return 0, 0, false
		}
		st = &parked
	}
	r, ok := st.Rate.Estimate()
	return r, int(st.Rate.Visits), ok
}
