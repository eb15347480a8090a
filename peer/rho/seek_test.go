package rho

import (
	"fmt"
	"testing"
)

// Issue 18, item 5: a thousand identities each reporting the most a peer
// may weigh cannot outweigh this crawler by more than MaxPooled.
func TestPooledWeightIsBounded(t *testing.T) {
	pc := probeCount{own: count{polls: 100, fresh: 50}, peers: map[string]count{}}
	for i := range 1000 {
		pc.peers[fmt.Sprint("sybil-", i)] = count{polls: 1_000_000, fresh: 0}
	}
	got := pc.total(10)
	if want := 100 + MaxPooled*100; got.polls != want || got.fresh != 50 {
		t.Fatalf("total %+v, want %d polls and the own 50 fresh", got, want)
	}
	honest := probeCount{own: count{polls: 100, fresh: 50}, peers: map[string]count{"a": {100, 40}, "b": {150, 60}}}
	if got := honest.total(10); got.polls != 350 || got.fresh != 150 {
		t.Fatalf("a small community is not pooled in full: %+v", got)
	}
}
