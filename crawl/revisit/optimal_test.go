package revisit

import (
	"math"
	"math/rand/v2"
	"testing"
)

// The optimum against the other policies, on pages whose rates are spread
// log-uniformly over three orders of magnitude: it spends the whole budget,
// beats uniform revisits, which beat revisits proportional to the rate
// (Cho and Garcia-Molina 2003), and leaves the fastest pages unvisited.
func TestOptimalFrequencies(t *testing.T) {
	rng := rand.New(rand.NewPCG(3, 4))
	rates := make([]float64, 2000)
	sum := 0.0
	for i := range rates {
		rates[i] = math.Pow(10, -3+3*rng.Float64()) // 0.001 to 1 changes per second
		sum += rates[i]
	}
	for _, budget := range []float64{20, 100, 500} { // visits per second for 2,000 pages
		freqs, opt := OptimalFrequencies(rates, budget)
		spent, skipped := 0.0, 0
		for _, f := range freqs {
			spent += f
			if f == 0 {
				skipped++
			}
		}
		if math.Abs(spent-budget) > 1e-6*budget {
			t.Errorf("budget %g: spent %g", budget, spent)
		}
		uniform := make([]float64, len(rates))
		proportional := make([]float64, len(rates))
		for i, l := range rates {
			uniform[i] = budget / float64(len(rates))
			proportional[i] = budget * l / sum
		}
		u, p := MeanFreshness(rates, uniform), MeanFreshness(rates, proportional)
		t.Logf("budget %g/s: optimum %.4f, uniform %.4f (%.3f of it), proportional %.4f (%.3f); %d pages never visited",
			budget, opt, u, u/opt, p, p/opt, skipped)
		if !(opt >= u && u >= p) {
			t.Errorf("budget %g: optimum %.4f, uniform %.4f, proportional %.4f: want them in that order", budget, opt, u, p)
		}
		if budget == 20 && skipped == 0 {
			t.Error("a tight budget visits every page, the fastest included")
		}
	}
}

// The Lagrange condition holds: every visited page has the same marginal
// gain per visit.
func TestOptimalMarginalsAreEqual(t *testing.T) {
	rates := []float64{0.001, 0.01, 0.05, 0.2, 1, 5}
	freqs, _ := OptimalFrequencies(rates, 0.5)
	var mu float64
	for i, l := range rates {
		if freqs[i] == 0 {
			continue
		}
		m := marginal(l/freqs[i]) / l
		if mu == 0 {
			mu = m
		} else if math.Abs(m-mu) > 1e-6*mu {
			t.Errorf("page of rate %g: marginal %g, others %g", l, m, mu)
		}
	}
}

// inverseMarginal inverts g over its whole range, where g is flat (near 0
// and for large x) included.
func TestInverseMarginal(t *testing.T) {
	for _, x := range []float64{1e-6, 1e-4, 0.01, 0.1, 0.5, 1, 2, 5, 10, 20, 30} {
		y := marginal(x)
		if y >= 1 {
			continue
		}
		got := inverseMarginal(y)
		if math.Abs(got-x) > 1e-6*x+1e-9 {
			t.Errorf("g⁻¹(g(%g)) = %g", x, got)
		}
	}
	if inverseMarginal(0) != 0 || !math.IsInf(inverseMarginal(1), 1) {
		t.Error("the ends of g⁻¹ are wrong")
	}
}

// MostFrequency is the optimum's greatest frequency over every rate at
// least lambda: at the peak's rate below it, at lambda itself above.
func TestMostFrequency(t *testing.T) {
	mu := 2.0
	peak := 0.0
	for l := 1e-4; l < 1/mu; l *= 1.001 {
		peak = max(peak, FrequencyAt(l, mu))
	}
	if got := MostFrequency(1e-4, mu); math.Abs(got-peak) > 1e-3*peak || math.Abs(got-0.298426/mu) > 1e-5 {
		t.Errorf("most frequency above a slow rate %g, want the peak %g (0.298426/μ)", got, peak)
	}
	if got, want := MostFrequency(0.4, mu), FrequencyAt(0.4, mu); got != want {
		t.Errorf("beyond the peak the most is the rate's own: %g, want %g", got, want)
	}
	if MostFrequency(1, 0) != 0 || MostFrequency(1, math.Inf(1)) != 0 || MostFrequency(0.6, mu) != 0 {
		t.Error("no budget, none, or a rate too fast: the most is 0")
	}
}
