package rho

import (
	"testing"
	"time"
)

// The simulator calls Observe once per simulated operation, millions of
// times per run: these say what a decision costs.
func benchObserve(b *testing.B, c Controller) {
	outs := phase{n: 4096, mergeEvery: 5, pollYield: 0.4, mergeEv: 3, pollCost: time.Second, mergeCost: 3 * time.Second}.outcomes()
	b.ReportAllocs()
	b.ResetTimer()
	for i := range b.N {
		c.Observe(outs[i&4095])
		_ = c.Rho()
	}
}

func BenchmarkObserveFixed(b *testing.B)    { benchObserve(b, Fixed(0.5)) }
func BenchmarkObserveBangBang(b *testing.B) { benchObserve(b, NewBangBang()) }
func BenchmarkObserveRate(b *testing.B)     { benchObserve(b, NewRate()) }
