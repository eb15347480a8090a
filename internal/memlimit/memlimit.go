package memlimit

import (
	"context"
	"math"
	"os"
	"runtime/debug"
	"runtime/metrics"
	"sync/atomic"
	"time"
)

// Headroom is how much the heap may grow above its live size before a
// collection: Share of the live heap, and never less than Min.
type Headroom struct {
	Share float64 // of the live heap; 0 or less: Go's default, no limit set
	Min   int64   // bytes
	Every time.Duration
}

// Default is what the crawling commands run with: a quarter of the live
// heap, at least 256 MiB, checked every two seconds. The minimum keeps a
// small peer's collections as rare as Go's default would.
var Default = Headroom{Share: 0.25, Min: 256 << 20, Every: 2 * time.Second}

// limit is the memory limit Keep set last (0: none), for tests and callers
// that report it.
var limit atomic.Int64

// Limit is the limit in force, 0 if Keep set none.
func Limit() int64 { return limit.Load() }

// Keep sets the runtime's memory limit to the live heap plus the
// headroom, plus what the runtime holds outside the heap (stacks,
// metadata), and again every h.Every, until ctx ends; then it lifts the
// limit. It returns at once, doing nothing, when h.Share is not positive
// or the GOMEMLIMIT environment variable is set. The limit is the
// process's: of two Keeps at once (two peers in one test process), the
// first to end lifts it until the other's next tick.
func Keep(ctx context.Context, h Headroom) {
	if h.Share <= 0 || os.Getenv("GOMEMLIMIT") != "" {
		return
	}
	if h.Every <= 0 {
		h.Every = Default.Every
	}
	s := newSampler()
	set := func() {
		l := s.limit(h)
		debug.SetMemoryLimit(l)
		limit.Store(l)
	}
	set()
	go func() {
		t := time.NewTicker(h.Every)
		defer t.Stop()
		for {
			select {
			case <-ctx.Done():
				debug.SetMemoryLimit(math.MaxInt64)
				limit.Store(0)
				return
			case <-t.C:
				set()
			}
		}
	}()
}

// The runtime's own accounts (runtime/metrics): what was live after the
// last collection, and the memory the limit counts (all mapped, less what
// was returned to the system) split into the heap's and the rest.
var names = []string{
	"/gc/heap/live:bytes",
	"/memory/classes/total:bytes",
	"/memory/classes/heap/released:bytes",
	"/memory/classes/heap/objects:bytes",
	"/memory/classes/heap/unused:bytes",
	"/memory/classes/heap/free:bytes",
}

type sampler struct{ samples []metrics.Sample }

func newSampler() *sampler {
	s := &sampler{samples: make([]metrics.Sample, len(names))}
	for i, n := range names {
		s.samples[i].Name = n
	}
	return s
}

// limit is the memory limit for headroom h now.
func (s *sampler) limit(h Headroom) int64 {
	metrics.Read(s.samples)
	v := make([]int64, len(s.samples))
	for i, sm := range s.samples {
		if sm.Value.Kind() == metrics.KindUint64 {
			v[i] = int64(min(sm.Value.Uint64(), math.MaxInt64))
		}
	}
	live, total, released, objects, unused, free := v[0], v[1], v[2], v[3], v[4], v[5]
	// Outside the heap: stacks, the collector's metadata, buffers of the
	// profiler and the like; the limit counts them too.
	outside := max(total-released-objects-unused-free, 0)
	return limitFor(live, outside, h)
}

// limitFor is the limit for a live heap of live bytes and outside bytes
// held beside it.
func limitFor(live, outside int64, h Headroom) int64 {
	room := max(int64(float64(live)*h.Share), h.Min)
	return outside + live + room
}
