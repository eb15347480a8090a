package revisit

import "math"

// Prior is what a set of pages' estimates say of their rates as a whole:
// the mean and the variance of log λ across the pages, less the noise of
// each estimate (empirical Bayes). Estimate pulls a page's estimate toward
// the mean by how much of its deviation its noise could explain: where
// the pages truly change alike, every estimate goes to the mean; where
// their rates spread over orders of magnitude, estimates stay as they are.
//
// Why it matters: where every page changes several times per affordable
// interval the optimum is steep (a rate estimated 10% too high gets about
// half the visits), and the noise of estimates from a few dozen visits
// alone would share the budget unevenly among pages that change alike:
// in the simulator, 3% less freshness than uniform revisits on a web of
// equal rates, which this removes (sim/README.md).
type Prior struct {
	Mean   float64 // of log λ
	Var    float64 // of log λ across the pages, beyond the estimates' noise
	Fitted bool    // false: no pull (the zero value, or too few estimates)
}

// PriorFit accumulates estimates into a Prior. The zero value is empty.
type PriorFit struct {
	n, sum, sumSq, noise float64
}

// Add takes one page's estimate.
func (p *PriorFit) Add(r Rate) {
	lambda, ok := r.Estimate()
	if !ok || lambda <= 0 {
		return
	}
	l := math.Log(lambda)
	p.n++
	p.sum += l
	p.sumSq += l * l
	p.noise += r.noise()
}

// Remove takes back an estimate Add took: the fit of a set of pages
// some of which are kept on disk keeps their sums, not the pages.
func (p *PriorFit) Remove(r Rate) {
	lambda, ok := r.Estimate()
	if !ok || lambda <= 0 || p.n < 1 {
		return
	}
	l := math.Log(lambda)
	p.n--
	p.sum -= l
	p.sumSq -= l * l
	p.noise -= r.noise()
	if p.n < 1 {
		*p = PriorFit{} // no rounding left behind
	}
}

// Merge adds what another fit took.
func (p *PriorFit) Merge(o PriorFit) {
	p.n += o.n
	p.sum += o.sum
	p.sumSq += o.sumSq
	p.noise += o.noise
}

// Prior returns the fitted prior; it pulls nothing while fewer than 8
// pages have estimates.
func (p *PriorFit) Prior() Prior {
	if p.n < 8 {
		return Prior{}
	}
	mean := p.sum / p.n
	spread := p.sumSq/p.n - mean*mean
	return Prior{Mean: mean, Var: max(0, spread-p.noise/p.n), Fitted: true}
}

// Estimate is the page's estimate pulled toward the prior's mean, in log
// space, by the share of its deviation that its own noise accounts for.
//
// An estimate from no change seen is not pulled: it is a bound (half a
// change over the time watched), not a noisy measure of the rate, and a
// page watched a while without a change is slower than the mean of pages
// that changed. Pulled up toward them, the slow pages of a cold start got
// 1.7 times the visits the optimum gives them (docs/performance.md).
func (p Prior) Estimate(r Rate) (float64, bool) {
	lambda, ok := r.Estimate()
	if !ok || lambda <= 0 || !p.Fitted || r.Changes == 0 {
		return lambda, ok
	}
	noise := r.noise()
	w := 1.0
	if p.Var+noise > 0 {
		w = p.Var / (p.Var + noise)
	}
	return math.Exp(p.Mean + w*(math.Log(lambda)-p.Mean)), true
}

// noise is the variance of log λ̂ for this estimate: that of the count of
// X changes (about 1/X) plus that of the time they are counted over
// (about 1/N for N visits), each with one more so that an estimate from
// no change at all counts as the weakest. Where every visit finds a
// change, it is 2/(N+1).
func (r *Rate) noise() float64 { return 1/float64(r.Changes+1) + 1/float64(r.Visits+1) }
