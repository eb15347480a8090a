package memlimit

import (
	"context"
	"math"
	"os"
	"runtime/debug"
	"runtime/metrics"
	"sync"
	"sync/atomic"
	"time"
)

// Headroom is how much the heap may grow above its live size before a
// collection: Share of the live heap, and never less than Min.
type Headroom struct {
	Share float64 // of the live heap; 0 or less: Go's default, GOGC left alone
	Min   int64   // bytes
	Every time.Duration
}

// Default is what the crawling commands run with: a quarter of the live
// heap, at least MinFor the machine's memory, checked every two seconds.
// The minimum keeps a small peer's collections as rare as Go's default
// would.
var Default = Headroom{Share: 0.25, Min: MinFor(machineMemory()), Every: 2 * time.Second}

// MinFor is the least headroom on a machine of mem bytes (0: unknown): a
// sixteenth of it, between 256 MiB and 1 GiB. Past 10 million URLs a
// crawl allocates about 38 KB a poll, and each collection marks the
// hosts' heads at a cache miss a pointer; at 256 MiB it collected about
// once a second, and the collector's marking and assists took 36 µs of a
// late poll's 273 against 8.5 of an early one's 181 (docs/performance.md).
// A fixed gigabyte is not memory per URL, and a sixteenth of the machine
// leaves a small one as it was.
func MinFor(mem uint64) int64 {
	return min(max(int64(min(mem/16, math.MaxInt64)), 256<<20), 1<<30)
}

// minHeap is the least live heap the percentage is taken of: Go's own
// smallest heap goal is 4 MiB, and before the first collection the live
// heap reads 0.
const minHeap = 4 << 20

// percent is the GOGC Keep set last (0: none), for tests and callers that
// report it.
var percent atomic.Int64

// keeping counts the Keeps running, and found is the GOGC the first of
// them found, put back when the last ends.
var (
	keepMu  sync.Mutex
	keeping int
	found   int
)

// Percent is the GOGC Keep keeps in force, 0 if it keeps none.
func Percent() int { return int(percent.Load()) }

// Keep sets GOGC to the headroom over the live heap, and again every
// h.Every, until ctx ends. It returns at once, doing nothing, when h.Share
// is not positive or the GOGC or GOMEMLIMIT environment variable is set.
// The setting is the process's: of two Keeps at once (two peers in one
// test process) the latest tick decides it, and the GOGC the first found
// is put back when the last ends.
func Keep(ctx context.Context, h Headroom) {
	if h.Share <= 0 || os.Getenv("GOGC") != "" || os.Getenv("GOMEMLIMIT") != "" {
		return
	}
	if h.Every <= 0 {
		h.Every = Default.Every
	}
	live := []metrics.Sample{{Name: "/gc/heap/live:bytes"}}
	set := func() int {
		metrics.Read(live)
		var l int64
		if live[0].Value.Kind() == metrics.KindUint64 {
			l = int64(min(live[0].Value.Uint64(), math.MaxInt64))
		}
		p := percentFor(l, h)
		percent.Store(int64(p))
		return debug.SetGCPercent(p)
	}
	keepMu.Lock()
	if before := set(); keeping == 0 {
		found = before
	}
	keeping++
	keepMu.Unlock()
	go func() {
		t := time.NewTicker(h.Every)
		defer t.Stop()
		for {
			select {
			case <-ctx.Done():
				keepMu.Lock()
				if keeping--; keeping == 0 {
					debug.SetGCPercent(found)
					percent.Store(0)
				}
				keepMu.Unlock()
				return
			case <-t.C:
				keepMu.Lock()
				set()
				keepMu.Unlock()
			}
		}
	}()
}

// percentFor is the GOGC that lets a heap of live bytes grow by the
// headroom before a collection.
func percentFor(live int64, h Headroom) int {
	live = max(live, minHeap)
	room := max(int64(float64(live)*h.Share), h.Min)
	return int(min(max(100*room/live, 1), math.MaxInt32))
}
