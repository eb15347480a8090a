package revisit

import (
	"math"
	"time"
)

// A schedule under a budget. A crawler may make B requests per second to
// a set of pages (a host, under politeness). The optimum for freshness
// splits B by the condition of optimal.go, ∂F/∂f = μ for one multiplier μ
// shared by the pages; a page whose λμ ≥ 1 changes too fast for any
// affordable rate. Bounds on the interval make it
// f = clamp(f(λ̂, μ), 1/max, 1/min), still the optimum of the bounded
// problem (the KKT conditions). Bins fits μ; Interval turns it into a
// page's next interval.

const (
	binsPerDecade = 64
	minRateExp    = -10 // Bins cover 1e-10 to 1e4 changes per second
	maxRateExp    = 4
	rateBins      = (maxRateExp - minRateExp) * binsPerDecade
)

// Bins groups estimated rates in bins of 1/64 decade, so a fit costs one
// pass over the pages and a bisection over at most a few hundred bins.
// Replacing each rate by its bin's mean in the spending sum errs by about
// one part in ten thousand of the budget (crawl's
// TestRefitSpendsTheBudget). The zero value is empty; it takes 14 KiB.
type Bins struct {
	n, sum [rateBins]float64
	count  float64
}

// Add puts one page of estimated rate lambda (changes per second) in.
func (b *Bins) Add(lambda float64) {
	i := binOf(lambda)
	b.n[i]++
	b.sum[i] += lambda
	b.count++
}

// Remove takes out a page Add put in with the same lambda.
func (b *Bins) Remove(lambda float64) {
	i := binOf(lambda)
	if b.n[i] < 1 {
		return
	}
	b.n[i]--
	b.sum[i] -= lambda
	b.count--
	if b.n[i] < 1 {
		b.sum[i] = 0 // no rounding left behind
	}
}

// Merge adds the pages of o.
func (b *Bins) Merge(o *Bins) {
	if o == nil || o.count == 0 {
		return
	}
	for i := range b.n {
		b.n[i] += o.n[i]
		b.sum[i] += o.sum[i]
	}
	b.count += o.count
}

func binOf(lambda float64) int {
	if lambda <= 0 {
		return 0
	}
	return min(rateBins-1, max(0, int(math.Floor(math.Log10(lambda)*binsPerDecade))-minRateExp*binsPerDecade))
}

// Each calls fn with each bin that holds pages: how many, and their mean
// rate.
func (b *Bins) Each(fn func(n, lambda float64)) {
	for i, n := range b.n {
		if n >= 1 {
			fn(n, b.sum[i]/n)
		}
	}
}

// Len is how many pages were added.
func (b *Bins) Len() int { return int(b.count) }

// Limits bound the visit rates a fit plans, in visits per second. A page
// of rate λ at multiplier μ is visited
//
//	max(Least, min(Most, PerChange·λ, max(Floor, f(λ, μ))))
//
// times per second: the optimum f(λ, μ), no less than Floor, and no more
// than Most or PerChange visits per change (0: no such bound), but never
// less than Least.
type Limits struct {
	// Least is the least rate of any page (crawl: 1/RevisitMax).
	Least float64
	// Floor is the least rate the optimum gives a page that it would
	// visit less often or skip (λμ ≥ 1), unless PerChange holds it lower
	// (0: Least). It keeps looking at the pages an estimate calls too fast
	// to keep fresh: an estimate of a few looks can be wrong, and a page
	// skipped is never looked at again to learn better. A floor of F over
	// n pages costs the optimum at most n·F of its budget.
	Floor float64
	// Most is the greatest rate (crawl: 1/RevisitMin).
	Most      float64
	PerChange float64
}

// FloorShare is the share of a budget that the pages the optimum would
// skip, or visit less often, may take at most: each is visited at least
// FloorShare of an even share of the budget (Limits.Floor), so at most
// 1/FloorShare times slower than uniform revisits. The optimum skips a
// page whose estimate says it changes too fast to keep fresh, but an
// estimate of a few looks can be wrong, by the noise of its looks or by a
// Last-Modified that misleads, and a page put off to the longest interval
// is never looked at again to learn better. The cost is at most this
// share of the freshness the optimum gets from its budget.
const FloorShare = 1.0 / 16

