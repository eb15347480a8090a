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
	// Censored: the fit took saturated estimates (Rate.Saturated) as what
	// they are, bounds below the rate, so Estimate raises each to the
	// prior's mean beyond its bound.
	Censored bool
}

// PriorFit accumulates estimates into a Prior. The zero value is empty.
type PriorFit struct {
	est, sat moments // estimates; saturated estimates' bounds
}

// moments are the sums of a set of log λ̂ and of their noise.
type moments struct{ n, sum, sumSq, noise float64 }

func (m *moments) add(l, noise, sign float64) {
	m.n += sign
	m.sum += sign * l
	m.sumSq += sign * l * l
	m.noise += sign * noise
	if m.n < 1 {
		*m = moments{} // no rounding left behind
	}
}

func (m *moments) merge(o moments) {
	m.n += o.n
	m.sum += o.sum
	m.sumSq += o.sumSq
	m.noise += o.noise
}

func (m *moments) unmerge(o moments) {
	m.n -= o.n
	m.sum -= o.sum
	m.sumSq -= o.sumSq
	m.noise -= o.noise
	if m.n < 1 {
		*m = moments{} // no rounding left behind
	}
}

// Add takes one page's estimate.
func (p *PriorFit) Add(r Rate) { p.take(r, 1) }

// Remove takes back an estimate Add took: the fit of a set of pages
// some of which are kept on disk keeps their sums, not the pages.
func (p *PriorFit) Remove(r Rate) { p.take(r, -1) }

func (p *PriorFit) take(r Rate, sign float64) {
	lambda, ok := r.Estimate()
	if !ok || lambda <= 0 {
		return
	}
	m := &p.est
	if r.Saturated() {
		m = &p.sat
	}
	if sign < 0 && m.n < 1 {
		return
	}
	m.add(math.Log(lambda), r.noise(), sign)
}

// Merge adds what another fit took.
func (p *PriorFit) Merge(o PriorFit) {
	p.est.merge(o.est)
	p.sat.merge(o.sat)
}

// Unmerge takes back what Merge added: a fit of many sets' sums (a
// crawler's hosts) replaces one set's part when that set is fitted again.
func (p *PriorFit) Unmerge(o PriorFit) {
	p.est.unmerge(o.est)
	p.sat.unmerge(o.sat)
}

// Len is how many estimates the fit holds.
func (p *PriorFit) Len() int { return int(p.est.n + p.sat.n + 0.5) }

// minCensoredFit is how many estimates that are not bounds a fit needs
// before it reads the saturated ones as bounds: with fewer, nothing says
// how far beyond their bounds the rates lie.
const minCensoredFit = 8

// Prior returns the fitted prior; it pulls nothing while fewer than 8
// pages have estimates (a crawler lends such hosts a prior pooled over
// its hosts).
//
// Saturated estimates (every look found a change, no dates) are bounds:
// the page changes at least about that often. Fitted as points, as they
// were, they drew the prior down to them, and where rates spread over
// orders of magnitude a cold start without dates read the fastest pages
// as moderate ones, which the optimum visits the most: lone crawlers
// were 4% to 5% below uniform revisits (docs/performance.md). Where at
// least minCensoredFit estimates are not bounds, the prior is fitted as
// a normal distribution of log λ censored at the bounds, by expectation
// maximisation (each bound replaced by the mean of the fitted normal
// beyond it): Tobit's model, with every bound taken at the bounds' mean,
// since a fit kept as sums (for the URLs parked on disk) has no more.
func (p *PriorFit) Prior() Prior {
	all := p.est
	all.merge(p.sat)
	if all.n < 8 {
		return Prior{}
	}
	if p.sat.n == 0 || p.est.n < minCensoredFit {
		mean := all.sum / all.n
		spread := all.sumSq/all.n - mean*mean
		return Prior{Mean: mean, Var: max(0, spread-all.noise/all.n), Fitted: true}
	}
	e, c := p.est, p.sat
	bound := c.sum / c.n
	mean := e.sum / e.n
	spread := max(e.sumSq/e.n-mean*mean, minSpread)
	for range 200 {
		beyond, beyondSq := truncatedMoments(mean, spread, bound)
		m := (e.sum + c.n*beyond) / all.n
		v := max((e.sumSq+c.n*beyondSq)/all.n-m*m, minSpread)
		done := math.Abs(m-mean) < 1e-9 && math.Abs(v-spread) < 1e-9
		mean, spread = m, v
		if done {
			break
		}
	}
	return Prior{Mean: mean, Var: max(0, spread-e.noise/e.n), Fitted: true, Censored: true}
}

// minSpread keeps a censored fit's variance of log λ from collapsing to
// nothing, where the normal beyond a bound is undefined.
const minSpread = 1e-6

// truncatedMoments are the first and second moments of a normal of the
// mean and variance given, beyond bound.
func truncatedMoments(mean, variance, bound float64) (first, second float64) {
	s := math.Sqrt(variance)
	a := (bound - mean) / s
	mills := inverseMills(a)
	first = mean + s*mills
	v := variance * max(0, 1+a*mills-mills*mills)
	return first, v + first*first
}

// inverseMills is φ(a)/(1−Φ(a)) for the standard normal, by its asymptotic
// series where the tail is too thin for erfc in float64.
func inverseMills(a float64) float64 {
	if a > 8 {
		return a + 1/a - 2/(a*a*a)
	}
	tail := 0.5 * math.Erfc(a/math.Sqrt2)
	return math.Exp(-a*a/2) / math.Sqrt(2*math.Pi) / tail
}

// Estimate is the page's estimate pulled toward the prior's mean, in log
// space, by the share of its deviation that its own noise accounts for.
//
// An estimate from no change seen is not pulled: it is a bound (half a
// change over the time watched), not a noisy measure of the rate, and a
// page watched a while without a change is slower than the mean of pages
// that changed. Pulled up toward them, the slow pages of a cold start got
// 1.7 times the visits the optimum gives them (docs/performance.md).
//
// Under a censored prior a saturated estimate, the bound of a page found
// changed at every look, becomes the prior's mean of log λ beyond that
// bound: the fastest pages are then read as too fast to keep fresh, as
// the optimum reads them, rather than as the moderate pages their bounds
// say, which it visits the most.
func (p Prior) Estimate(r Rate) (float64, bool) {
	lambda, ok := r.Estimate()
	if !ok || lambda <= 0 || !p.Fitted || r.Changes == 0 {
		return lambda, ok
	}
	if p.Censored && r.Saturated() {
		// A bound: the prior's mean beyond it.
		beyond, _ := truncatedMoments(p.Mean, max(p.Var, minSpread), math.Log(lambda))
		return math.Exp(max(beyond, math.Log(lambda))), true
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
