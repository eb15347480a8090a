package sim

import (
	"context"
	"math"
	"os"
	"path/filepath"
	"reflect"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/cocrawl/cocrawl/peer/rho"
)

func tiny() Model { return Thesis().Scaled(0.001) }

func run(t *testing.T, m Model, seed uint64, cs []CrawlerSpec) *Result {
	t.Helper()
	r, err := Run(context.Background(), Setup{Model: m, Crawlers: cs, Seed: seed})
	if err != nil {
		t.Fatal(err)
	}
	return r
}

func meanFresh(r *Result, g string) float64 {
	return r.GroupMean(g, func(c *CrawlerResult) float64 { return c.Freshness })
}

func TestDeterministic(t *testing.T) {
	cs := homogeneous(4, "bangbang", true, "coop")
	a, b := run(t, tiny(), 7, cs), run(t, tiny(), 7, cs)
	a.Wall, b.Wall = 0, 0
	if !reflect.DeepEqual(a, b) {
		t.Fatal("two runs with the same seed differ")
	}
	c := run(t, tiny(), 8, cs)
	if c.Crawlers[0].Polls == a.Crawlers[0].Polls && c.WebEvents == a.WebEvents {
		t.Fatal("another seed gave the same run")
	}
}

// A lone crawler revisiting every object each T seconds on a web of
// Poisson updates has time-averaged freshness (1 - e^-x)/x, x = lambda T.
func TestLoneCrawlerMatchesAnalyticFreshness(t *testing.T) {
	m := Thesis().Scaled(0.01)
	m.CreatePerDay, m.DeletePerDay, m.ObjectSpread = 0, 0, 0
	m.Contention = false
	r := run(t, m, 1, homogeneous(1, "1", false, "c"))
	period := float64(m.Objects) * m.ObjectBytes / (m.LinkBps / 8)
	x := m.UpdateRate * period
	want := (1 - math.Exp(-x)) / x
	// The cache starts fresh: add that transient's share of the run.
	want += (1/m.UpdateRate - (1-math.Exp(-x))/m.UpdateRate/x) / m.Duration
	got := meanFresh(r, "")
	if math.Abs(got-want) > 0.01 {
		t.Fatalf("freshness %.4f, analytic %.4f", got, want)
	}
	// A poll finds an update if one came since the last visit: a period
	// ago, except in the first cycle, when it is since time 0.
	cycles := m.Duration / period
	wantPE := ((cycles-1)*(1-math.Exp(-x)) + 1 - (1-math.Exp(-x))/x) / cycles
	if pe := float64(r.Crawlers[0].PollEvents) / float64(r.Crawlers[0].Polls); math.Abs(pe-wantPE) > 0.003 {
		t.Fatalf("events per poll %.4f, analytic %.4f", pe, wantPE)
	}
}

// The calibrated update rate gives figure 6.1's 0.2 without contention.
func TestBaselineCalibration(t *testing.T) {
	m := Thesis().Scaled(0.01)
	m.Contention = false
	if f := meanFresh(run(t, m, 3, homogeneous(1, "1", false, "c")), ""); math.Abs(f-0.2) > 0.01 {
		t.Fatalf("baseline freshness %.3f, want 0.20 +- 0.01", f)
	}
}

// With contention, 30 crawlers on a network of 15 slots poll half as fast
// as one.
func TestContentionSharesTheNetwork(t *testing.T) {
	m := tiny()
	one := run(t, m, 1, homogeneous(1, "1", false, "c")).Crawlers[0].Polls
	r := run(t, m, 1, homogeneous(30, "1", false, "c"))
	got := float64(r.Ops) / 30 / float64(one)
	if math.Abs(got-0.5) > 0.02 {
		t.Fatalf("polls per crawler at N=30: %.3f of N=1's, want 0.5", got)
	}
	m.Contention = false
	r = run(t, m, 1, homogeneous(30, "1", false, "c"))
	if got := float64(r.Ops) / 30 / float64(one); math.Abs(got-1) > 0.02 {
		t.Fatalf("without contention: %.3f of N=1's, want 1", got)
	}
}

func TestSharingBeatsPollingForTwo(t *testing.T) {
	m := Thesis().Scaled(0.01)
	base := meanFresh(run(t, m, 1, homogeneous(2, "1", false, "c")), "")
	coop := meanFresh(run(t, m, 1, homogeneous(2, "fixed:0.99", true, "c")), "")
	if coop < base*1.2 {
		t.Fatalf("two sharing crawlers at rho 0.99: %.3f, polling only %.3f", coop, base)
	}
	if all := meanFresh(run(t, m, 1, homogeneous(2, "fixed:0.001", true, "c")), ""); all > base/2 {
		t.Fatalf("rho 0.001 (almost only merging) gave %.3f, polling only %.3f", all, base)
	}
}

