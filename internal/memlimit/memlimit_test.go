package memlimit

import (
	"context"
	"os"
	"path/filepath"
	"runtime"
	"runtime/debug"
	"strings"
	"testing"
	"time"
)

func TestPercentFor(t *testing.T) {
	h := Headroom{Share: 0.25, Min: 256 << 20}
	for _, c := range []struct {
		live int64
		want int
	}{
		{0, 6400},        // the minimum over Go's smallest heap
		{128 << 20, 200}, // still the minimum: twice the live heap
		{1 << 30, 25},    // a quarter is the minimum
		{4 << 30, 25},    // a quarter
		{1 << 40, 25},
	} {
		if got := percentFor(c.live, h); got != c.want {
			t.Errorf("percentFor(%d MiB) = %d, want %d", c.live>>20, got, c.want)
		}
	}
	if got := percentFor(1<<30, Headroom{Share: 0.001}); got != 1 {
		t.Errorf("a headroom under 1%%: GOGC %d, want 1", got)
	}
}

// gcPercent reads the runtime's GOGC (setting it back at once).
func gcPercent() int {
	p := debug.SetGCPercent(100)
	debug.SetGCPercent(p)
	return p
}

// TestKeepFollowsTheLiveHeap holds a live heap and checks that the GOGC
// set lets it grow by the headroom, then that the GOGC found is put back
// when the context ends.
func TestKeepFollowsTheLiveHeap(t *testing.T) {
	t.Setenv("GOGC", "")
	t.Setenv("GOMEMLIMIT", "")
	before := gcPercent()
	defer debug.SetGCPercent(before)
	held := make([][]byte, 64)
	for i := range held {
		held[i] = make([]byte, 1<<20)
	}
	runtime.GC()
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	Keep(ctx, Headroom{Share: 0.5, Min: 8 << 20, Every: 10 * time.Millisecond})
	// 64 MiB live and more: half of it is more than the minimum.
	if p := gcPercent(); p != Percent() || p < 49 || p > 50 {
		t.Fatalf("GOGC %d, Percent() %d, want 50 with 64 MiB live and a headroom of half", p, Percent())
	}
	cancel()
	checkPutBack(t, before)
	runtime.KeepAlive(held)
}

// TestKeepsEndingInAnyOrderPutBackTheGOGCFound runs two Keeps at once
// (two peers in one process) and ends the first started last.
func TestKeepsEndingInAnyOrderPutBackTheGOGCFound(t *testing.T) {
	t.Setenv("GOGC", "")
	t.Setenv("GOMEMLIMIT", "")
	before := gcPercent()
	defer debug.SetGCPercent(before)
	h := Headroom{Share: 0.5, Min: 8 << 20, Every: time.Millisecond}
	first, endFirst := context.WithCancel(context.Background())
	second, endSecond := context.WithCancel(context.Background())
	Keep(first, h)
	Keep(second, h)
	endSecond()
	time.Sleep(20 * time.Millisecond)
	if Percent() == 0 {
		t.Fatal("the first Keep's GOGC was dropped when the second ended")
	}
	endFirst()
	checkPutBack(t, before)
}

// checkPutBack waits for the last Keep to end and checks that it put back
// the GOGC found.
func checkPutBack(t *testing.T, found int) {
	t.Helper()
	deadline := time.Now().Add(5 * time.Second)
	for Percent() != 0 && time.Now().Before(deadline) {
		time.Sleep(5 * time.Millisecond)
	}
	if got := gcPercent(); got != found {
		t.Fatalf("GOGC after the end: %d, want the %d found", got, found)
	}
}

func TestKeepLeavesAnOperatorsSetting(t *testing.T) {
	for _, env := range []string{"GOGC", "GOMEMLIMIT"} {
		t.Run(env, func(t *testing.T) {
			t.Setenv("GOGC", "")
			t.Setenv("GOMEMLIMIT", "")
			t.Setenv(env, map[string]string{"GOGC": "300", "GOMEMLIMIT": "1GiB"}[env])
			before := gcPercent()
			ctx, cancel := context.WithCancel(context.Background())
			defer cancel()
			Keep(ctx, Default)
			if got := gcPercent(); got != before || Percent() != 0 {
				t.Fatalf("GOGC %d with %s set, want the runtime's own %d", got, env, before)
			}
		})
	}
}

func TestMinFollowsTheMachine(t *testing.T) {
	for _, c := range []struct {
		mem  uint64
		want int64
	}{
		{0, 256 << 20},        // unknown: as before
		{2 << 30, 256 << 20},  // a small machine keeps the floor
		{8 << 30, 512 << 20},  // a sixteenth
		{24 << 30, 1 << 30},   // this project's machine: the cap
		{512 << 30, 1 << 30},  // never more than a gigabyte
		{^uint64(0), 1 << 30}, // no overflow
	} {
		if got := MinFor(c.mem); got != c.want {
			t.Errorf("MinFor(%d) = %d, want %d", c.mem, got, c.want)
		}
	}
}

func TestParseLimit(t *testing.T) {
	dir := t.TempDir()
	for _, c := range []struct {
		content string
		want    uint64
		ok      bool
	}{
		{"max\n", 0, true},
		{"2147483648\n", 2 << 30, true},
		{"9223372036854771712\n", 0, true}, // v1's unlimited
		{"lots\n", 0, false},
		{strings.Repeat("9", 100), 0, false},
	} {
		p := filepath.Join(dir, "memory.max")
		if err := os.WriteFile(p, []byte(c.content), 0o644); err != nil {
			t.Fatal(err)
		}
		got, ok := parseLimit(p)
		if got != c.want || ok != c.ok {
			t.Errorf("parseLimit(%q) = %d, %v; want %d, %v", c.content, got, ok, c.want, c.ok)
		}
	}
	if _, ok := parseLimit(filepath.Join(dir, "missing")); ok {
		t.Error("a missing file reads as a limit")
	}
}
