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
// URL. Not used for scheduling yet (issue 19 builds on it).
type changeRate struct {
	visits  uint32  // N: visits after the first
	changes uint32  // X: those that found a change
	watched float32 // seconds between visits, summed
	still   float32 // seconds without a change by Last-Modified, summed; <0 once a visit lacked it
}

// observe adds a visit interval after the previous visit. changed says
// whether the visit found a change; sinceModified is the time from the
// page's Last-Modified to the visit, when known (haveLM).
func (r *changeRate) observe(interval time.Duration, changed bool, sinceModified time.Duration, haveLM bool) {
	if interval <= 0 {
		return
	}
	iv := interval.Seconds()
	r.visits++
	r.watched += float32(iv)
	if changed {
		r.changes++
	}
	switch {
	case r.still < 0:
	case !haveLM || sinceModified < 0:
		r.still = -1 // the exposure form needs every visit's date
	case changed:
		r.still += float32(min(sinceModified.Seconds(), iv))
	default:
		r.still += float32(iv)
	}
}

// rate returns the estimated changes per second; ok is false before two
// visits.
func (r *changeRate) rate() (float64, bool) {
	n, x := float64(r.visits), float64(r.changes)
	if r.visits < 2 || r.watched <= 0 {
		return 0, false
	}
	if x == 0 {
		// No change seen: half a change over the time watched, a bound
		// rather than a guess of zero.
		return 0.5 / float64(r.watched), true
	}
	if r.still > 0 {
		lm := x - 1
		if x < n {
			lm -= x / (n * math.Log(1-x/n))
		}
		if lm > 0 {
			return lm / float64(r.still), true
		}
	}
	mean := float64(r.watched) / n
	return -math.Log((n-x+0.5)/(n+0.5)) / mean, true
}
