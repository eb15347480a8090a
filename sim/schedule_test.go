package sim

import (
	"context"
	"math"
	"math/rand/v2"
	"strings"
	"testing"

	"github.com/cocrawl/cocrawl/crawl/revisit"
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

// Undated objects (no Last-Modified): a poll tells only whether the
// object changed, and the optimal policy learns the rates from that
// alone, as the live crawler does. Where objects change 25 times a cycle
// on average, spread over three orders of magnitude, most polls find a
// change and most estimates are bounds; read as bounds (revisit.PriorFit),
// the optimal policy holds 0.93 of the optimum for its poll rate over
// the last half, where it held 0.87 when its prior took them as points
// (a seeded run: deterministic).
func TestRevisitsUndated(t *testing.T) {
	m := tiny()
	m.RateSpread, m.Undated = 3, true
	m.CreatePerDay, m.DeletePerDay = 0, 0
	m.Objects, m.Duration = 500, 2*m.Duration                              // 62 cycles of a crawler
	m.UpdateRate = 25 * m.LinkBps / 8 / m.ObjectBytes / float64(m.Objects) // 25 changes a cycle
	rates := make([]float64, m.Objects)
	for o := range rates {
		rates[o] = m.ObjectRate(uint32(o))
	}
	share := map[string]float64{}
	for _, p := range []string{RevisitCycle, RevisitOptimal} {
		r := run(t, m, 1, []CrawlerSpec{{Controller: "1", Revisit: p}})
		_, opt := revisit.OptimalFrequencies(rates, float64(r.Crawlers[0].Polls)/m.Duration)
		share[p] = lastHalf(r.Times, r.Cover[""], m.Duration) / opt
	}
	t.Logf("undated, 25 changes a cycle: share of the optimum over the last half: cycle %.3f, optimal %.3f", share[RevisitCycle], share[RevisitOptimal])
	if share[RevisitOptimal] < 0.9 || share[RevisitOptimal] <= share[RevisitCycle] {
		t.Errorf("undated: the optimal policy held %.3f of the optimum, the cycle %.3f", share[RevisitOptimal], share[RevisitCycle])
	}

	rep := &Report{Experiment: "revisits", Options: Options{Model: m}}
	if !strings.Contains(rep.Text(), "--undated") {
		t.Errorf("the report of an undated model does not say so:\n%s", rep.Text())
	}

	// What a poll of an undated object observes: no date, so the count
	// form (revisit.Rate.Still < 0); of a dated one, the date.
	for _, undated := range []bool{false, true} {
		m.Undated = undated
		s := newPollSchedule(RevisitOptimal, 1, 1, m, rand.New(rand.NewPCG(1, 2)))
		s.polled(0, 100, true, false, 90, 1)
		s.polled(0, 200, true, false, 150, 2)
		if dated := s.rate[0].Still > 0; dated == undated {
			t.Errorf("undated %v: the rate observed %+v", undated, s.rate[0])
		}
	}
}

func runErr(m Model, cs []CrawlerSpec) (*Result, error) {
	return Run(context.Background(), Setup{Model: m, Crawlers: cs, Seed: 1})
}
