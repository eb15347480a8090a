package revisit

import (
	"math"
	"testing"
)

// A floor keeps the pages the optimum would skip in the plan, at the
// floor, and the fit still spends the budget on all of them.
func TestMultiplierWithAFloor(t *testing.T) {
	var b Bins
	for i := range 100 {
		b.Add(math.Pow(10, -2+3*float64(i)/99)) // 0.01 to 10 changes a second
	}
	const budget = 2.0
	spent := func(l Limits, mu float64) (s float64, floored int) {
		b.Each(func(n, lambda float64) {
			f := l.Rate(lambda, mu)
			s += n * f
			if FrequencyAt(lambda, mu) < l.Floor && f == l.Floor {
				floored += int(n)
			}
		})
		return s, floored
	}
	free := Limits{Least: 1e-7, Most: 100}
	mu := b.Multiplier(budget, free)
	if s, _ := spent(free, mu); math.Abs(s-budget) > 1e-3*budget {
		t.Fatalf("without a floor the fit spends %g of %g", s, budget)
	}
	skipped := 0
	b.Each(func(n, lambda float64) {
		if lambda*mu >= 1 {
			skipped += int(n)
		}
	})
	if skipped == 0 {
		t.Fatal("no page is too fast for this budget: not the web meant")
	}
	floor := free
	floor.Floor = budget / 16 / 100
	mu = b.Multiplier(budget, floor)
	s, floored := spent(floor, mu)
	if math.Abs(s-budget) > 1e-3*budget {
		t.Errorf("with a floor the fit spends %g of %g", s, budget)
	}
	if floored < skipped {
		t.Errorf("%d pages at the floor, want at least the %d the optimum skips", floored, skipped)
	}
	// A budget that cannot cover every page at its floor: +Inf.
	if mu := b.Multiplier(1e-2, floor); !math.IsInf(mu, 1) {
		t.Errorf("a budget below the floors fitted μ = %g", mu)
	}
}