func TestMirrorAndParasite(t *testing.T) {
	for _, kind := range []string{"mirror", "parasite"} {
		cs := homogeneous(3, "fixed:0.9", true, "coop")
		cs = append(cs, CrawlerSpec{Controller: "fixed:0", Sharing: kind == "mirror", Group: kind})
		r := run(t, tiny(), 1, cs)
		lone := r.Crawlers[3]
		if lone.Polls != 0 || lone.Merges == 0 || lone.MergeEvents == 0 {
			t.Fatalf("%s: %d polls, %d merges, %d events", kind, lone.Polls, lone.Merges, lone.MergeEvents)
		}
		if kind == "parasite" && lone.Served != 0 {
			t.Fatalf("the parasite served %d records", lone.Served)
		}
		if kind == "mirror" && lone.Served == 0 {
			t.Fatal("the mirror served nothing")
		}
		if f := meanFresh(r, kind); f < meanFresh(r, "coop")*0.8 {
			t.Fatalf("%s freshness %.3f, cooperating %.3f", kind, f, meanFresh(r, "coop"))
		}
	}
}

// A merge charges the crawler merged from: an altruist merged from by a
// mirror polls less than one merged from by nobody.
func TestMergeChargesBothSides(t *testing.T) {
	m := tiny()
	alone := run(t, m, 1, []CrawlerSpec{{Controller: "1", Sharing: true}, {Controller: "1"}})
	mirrored := run(t, m, 1, []CrawlerSpec{{Controller: "1", Sharing: true}, {Controller: "0", Sharing: true}})
	if a, b := alone.Crawlers[0].Polls, mirrored.Crawlers[0].Polls; float64(b) > 0.99*float64(a) {
		t.Fatalf("altruist polled %d alone and %d while mirrored", a, b)
	}
}

func TestBangBangUsesOnlyItsTwoValues(t *testing.T) {
	r := run(t, tiny(), 1, homogeneous(8, "bangbang", true, "c"))
	for _, c := range r.Crawlers {
		if c.LowShare <= 0 || c.LowShare >= 1 {
			t.Fatalf("share of time at low rho %.3f", c.LowShare)
		}
		// mean rho is 0.1 low + 0.9 high
		if want := 0.1*c.LowShare + 0.9*(1-c.LowShare); math.Abs(c.MeanRho-want) > 1e-9 {
			t.Fatalf("mean rho %.4f, want %.4f", c.MeanRho, want)
		}
	}
}

// The counters kept incrementally agree with a count from scratch.
func TestBookkeepingMatchesRecount(t *testing.T) {
	m := tiny()
	m.Objects = 300
	m.Duration = 20000
	m.UpdateRate = 2e-4
	m.CreatePerDay, m.DeletePerDay = 2000, 2000
	cs := []CrawlerSpec{{Controller: "fixed:0.7", Sharing: true}, {Controller: "bangbang", Sharing: true},
		{Controller: "0", Sharing: true}, {Controller: "0"}, {Controller: "rate", Sharing: true}}
	ctrls := make([]rho.Controller, len(cs))
	for i, c := range cs {
		ctrls[i], _ = rho.Parse(c.Controller)
	}
	w := newWorld(Setup{Model: m, Crawlers: cs, Seed: 5}, ctrls)
	if err := w.run(context.Background(), nil); err != nil {
		t.Fatal(err)
	}
	for i := range w.crawlers {
		c := &w.crawlers[i]
		fresh, entries := 0, 0
		for o := range w.created {
			v := w.versions[o*w.n+i]
			bit := w.fresh[o*w.words+i/64]&(1<<(i%64)) != 0
			cur := v == w.cur[o] && !w.dead[o]
			if cur != bit {
				t.Fatalf("crawler %d object %d: holds current %v, bit %v", i, o, cur, bit)
			}
			if cur {
				fresh++
			}
			if v != verNone && v != verDeleted {
				entries++
			}
		}
		if fresh != c.fresh || entries != c.entries {
			t.Fatalf("crawler %d: fresh %d/%d entries %d/%d (kept/recounted)", i, c.fresh, fresh, c.entries, entries)
		}
		if c.areaCache < 0 || c.areaCache > m.Duration || c.areaCover < 0 || c.areaCover > m.Duration {
			t.Fatalf("crawler %d: integrals %.1f %.1f out of range", i, c.areaCache, c.areaCover)
		}
	}
	live := 0
	for o := range w.created {
		if !w.dead[o] {
			live++
		}
	}
	if live != len(w.live) {
		t.Fatalf("live %d, recount %d", len(w.live), live)
	}
}

