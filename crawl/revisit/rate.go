package revisit

import (
	"math"
	"time"
)

// Rate is what a URL's visits have shown of how often it changes,
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
// URL, kept with the URL's state in a crawler's frontier.
type Rate struct {
	Visits  uint32  `json:"n,omitempty"` // N: visits after the first
	Changes uint32  `json:"x,omitempty"` // X: those that found a change
	Watched float32 `json:"w,omitempty"` // seconds between visits, summed
	Still   float32 `json:"t,omitempty"` // seconds without a change by Last-Modified, summed; <0 once a visit lacked it
}

// Observe adds a visit interval after the previous visit. changed says
// whether the visit found a change; sinceModified is the time from the
// page's Last-Modified to the visit, when known (haveLM).
func (r *Rate) Observe(interval time.Duration, changed bool, sinceModified time.Duration, haveLM bool) {
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

// Estimate returns the estimated changes per second; ok is false before two
// visits.
func (r *Rate) Estimate() (float64, bool) {
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

// Saturated says the estimate is only a floor: every visit found a change
// and, without Last-Modified, the count form cannot tell how many.
func (r *Rate) Saturated() bool {
	return r.Still <= 0 && r.Visits > 0 && r.Changes >= r.Visits
}
