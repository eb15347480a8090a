package revisit

import (
	"math"
	"math/rand/v2"
	"testing"
	"time"
)

// visited is the Rate of a page of rate lambda after n visits every
// interval, with Last-Modified.
func visited(rng *rand.Rand, lambda, interval float64, n int) Rate {
	var r Rate
	now, next := 0.0, rng.ExpFloat64()/lambda
	for range n {
		visit := now + interval
		changed, last := false, 0.0
		for next <= visit {
			changed, last = true, next
			next += rng.ExpFloat64() / lambda
		}
		r.Observe(time.Duration(interval*1e9), changed, time.Duration((visit-last)*1e9), true)
		now = visit
	}
	return r
}

// visitedUndated is the Rate of a page of rate lambda after n visits
// every interval, without Last-Modified.
func visitedUndated(rng *rand.Rand, lambda, interval float64, n int) Rate {
	var r Rate
	next := rng.ExpFloat64() / lambda
	for i := 1; i <= n; i++ {
		visit, changed := float64(i)*interval, false
		for next <= visit {
			changed = true
			next += rng.ExpFloat64() / lambda
		}
		r.Observe(time.Duration(interval*1e9), changed, 0, false)
	}
	return r
}

// Pages without dates whose rates spread over three orders of magnitude,
// most of them changed at every look: a fit that takes the saturated
// estimates as the bounds they are puts the prior's mean near the truth's,
// and raises those estimates toward their rates. Taken as points, as
// before, they drew the mean an order of magnitude low.
func TestPriorCensoredBySaturatedEstimates(t *testing.T) {
	rng := rand.New(rand.NewPCG(3, 4))
	var rates []Rate
	var truth []float64
	var fit PriorFit
	trueMean, pointsMean, estimated := 0.0, 0.0, 0
	for range 400 {
		lambda := 0.5 * math.Pow(10, 3*(rng.Float64()-0.5))
		r := visitedUndated(rng, lambda, 10, 6) // five changes per look at the centre
		rates, truth = append(rates, r), append(truth, lambda)
		trueMean += math.Log(lambda) / 400
		fit.Add(r)
		if l, ok := r.Estimate(); ok {
			pointsMean += math.Log(l)
			estimated++
		}
	}
	pointsMean /= float64(estimated)
	p := fit.Prior()
	if !p.Censored {
		t.Fatalf("prior %+v: not censored", p)
	}
	saturated, rawErr, pulledErr := 0, 0.0, 0.0
	for i, r := range rates {
		if !r.Saturated() {
			continue
		}
		saturated++
		a, _ := r.Estimate()
		b, _ := p.Estimate(r)
		if b < a {
			t.Fatalf("a bound %g was lowered to %g", a, b)
		}
		rawErr += math.Pow(math.Log(a/truth[i]), 2)
		pulledErr += math.Pow(math.Log(b/truth[i]), 2)
	}
	t.Logf("%d of 400 saturated; true mean of log λ %.3f, censored fit %+v, as points %.3f; squared log error of the saturated %.3f, pulled %.3f",
		saturated, trueMean, p, pointsMean, rawErr/float64(saturated), pulledErr/float64(saturated))
	if saturated < 150 {
		t.Fatalf("only %d saturated estimates", saturated)
	}
	if math.Abs(p.Mean-trueMean) > 0.5 {
		t.Errorf("censored fit's mean %.3f, the truth's %.3f", p.Mean, trueMean)
	}
	if pulledErr > 0.6*rawErr {
		t.Errorf("the saturated estimates' squared log error went from %.3f to %.3f", rawErr, pulledErr)
	}

	// Fewer than minCensoredFit estimates that are not bounds: nothing says
	// how far beyond them the rates go, and the fit takes them as points.
	var few PriorFit
	for i := range 20 {
		few.Add(Rate{Visits: 5, Changes: 5, Watched: float32(40 + i)})
	}
	for range minCensoredFit - 1 {
		few.Add(Rate{Visits: 5, Changes: 2, Watched: 50})
	}
	if p := few.Prior(); !p.Fitted || p.Censored {
		t.Errorf("prior of %d estimates, %d of them bounds: %+v", 20+minCensoredFit-1, 20, p)
	}
}