func TestValidate(t *testing.T) {
	for name, mut := range map[string]func(*Model){
		"no objects":  func(m *Model) { m.Objects = 0 },
		"no time":     func(m *Model) { m.Duration = 0 },
		"NaN damping": func(m *Model) { m.Damping = math.NaN() },
		"free merge":  func(m *Model) { m.MergeOverhead = 0 },
		"spread":      func(m *Model) { m.ObjectSpread = 1 },
	} {
		m := tiny()
		mut(&m)
		if m.Validate() == nil {
			t.Errorf("%s: accepted", name)
		}
	}
	if _, err := Run(context.Background(), Setup{Model: tiny(), Crawlers: homogeneous(2, "sometimes", true, "")}); err == nil {
		t.Error("a bad controller was accepted")
	}
}

func TestCancel(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	if _, err := Run(ctx, Setup{Model: tiny(), Crawlers: homogeneous(2, "1", false, "")}); err == nil {
		t.Fatal("a cancelled run finished")
	}
}

// Every experiment runs end to end at a tiny scale and writes its files.
func TestExperimentsWriteTheirFiles(t *testing.T) {
	if testing.Short() {
		t.Skip("runs every experiment")
	}
	for _, e := range Experiments() {
		t.Run(e[0], func(t *testing.T) {
			o := Options{Model: tiny(), Scale: "tiny", Seed: 1, Ns: []int{2, 4}, Trials: 1}
			rep, err := RunExperiment(context.Background(), e[0], o)
			if err != nil {
				t.Fatal(err)
			}
			dir := t.TempDir()
			if err := rep.Write(dir); err != nil {
				t.Fatal(err)
			}
			if len(rep.Charts) == 0 || len(rep.Tables) == 0 {
				t.Fatal("no chart or table")
			}
			for _, c := range rep.Charts {
				svg, err := os.ReadFile(filepath.Join(dir, c.Name+".svg"))
				if err != nil || !strings.Contains(string(svg), "<polyline") && !strings.Contains(string(svg), "<circle") {
					t.Fatalf("%s.svg: %v, no data drawn", c.Name, err)
				}
				csv, err := os.ReadFile(filepath.Join(dir, c.Name+".csv"))
				if err != nil || strings.Count(string(csv), "\n") < 2 {
					t.Fatalf("%s.csv: %v, %d lines", c.Name, err, strings.Count(string(csv), "\n"))
				}
			}
			for _, f := range []string{"summary.txt", "runs.csv"} {
				if _, err := os.Stat(filepath.Join(dir, f)); err != nil {
					t.Fatal(err)
				}
			}
		})
	}
}

func TestChartCSV(t *testing.T) {
	c := &Chart{XLabel: "n", Series: []Series{{Name: "a", X: []float64{1, 2}, Y: []float64{0.5, 0.25}}, {Name: "b", X: []float64{2}, Y: []float64{1}}}}
	var b strings.Builder
	if err := c.WriteCSV(&b); err != nil {
		t.Fatal(err)
	}
	if want := "n,a,b\n1,0.5,\n2,0.25,1\n"; b.String() != want {
		t.Fatalf("got %q, want %q", b.String(), want)
	}
}

func TestLeastSquares(t *testing.T) {
	m, b := leastSquares([]float64{0, 1, 2}, []float64{1, 3, 5})
	if math.Abs(m-2) > 1e-12 || math.Abs(b-1) > 1e-12 {
		t.Fatalf("m %g b %g", m, b)
	}
}

func TestRefusesStateTooLarge(t *testing.T) {
	m := Thesis()
	m.Objects = 20_000_000
	if _, err := Run(context.Background(), Setup{Model: m, Crawlers: homogeneous(512, "1", false, "")}); err == nil || !strings.Contains(err.Error(), "GiB") {
		t.Fatalf("err %v", err)
	}
}

// clockWatch is a researcher's own controller: it checks the clock the
// simulator hands every controller.
type clockWatch struct {
	last    time.Time
	n       int
	badStep bool
}

func (c *clockWatch) Rho() float64 { return 0.9 }
func (c *clockWatch) Name() string { return "clockwatch" }
func (c *clockWatch) Observe(o rho.Outcome) {
	if o.End.Before(c.last) || o.End.Sub(c.last) < o.Cost-time.Millisecond {
		c.badStep = true
	}
	c.last = o.End
	c.n++
}

