package sim

import (
	"context"
	"testing"
)

// benchRun reports simulated operations (polls and merges) and records
// merged per second of wall time, and the state's bytes per object.
func benchRun(b *testing.B, m Model, cs []CrawlerSpec) {
	var ops, moved int64
	var mem int64
	for i := 0; i < b.N; i++ {
		r, err := Run(context.Background(), Setup{Model: m, Crawlers: cs, Seed: uint64(i + 1)})
		if err != nil {
			b.Fatal(err)
		}
		ops += r.Ops
		moved += r.Moved
		mem = r.MemBytes
	}
	s := b.Elapsed().Seconds()
	b.ReportMetric(float64(ops)/s, "ops/s")
	b.ReportMetric(float64(moved)/s, "records/s")
	b.ReportMetric(float64(mem)/float64(m.maxSlots()), "bytes/object")
}

func BenchmarkPollingOnly(b *testing.B) {
	benchRun(b, Thesis().Scaled(0.01), homogeneous(1, "1", false, "c"))
}

func BenchmarkCooperating16(b *testing.B) {
	benchRun(b, Thesis().Scaled(0.01), homogeneous(16, "fixed:0.95", true, "c"))
}

func BenchmarkBangBang64(b *testing.B) {
	benchRun(b, Thesis().Scaled(0.01), homogeneous(64, "bangbang", true, "c"))
}
