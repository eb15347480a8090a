package crawl

import (
	"math"
	"time"
)

// changeRate is what a URL's visits have shown of how often it changes,
// for the estimators of Cho and Garcia-Molina ("Estimating frequency of
// change", ACM TOIT 2003), as Castillo (2004, section 2.4) restates them:
//
//   - with Last-Modified at every visit, the exposure form
//     λ = ((X−1) − X/(N·ln(1−X/N))) / T, where T sums, over the visits,
//     the time the page went without a change: from its Last-Modified to
//     the visit when it had changed, the whole interval when not;
//   - without, the bias-reduced visit-count form
//     λ = −ln((N−X+½)/(N+½)) / Ī, with Ī the mean interval between visits.
//
// X counts the visits that found a change among N. It takes 16 bytes per
// URL, kept with the URL's state; the optimal revisit policy (schedule.go)
// schedules by it.
type changeRate struct {
	Visits  uint32  `json:"n,omitempty"` // N: visits after the first
	Changes uint32  `json:"x,omitempty"` // X: those that found a change
	Watched float32 `json:"w,omitempty"` // seconds between visits, summed
	Still   float32 `json:"t,omitempty"` // seconds without a change by Last-Modified, summed; <0 once a visit lacked it
}

// observe adds a visit interval after the previous visit. changed says
// whether the visit found a change; sinceModified is the time from the
// page's Last-Modified to the visit, when known (haveLM).
func (r *changeRate) observe(interval time.Duration, changed bool, sinceModified time.Duration, haveLM bool) {
	if interval <= 0 {
		return
	}
	iv := interval.Seconds()
	r.Visits++
	r.Watched += float32(iv)
	if changed {
		r.Changes++
	}
	switch {
	case r.Still < 0:
	case !haveLM || sinceModified < 0:
		r.Still = -1 // the exposure form needs every visit's date
	case changed:
		r.Still += float32(min(sinceModified.Seconds(), iv))
	default:
		r.Still += float32(iv)
	}
}

// rate returns the estimated changes per second; ok is false before two
// visits.
func (r *changeRate) rate() (float64, bool) {
	n, x := float64(r.Visits), float64(r.Changes)
	if r.Visits < 2 || r.Watched <= 0 {
		return 0, false
	}
	if x == 0 {
		// No change seen: half a change over the time watched, a bound
		// rather than a guess of zero.
		return 0.5 / float64(r.Watched), true
	}
	if r.Still > 0 {
		lm := x - 1
		if x < n {
			lm -= x / (n * math.Log(1-x/n))
		}
		if lm > 0 {
			return lm / float64(r.Still), true
		}
	}
	mean := float64(r.Watched) / n
	return -math.Log((n-x+0.5)/(n+0.5)) / mean, true
}

// saturated says the estimate is only a floor: every visit found a change
// and, without Last-Modified, the count form cannot tell how many.
func (r *changeRate) saturated() bool {
	return r.Still <= 0 && r.Visits > 0 && r.Changes >= r.Visits
}

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
		st.Rate.observe(time.Duration(now-st.Seen)*time.Millisecond, changed, since, !lastMod.IsZero())
	}
	st.Seen = now
}

// RateStats sums up the frontier's change-rate estimates: how many URLs
// fall in each band of estimated changes per day, how many have none yet,
// and the freshness their present revisit intervals should give,
// (1 − e^(−λI)) / (λI) averaged over the URLs with an estimate (Cho and
// Garcia-Molina's freshness of a Poisson page revisited every I).
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
	for _, st := range c.f.urls {
		if st.Gone {
			continue
		}
		r, ok := st.Rate.rate()
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
		if x := r * st.Interval.Seconds(); x > 0 {
			fresh += (1 - math.Exp(-x)) / x
			n++
		}
	}
	if n > 0 {
		s.ExpectedFreshness = fresh / float64(n)
	}
	return s
}