// Controllers made by CrawlerSpec.New run in place of parsed ones, and
// every controller reads the one simulated clock, so that seek's peers
// probe in step.
func TestCustomControllersShareTheClock(t *testing.T) {
	m := tiny()
	watches := make([]*clockWatch, 3)
	cs := homogeneous(3, "", true, "c")
	for i := range cs {
		cs[i].New = func() rho.Controller { watches[i] = &clockWatch{}; return watches[i] }
	}
	r := run(t, m, 1, cs)
	for i, w := range watches {
		if w.n == 0 || int64(w.n) != r.Crawlers[i].Polls+r.Crawlers[i].Merges || w.badStep {
			t.Fatalf("crawler %d: %d outcomes for %d operations, clock steps wrong: %v", i, w.n, r.Crawlers[i].Polls+r.Crawlers[i].Merges, w.badStep)
		}
		if end := simClock(m.Duration); w.last.After(end) || w.last.Before(end.Add(-time.Hour)) {
			t.Fatalf("crawler %d: last outcome at %v, run ends at %v", i, w.last, end)
		}
		if got := r.Crawlers[i].MeanRho; math.Abs(got-0.9) > 1e-9 {
			t.Fatalf("crawler %d ran at rho %v, its controller says 0.9", i, got)
		}
	}
	cs[0].New = func() rho.Controller { return nil }
	if _, err := Run(context.Background(), Setup{Model: m, Crawlers: cs, Seed: 1}); err == nil {
		t.Fatal("a New that makes no controller was accepted")
	}
}

// The probe period follows the update rate and stays a sane duration for
// any rate the command line accepts.
func TestSeekPeriod(t *testing.T) {
	m := tiny()
	if got, want := m.SeekPeriod(), time.Duration(4/m.UpdateRate*1e9).Round(time.Second); got != want {
		t.Fatalf("SeekPeriod %v, want %v", got, want)
	}
	m.UpdateRate = 1e-300
	if got := m.SeekPeriod(); got <= 0 || got > time.Duration(m.Duration*1e9)+time.Second {
		t.Fatalf("SeekPeriod at a vanishing rate: %v", got)
	}
}

// The crawlers' own estimates of their freshness, from sampled polls as a
// live peer makes them, fall within their 95% interval of the truth
// (coverage averaged over the run), for lone and cooperating crawlers.
func TestSampledFreshnessMatchesCoverage(t *testing.T) {
	m := Thesis().Scaled(0.01)
	cs := append(homogeneous(2, "1", false, "alone"), homogeneous(3, "rate", true, "coop")...)
	seed := uint64(3)
	if s := os.Getenv("COCRAWL_SIM_SEED"); s != "" {
		seed, _ = strconv.ParseUint(s, 10, 64)
	}
	r, err := Run(context.Background(), Setup{Model: m, Crawlers: cs, Seed: seed, SampleShare: 0.05})
	if err != nil {
		t.Fatal(err)
	}
	for i, c := range r.Crawlers {
		lo, hi := wilson(c.Measured, c.EffectiveSamples)
		t.Logf("crawler %d (%s): coverage %.4f, measured %.4f [%.4f, %.4f] from %d samples (%.0f effective)", i, c.Group, c.Coverage, c.Measured, lo, hi, c.Samples, c.EffectiveSamples)
		if c.Samples < 100 {
			t.Fatalf("crawler %d: only %d samples", i, c.Samples)
		}
		// A sample may fall on an object deleted and held as deleted,
		// which coverage (of live objects) does not count: a small margin.
		if c.Coverage < lo-0.01 || c.Coverage > hi+0.01 {
			t.Errorf("crawler %d: coverage %.4f outside the measured interval [%.4f, %.4f]", i, c.Coverage, lo, hi)
		}
	}
	// Without samples, nothing is measured and the run is what it was.
	plain := run(t, m, seed, cs)
	if plain.Crawlers[0].Samples != 0 {
		t.Error("samples without SampleShare")
	}
}

// wilson is the 95% Wilson interval of a share p of n trials.
func wilson(p, nf float64) (lo, hi float64) {
	const z = 1.959964
	d := 1 + z*z/nf
	c := (p + z*z/(2*nf)) / d
	w := z * math.Sqrt(p*(1-p)/nf+z*z/(4*nf*nf)) / d
	return c - w, c + w
}