// A censored fit of any mixture, however degenerate (estimates all
// alike, bounds far beyond or below them), gives finite numbers, and
// never lowers a bound.
func TestPriorCensoredFitIsFinite(t *testing.T) {
	rng := rand.New(rand.NewPCG(5, 6))
	for trial := range 2000 {
		var fit PriorFit
		alike := trial%3 == 0
		for range 8 + rng.IntN(40) {
			n := uint32(2 + rng.IntN(30))
			x := uint32(1 + rng.IntN(int(n)-1))
			w := float32(math.Pow(10, 6*rng.Float64()-3))
			if alike {
				x, w = 1, 10
			}
			fit.Add(Rate{Visits: n, Changes: x, Watched: w, Still: -1})
		}
		var bounds []Rate
		for range 1 + rng.IntN(40) {
			n := uint32(2 + rng.IntN(30))
			r := Rate{Visits: n, Changes: n, Watched: float32(math.Pow(10, 8*rng.Float64()-4)), Still: -1}
			bounds = append(bounds, r)
			fit.Add(r)
		}
		p := fit.Prior()
		if !p.Censored || math.IsNaN(p.Mean) || math.IsInf(p.Mean, 0) || math.IsNaN(p.Var) || math.IsInf(p.Var, 0) || p.Var < 0 {
			t.Fatalf("trial %d: prior %+v", trial, p)
		}
		for _, r := range bounds {
			raw, _ := r.Estimate()
			got, ok := p.Estimate(r)
			if !ok || math.IsNaN(got) || math.IsInf(got, 0) || got < raw {
				t.Fatalf("trial %d: prior %+v took the bound %g of %+v to %g", trial, p, raw, r, got)
			}
		}
	}
}

func logSpread(xs []float64) float64 {
	s, q := 0.0, 0.0
	for _, x := range xs {
		s += math.Log(x)
		q += math.Log(x) * math.Log(x)
	}
	n := float64(len(xs))
	return math.Sqrt(max(0, q/n-(s/n)*(s/n)))
}

// Pages that change alike: the prior pulls their noisy estimates
// together. Pages spread over three orders of magnitude keep their spread.
// Both come closer to the truth (the squared error of log λ falls).
func TestPriorPullsOnlyNoise(t *testing.T) {
	rng := rand.New(rand.NewPCG(7, 8))
	for _, tt := range []struct {
		name      string
		spread    float64 // orders of magnitude
		minSpread float64 // of the pulled estimates, as a share of the raw ones'
		maxSpread float64
	}{
		{"alike", 0, 0, 1.0 / 3},
		{"spread", 3, 0.9, 1},
	} {
		var rates []Rate
		var truth []float64
		var fit PriorFit
		for range 500 {
			lambda := 0.1 * math.Pow(10, tt.spread*(rng.Float64()-0.5))
			r := visited(rng, lambda, 20, 30) // two changes per visit at the centre
			rates, truth = append(rates, r), append(truth, lambda)
			fit.Add(r)
		}
		p := fit.Prior()
		var raw, pulled []float64
		rawErr, pulledErr := 0.0, 0.0
		for i, r := range rates {
			a, _ := r.Estimate()
			b, _ := p.Estimate(r)
			raw, pulled = append(raw, a), append(pulled, b)
			rawErr += math.Pow(math.Log(a/truth[i]), 2)
			pulledErr += math.Pow(math.Log(b/truth[i]), 2)
		}
		rs, ps := logSpread(raw), logSpread(pulled)
		t.Logf("%s: prior %+v; spread of log estimates %.3f, pulled %.3f; squared log error %.4f, pulled %.4f",
			tt.name, p, rs, ps, rawErr/500, pulledErr/500)
		if ps < tt.minSpread*rs || ps > tt.maxSpread*rs {
			t.Errorf("%s: spread of log estimates %.3f became %.3f", tt.name, rs, ps)
		}
		if pulledErr >= rawErr {
			t.Errorf("%s: the pull took the estimates away from the truth", tt.name)
		}
	}
	if p := (&PriorFit{}).Prior(); p.Fitted {
		t.Error("a prior of no estimates pulls")
	}
}

