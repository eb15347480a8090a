package memlimit

import (
	"context"
	"math"
	"runtime"
	"runtime/debug"
	"testing"
	"time"
)

func TestLimitFor(t *testing.T) {
	h := Headroom{Share: 0.25, Min: 256 << 20}
	for _, c := range []struct {
		live, outside, want int64
	}{
		{0, 10 << 20, 10<<20 + 256<<20},         // the minimum
		{100 << 20, 10 << 20, 10<<20 + 356<<20}, // still the minimum
		{4 << 30, 50 << 20, 50<<20 + 5*(1<<30)}, // a quarter of 4 GiB
		{1 << 30, 0, 1<<30 + 256<<20},           // a quarter is the minimum
	} {
		if got := limitFor(c.live, c.outside, h); got != c.want {
			t.Errorf("limitFor(%d, %d) = %d, want %d", c.live, c.outside, got, c.want)
		}
	}
}

// TestKeepFollowsTheLiveHeap holds a live heap and checks that the limit
// set is above it by the headroom, then is lifted when the context ends.
func TestKeepFollowsTheLiveHeap(t *testing.T) {
	t.Setenv("GOMEMLIMIT", "")
	before := debug.SetMemoryLimit(-1)
	defer debug.SetMemoryLimit(before)
	held := make([][]byte, 64)
	for i := range held {
		held[i] = make([]byte, 1<<20)
	}
	runtime.GC()
	ctx, cancel := context.WithCancel(context.Background())
	Keep(ctx, Headroom{Share: 0.5, Min: 8 << 20, Every: 10 * time.Millisecond})
	l := debug.SetMemoryLimit(-1)
	if l != Limit() {
		t.Fatalf("runtime limit %d, Limit() %d", l, Limit())
	}
	// 64 MiB live: the limit holds them, half of them again as headroom
	// (at least), and is not Go's default of no limit.
	if l < 96<<20 || l == math.MaxInt64 {
		t.Fatalf("limit %d MiB with 64 MiB live and a headroom of half", l>>20)
	}
	if l > 1<<30 {
		t.Fatalf("limit %d MiB: far above the live heap", l>>20)
	}
	cancel()
	deadline := time.Now().Add(5 * time.Second)
	for Limit() != 0 && time.Now().Before(deadline) {
		time.Sleep(5 * time.Millisecond)
	}
	if got := debug.SetMemoryLimit(-1); got != math.MaxInt64 {
		t.Fatalf("limit after the end: %d, want none", got)
	}
	runtime.KeepAlive(held)
}

func TestKeepLeavesAnOperatorsLimit(t *testing.T) {
	t.Setenv("GOMEMLIMIT", "1GiB")
	before := debug.SetMemoryLimit(-1)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	Keep(ctx, Default)
	if got := debug.SetMemoryLimit(-1); got != before || Limit() != 0 {
		t.Fatalf("limit %d with GOMEMLIMIT set, want the runtime's own %d", got, before)
	}
}