// A regime cell in the model: the lone crawlers match the analytic
// freshness of a cycle, and the cooperating ones' freshness is a share.
// (Whether cooperation pays there is what the sweep reports, beside the
// live peers'.)
func TestRegimeCell(t *testing.T) {
	coop, alone, err := RegimeCell(context.Background(), RegimeSetup{Objects: 200, Peers: 3, CycleRatio: 5, Seed: 1})
	if err != nil {
		t.Fatal(err)
	}
	want := (1 - math.Exp(-5.0)) / 5
	t.Logf("coop %.3f, alone %.3f (analytic %.3f)", coop, alone, want)
	if math.Abs(alone-want) > 0.03 {
		t.Errorf("lone crawlers %.3f, analytic %.3f", alone, want)
	}
	if !(coop > 0 && coop <= 1) {
		t.Errorf("cooperating crawlers' freshness %.3f", coop)
	}
	if _, _, err := RegimeCell(context.Background(), RegimeSetup{Peers: 3, CycleRatio: 5, Seed: 1}); err == nil {
		t.Error("a cell of no objects ran")
	}
}

// Without a merge cadence, "rate" peers drift to merging: in the cell
// above two of three merged 94% of the time, each merge bringing about a
// record, and the community was less fresh than crawlers alone (0.94x).
// With the live peer's cadence they keep polling: where merges cost the
// polls nothing (politeness binds) cooperation pays as the live sweep
// measures (about 2x at this ratio); where a budget is shared, merges
// take at most rho.MergeBudgetShare of it and cooperation still pays,
// less.
func TestRegimeCellCadence(t *testing.T) {
	ctx := context.Background()
	coop, alone, err := RegimeCell(ctx, RegimeSetup{Objects: 200, Peers: 3, CycleRatio: 5, Seed: 1})
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("politeness: coop %.3f, alone %.3f (%.2fx)", coop, alone, coop/alone)
	if coop < 1.5*alone {
		t.Errorf("with the cadence, cooperating crawlers %.3f against %.3f alone", coop, alone)
	}
	m := Thesis()
	m.Objects, m.ObjectSpread, m.Contention, m.CreatePerDay, m.DeletePerDay = 200, 0, false, 0, 0
	m.UpdateRate, m.Duration, m.SampleEvery = 5.0/200, 4000, 20
	cs := []CrawlerSpec{{Controller: "1", Group: "alone"}}
	for range 3 {
		cs = append(cs, CrawlerSpec{Controller: "rate", Sharing: true, Group: "coop", Cadence: &Cadence{Min: 5, Max: 3600, Budget: true}})
	}
	r, err := Run(ctx, Setup{Model: m, Crawlers: cs, Seed: 2})
	if err != nil {
		t.Fatal(err)
	}
	for _, c := range r.Crawlers[1:] {
		share := float64(c.Merges) / float64(c.Polls+c.Merges)
		t.Logf("budget: %d polls, %d merges (%.3f of operations), %d events merged", c.Polls, c.Merges, share, c.MergeEvents)
		if share > 1.1*rho.MergeBudgetShare || c.MergeEvents == 0 {
			t.Errorf("with a budget, merges took %.3f of the operations (at most %g) and brought %d events", share, rho.MergeBudgetShare, c.MergeEvents)
		}
	}
	if coop, alone := r.GroupMean("coop", func(c *CrawlerResult) float64 { return c.Coverage }), r.GroupMean("alone", func(c *CrawlerResult) float64 { return c.Coverage }); coop < 1.1*alone {
		t.Errorf("with a budget, cooperating crawlers %.3f against %.3f alone", coop, alone)
	}
	bad := Setup{Model: m, Crawlers: []CrawlerSpec{{Controller: "rate", Cadence: &Cadence{Min: 5, Max: 1}}}}
	if _, err := Run(ctx, bad); err == nil {
		t.Error("a cadence whose longest wait is below its shortest ran")
	}
}

// Options.Cadence (cocrawl sim --cadence) gives the sharing crawlers of an
// experiment's runs a live peer's merge cadence, and only them.
func TestOptionsCadence(t *testing.T) {
	m := Thesis().Scaled(0.001)
	p := newPlan(&Options{Model: m, Cadence: true})
	r := p.add("k", false, []CrawlerSpec{{Controller: "1"}, {Controller: "rate", Sharing: true}})
	if r.crawlers[0].Cadence != nil || r.crawlers[1].Cadence == nil || !r.crawlers[1].Cadence.Budget || r.crawlers[1].Cadence.Min != 5 {
		t.Errorf("cadences %+v, %+v", r.crawlers[0].Cadence, r.crawlers[1].Cadence)
	}
	if q := newPlan(&Options{Model: m}).add("k", false, []CrawlerSpec{{Controller: "rate", Sharing: true}}); q.crawlers[0].Cadence != nil {
		t.Error("a cadence without --cadence")
	}
}
