package crawl

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
// keep it fresh. This is the optimum the revisit policy of issue 19 is
// measured against; it is not the crawler's schedule yet.

// freshness is F(λ, f): the share of time a page of change rate λ,
// visited f times per second at even intervals, is fresh.
func freshness(lambda, f float64) float64 {
	switch {
	case lambda <= 0:
		return 1
	case f <= 0:
		return 0
	}
	x := lambda / f
	return (1 - math.Exp(-x)) / x
}

// marginal is g(x) = 1 − (1+x)e^(−x), increasing from 0 to 1.
func marginal(x float64) float64 { return 1 - (1+x)*math.Exp(-x) }

// inverseMarginal returns the x with g(x) = y, for y in (0, 1).
func inverseMarginal(y float64) float64 {
	lo, hi := 0.0, 1.0
	for marginal(hi) < y {
		hi *= 2
	}
	for range 64 {
		mid := (lo + hi) / 2
		if marginal(mid) < y {
			lo = mid
		} else {
			hi = mid
		}
	}
	return (lo + hi) / 2
}

// frequencyAt is the optimal frequency of a page of rate lambda for the
// multiplier mu.
func frequencyAt(lambda, mu float64) float64 {
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
		return out, meanFreshness(rates, out)
	}
	total := func(mu float64) float64 {
		s := 0.0
		for _, l := range rates {
			s += frequencyAt(l, mu)
		}
		return s
	}
	// Σf falls as μ grows: bracket the μ that spends the budget, then
	// bisect (in log space: μ spans many orders of magnitude).
	lo, hi := 1e-12, 1.0
	for total(hi) > budget {
		hi *= 10
	}
	for total(lo) < budget && lo > 1e-300 {
		lo /= 10
	}
	for range 100 {
		mid := math.Sqrt(lo * hi)
		if total(mid) > budget {
			lo = mid
		} else {
			hi = mid
		}
	}
	for i, l := range rates {
		out[i] = frequencyAt(l, hi)
	}
	return out, meanFreshness(rates, out)
}

// meanFreshness is the mean of F over the pages.
func meanFreshness(rates, freqs []float64) float64 {
	if len(rates) == 0 {
		return 0
	}
	s := 0.0
	for i, l := range rates {
		s += freshness(l, freqs[i])
	}
	return s / float64(len(rates))
}
