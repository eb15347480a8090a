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