// Rate is how often the limits let a page of rate lambda be visited at
// multiplier mu.
func (l Limits) Rate(lambda, mu float64) float64 {
	f := math.Inf(1)
	if mu > 0 {
		f = FrequencyAt(lambda, mu)
	}
	most := l.Most
	if l.PerChange > 0 {
		most = min(most, l.PerChange*lambda)
	}
	return max(l.Least, min(most, max(l.Floor, f)))
}

// Multiplier returns the μ at which the pages, each visited at l.Rate,
// spend budget requests per second: 0 when the budget covers every page at
// its most, +Inf when it does not cover them at their least. A caller that
// holds visits to a few per change (crawl's worthAVisit) says so in
// l.PerChange, or the visits the bound withholds from slow pages would be
// planned but never sent.
func (b *Bins) Multiplier(budget float64, l Limits) float64 {
	spend := func(mu float64) float64 {
		s := 0.0
		for i, n := range b.n {
			if n > 0 {
				s += n * l.Rate(b.sum[i]/n, mu)
			}
		}
		return s
	}
	if b.count*l.Least >= budget || spend(math.Inf(1)) >= budget {
		return math.Inf(1)
	}
	if spend(0) <= budget {
		return 0
	}
	return multiplierFor(spend, budget, 32)
}

// Adapt is the first plan's interval rule, kept as a policy and for pages
// without an estimate: half the last interval after a change, half as long
// again after none, within [lo, hi].
func Adapt(prev time.Duration, changed bool, lo, hi time.Duration) time.Duration {
	if changed {
		return max(lo, prev/2)
	}
	return min(hi, prev*3/2)
}

// Interval is the bounded optimum's interval, within [lo, hi], for a page
// of estimated rate lambda at multiplier mu, after an interval of prev (0:
// none), with r the visits the estimate rests on. hi is the interval of
// the floor (Limits.Floor), which a page the optimum skips gets.
//
// A saturated estimate (Rate.Saturated: every visit found a change, no
// Last-Modified) is a floor: it probes at most half of prev to learn
// more, unless the floor is already too fast for the budget (λμ ≥ 1),
// when a faster rate would be too; and never more often than the optimum
// visits any page of a rate at least the floor (MostFrequency), since
// what it learns could not warrant more. Without that bound a saturated
// page probed down to lo: on a host whose budget revisits each page every
// 10 s, pages changing ten times a second were planned every second, and
// the plan was six times the budget (docs/performance.md).
//
// While the estimate rests on fewer than weakChanges changes seen, the
// interval at most doubles from one visit to the next: no change in two
// looks a second apart says little, and a page put off to hi on it would
// not be looked at again to learn better; so it reaches hi only on an
// estimate its visits kept confirming. Changes seen are evidence of a
// rate, and an estimate made of them moves at once: a page found changed
// at every look, too fast for the budget, is not visited on the way up
// (at a cold start on a tight budget, such pages took a tenth of the
// requests: docs/performance.md).
func Interval(lambda, mu float64, r Rate, prev, lo, hi time.Duration) time.Duration {
	if mu == 0 {
		return lo
	}
	iv := hi
	if f := FrequencyAt(lambda, mu); f > 0 {
		iv = time.Duration(float64(time.Second) / f)
		if r.Saturated() {
			probe := prev / 2
			if most := MostFrequency(lambda, mu); most > 0 {
				probe = max(probe, time.Duration(float64(time.Second)/most))
			}
			iv = min(iv, probe)
		}
	}
	if prev > 0 && r.Changes < weakChanges {
		iv = min(iv, 2*prev)
	}
	return min(hi, max(lo, iv))
}

// MostFrequency is the most often the optimum at multiplier mu visits a
// page of any rate at least lambda. The optimal frequency, as a function
// of the rate, rises to its peak at λμ = peakLoad and falls to 0 at
// λμ = 1: its most beyond lambda is at the greater of lambda and the
// peak's rate.
func MostFrequency(lambda, mu float64) float64 {
	if !(mu > 0) || math.IsInf(mu, 1) {
		return 0
	}
	return FrequencyAt(max(lambda, peakLoad/mu), mu)
}

// peakLoad is the λμ at which the optimal frequency λ/x(λμ) peaks: where
// x·g′(x) = g(x), that is e^(−x)(x² + x + 1) = 1, at x = 1.79328, and
// g(x) = 0.535161; the frequency there is 0.298426/μ.
const peakLoad = 0.5351613099757833

// weakChanges: an estimate from fewer changes seen grows a page's
// interval by doubling at most.
const weakChanges = 2