// A fit that takes some estimates out again, or merges two fits, is the
// fit of what is left, or of both: what a host with URLs on disk keeps.
func TestPriorFitAndBinsAreAdditive(t *testing.T) {
	rate := func(i int) Rate {
		if i%5 == 0 { // saturated: a bound
			return Rate{Visits: uint32(3 + i%4), Changes: uint32(3 + i%4), Watched: float32(100 * (1 + i%13))}
		}
		return Rate{Visits: uint32(10 + i), Changes: uint32(1 + i%7), Watched: float32(100 * (1 + i%13))}
	}
	var all, some, rest PriorFit
	var allBins, someBins, restBins Bins
	for i := range 40 {
		r := rate(i)
		lambda, _ := r.Estimate()
		all.Add(r)
		allBins.Add(lambda)
		if i%3 == 0 {
			some.Add(r)
			someBins.Add(lambda)
		} else {
			rest.Add(r)
			restBins.Add(lambda)
		}
	}
	merged := some
	merged.Merge(rest)
	mergedBins := someBins
	mergedBins.Merge(&restBins)
	left, leftBins := all, allBins
	for i := range 40 {
		if i%3 == 0 {
			r := rate(i)
			lambda, _ := r.Estimate()
			left.Remove(r)
			leftBins.Remove(lambda)
		}
	}
	near := func(a, b Prior) bool {
		return a.Fitted == b.Fitted && a.Censored == b.Censored && math.Abs(a.Mean-b.Mean) < 1e-6 && math.Abs(a.Var-b.Var) < 1e-6
	}
	if !all.Prior().Censored {
		t.Errorf("prior %+v of bounds and estimates is not censored", all.Prior())
	}
	if !near(merged.Prior(), all.Prior()) || !near(left.Prior(), rest.Prior()) {
		t.Errorf("merged %+v, all %+v; left %+v, rest %+v", merged.Prior(), all.Prior(), left.Prior(), rest.Prior())
	}
	// A pool of fits (a crawler's hosts) that has one taken out again is
	// the fit of the others; with every one taken out, empty.
	unmerged := merged
	unmerged.Unmerge(some)
	if !near(unmerged.Prior(), rest.Prior()) || unmerged.Len() != rest.Len() {
		t.Errorf("unmerged %+v (%d), rest %+v (%d)", unmerged.Prior(), unmerged.Len(), rest.Prior(), rest.Len())
	}
	if unmerged.Unmerge(rest); unmerged.Len() != 0 || unmerged.Prior().Fitted {
		t.Errorf("a pool with every fit taken out holds %d estimates", unmerged.Len())
	}
	lim := Limits{Least: 1e-6, Most: 10}
	for _, budget := range []float64{0.01, 0.1, 1} {
		if a, b := mergedBins.Multiplier(budget, lim), allBins.Multiplier(budget, lim); math.Abs(a-b) > 1e-9*b {
			t.Errorf("budget %g: merged bins give μ %g, all %g", budget, a, b)
		}
		if a, b := leftBins.Multiplier(budget, lim), restBins.Multiplier(budget, lim); math.Abs(a-b) > 1e-6*b {
			t.Errorf("budget %g: bins left give μ %g, the rest %g", budget, a, b)
		}
	}
	if leftBins.Len() != restBins.Len() || mergedBins.Len() != 40 {
		t.Errorf("lengths %d, %d, %d", leftBins.Len(), restBins.Len(), mergedBins.Len())
	}
}
