package sim

import (
	"context"
	"math"
	"testing"

	"github.com/cocrawl/cocrawl/peer/rho"
)

// Objects' rates spread log-uniformly with the model's mean, the same in
// every run; thinning gives each object updates at its own rate.
func TestRateSpread(t *testing.T) {
	m := tiny()
	m.RateSpread = 3
	m.CreatePerDay, m.DeletePerDay = 0, 0
	sum, lo, hi := 0.0, math.Inf(1), 0.0
	const n = 100000
	for o := range uint32(n) {
		r := m.ObjectRate(o)
		sum += r
		lo, hi = min(lo, r), max(hi, r)
	}
	if mean := sum / n; math.Abs(mean/m.UpdateRate-1) > 0.02 {
		t.Errorf("mean rate %.4g, want the model's %.4g", mean, m.UpdateRate)
	}
	if span := math.Log10(hi / lo); span < 2.99 || span > 3 {
		t.Errorf("rates span %.3f orders of magnitude, want 3", span)
	}
	if m.ObjectRate(7) != m.ObjectRate(7) || m.ObjectRate(7) == m.ObjectRate(8) {
		t.Error("an object's rate is not fixed by the object")
	}

	// Updates counted per object against its rate, over a run: the slow
	// and fast halves of the objects each see their expected share.
	w := newWorld(Setup{Model: m, Crawlers: homogeneous(1, "1", false, ""), Seed: 4}, make([]rho.Controller, 1))
	w.scheduleWeb()
	for w.nextWeb < m.Duration {
		w.now = w.nextWeb
		w.webEvent()
	}
	var seen, want [2]float64
	for o := range m.Objects {
		half := 0
		if m.ObjectRate(uint32(o)) > m.rateCentre() {
			half = 1
		}
		seen[half] += float64(w.cur[o] - 1)
		want[half] += m.ObjectRate(uint32(o)) * m.Duration
	}
	for h := range seen {
		if math.Abs(seen[h]/want[h]-1) > 0.05 {
			t.Errorf("half %d of the objects: %.0f updates, expected %.0f", h, seen[h], want[h])
		}
	}
}

// On a web of spread rates, the optimal policy keeps one crawler fresher
// than the cycle, which keeps it fresher than the adaptive policy, as the
// live crawler measures (a seeded run: deterministic).
func TestRevisitPolicies(t *testing.T) {
	m := tiny()
	m.RateSpread = 3
	m.CreatePerDay, m.DeletePerDay = 0, 0
	m.Duration *= 4
	fresh := map[string]float64{}
	for _, p := range []string{RevisitCycle, RevisitAdaptive, RevisitOptimal} {
		r := run(t, m, 1, []CrawlerSpec{{Controller: "1", Revisit: p}})
		fresh[p] = lastHalf(r.Times, r.Cover[""], m.Duration)
		if r.Crawlers[0].Polls < int64(0.9*m.Duration*m.LinkBps/8/m.ObjectBytes) {
			t.Errorf("%q: %d polls in %.0f s, the crawler idled", p, r.Crawlers[0].Polls, m.Duration)
		}
	}
	t.Logf("web freshness, last half: cycle %.4f, adaptive %.4f, optimal %.4f", fresh[RevisitCycle], fresh[RevisitAdaptive], fresh[RevisitOptimal])
	if !(fresh[RevisitOptimal] > fresh[RevisitCycle] && fresh[RevisitCycle] > fresh[RevisitAdaptive]) {
		t.Errorf("freshness cycle %.4f, adaptive %.4f, optimal %.4f: not in the order of the literature", fresh[RevisitCycle], fresh[RevisitAdaptive], fresh[RevisitOptimal])
	}
	if _, err := runErr(m, []CrawlerSpec{{Controller: "1", Revisit: "proportional"}}); err == nil {
		t.Error("an unknown revisit policy was accepted")
	}
}

func runErr(m Model, cs []CrawlerSpec) (*Result, error) {
	return Run(context.Background(), Setup{Model: m, Crawlers: cs, Seed: 1})
}
