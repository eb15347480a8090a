package crawl

import (
	"math/rand/v2"
	"testing"
)

func TestHostWeightsFindsWhatALinearWalkFinds(t *testing.T) {
	rng := rand.New(rand.NewPCG(1, 2))
	var tw hostWeights
	hosts := make([]*host, 37)
	for i := range hosts {
		hosts[i] = &host{}
	}
	for round := range 2000 {
		h := hosts[rng.IntN(len(hosts))]
		n := rng.IntN(5)
		if rng.IntN(3) == 0 {
			n = 0
		}
		tw.set(h, n)
		total := 0
		for _, h := range tw.hosts {
			total += tw.w[h.weightNo-1]
		}
		if total != tw.total {
			t.Fatalf("round %d: total %d, weights sum to %d", round, tw.total, total)
		}
		if total == 0 {
			continue
		}
		r := rng.IntN(total)
		want, wantRank := (*host)(nil), r
		for i, h := range tw.hosts {
			if wantRank < tw.w[i] {
				want = h
				break
			}
			wantRank -= tw.w[i]
		}
		if got, rank := tw.find(r); got != want || rank != wantRank {
			t.Fatalf("round %d: find(%d) = host %d rank %d, want host %d rank %d", round, r, got.weightNo, rank, want.weightNo, wantRank)
		}
	}
}
