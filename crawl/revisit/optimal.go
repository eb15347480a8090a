package revisit

import "math"

// The freshness-optimal revisit frequencies of Cho and Garcia-Molina
// ("Effective page refresh policies", ACM TODS 2003): pages change as
// Poisson processes of rates λᵢ, a crawler may make B visits per second in
// all, and page i visited every 1/fᵢ seconds is fresh a share
// F(λᵢ, fᵢ) = (fᵢ/λᵢ)(1 − e^(−λᵢ/fᵢ)) of the time. Maximising the mean of F
// under Σfᵢ = B (Lagrange) gives, with x = λ/f the changes per interval,
//
//	∂F/∂f = (1 − (1 + x)e^(−x)) / λ = μ
//
// for one μ shared by every page visited: a page whose λμ ≥ 1 is not
// visited at all, as it changes too often for any affordable frequency to
// keep it fresh. Bins and Interval (schedule.go) make it a crawler's
// schedule; OptimalFrequencies is the exact optimum that schedules are
// measured against.

// Freshness is F(λ, f): the share of time a page of change rate λ,
// visited f times per second at even intervals, is fresh.
func Freshness(lambda, f float64) float64 {
	switch {
	case lambda <= 0:
		return 1
	case f <= 0:
		return 0
	}
	x := lambda / f
	return (1 - math.Exp(-x)) / x
}

// marginal is g(x) = 1 − (1+x)e^(−x), increasing from 0 to 1; near 0 by
// its series, where the subtraction would cancel.
func marginal(x float64) float64 {
	if x < 0.01 {
		return x * x * (1.0/2 - x*(1.0/3-x*(1.0/8-x*(1.0/30-x/144))))
	}
	return 1 - (1+x)*math.Exp(-x)
}

// inverseMarginal returns the x with g(x) = y, for y in (0, 1): Newton's
// method on g′(x) = x·e^(−x), from the series g ≈ x²/2 − x³/3 near 0 or
// from 1 − y = (1+x)e^(−x) near 1, kept inside a bracket that halves when
// a step would leave it. The schedule calls it for every fit and poll.
func inverseMarginal(y float64) float64 {
	switch {
	case y <= 0:
		return 0
	case y >= 1:
		return math.Inf(1)
	}
	lo, hi := 0.0, math.Inf(1)
	var x float64
	if y < 0.5 {
		s := math.Sqrt(2 * y)
		x = s * (1 + s/3)
	} else {
		l := -math.Log1p(-y)
		x = l + math.Log1p(l)
	}
	for range 60 {
		g := marginal(x) - y
		if g == 0 {
			return x
		}
		if g < 0 {
			lo = x
		} else {
			hi = x
		}
		next := x - g/(x*math.Exp(-x))
		if !(next > lo && next < hi) { // outside the bracket, or NaN
			if math.IsInf(hi, 1) {
				next = 2*x + 1
			} else {
				next = (lo + hi) / 2
			}
		}
		if math.Abs(next-x) <= 1e-12*x {
			return next
		}
		x = next
	}
	return x
}

// FrequencyAt is the optimal frequency of a page of rate lambda for the
// multiplier mu.
func FrequencyAt(lambda, mu float64) float64 {
	if lambda <= 0 || lambda*mu >= 1 {
		return 0
	}
	return lambda / inverseMarginal(lambda*mu)
}

// OptimalFrequencies returns the visits per second each page should get
// to maximise mean freshness with budget visits per second in all, and
// that mean freshness. Pages of rate 0 never change: they are fresh with
// no visits and get none.
func OptimalFrequencies(rates []float64, budget float64) ([]float64, float64) {
	out := make([]float64, len(rates))
	if budget <= 0 || len(rates) == 0 {
		return out, MeanFreshness(rates, out)
	}
	total := func(mu float64) float64 {
		s := 0.0
		for _, l := range rates {
			s += FrequencyAt(l, mu)
		}
		return s
	}
	mu := multiplierFor(total, budget, 100)
	for i, l := range rates {
		out[i] = FrequencyAt(l, mu)
	}
	return out, MeanFreshness(rates, out)
}

// multiplierFor returns the μ at which spend(μ), which falls as μ grows,
// comes down to budget: it brackets μ, then bisects steps times in log
// space (μ spans many orders of magnitude). Of the two ends it returns
// the one that does not overspend.
func multiplierFor(spend func(mu float64) float64, budget float64, steps int) float64 {
	lo, hi := 1.0, 1.0
	for spend(lo) < budget && lo > 1e-300 {
		lo /= 16
	}
	for spend(hi) > budget && hi < 1e300 {
		hi *= 16
	}
	for range steps {
		mid := math.Sqrt(lo * hi)
		if spend(mid) > budget {
			lo = mid
		} else {
			hi = mid
		}
	}
	return hi
}

// MeanFreshness is the mean of F over the pages.
func MeanFreshness(rates, freqs []float64) float64 {
	if len(rates) == 0 {
		return 0
	}
	s := 0.0
	for i, l := range rates {
		s += Freshness(l, freqs[i])
	}
	return s / float64(len(rates))
}
