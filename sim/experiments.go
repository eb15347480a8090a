package sim

import (
	"context"
	"fmt"
	"math"
	"slices"
	"time"
)

// Table is a table of a report, written as CSV.
type Table struct {
	Name   string
	Header []string
	Rows   [][]string
}

// Report is what an experiment produced.
type Report struct {
	Experiment string
	Charts     []*Chart
	Tables     []*Table
	Summary    []string // lines for a person
	Runs       []*runSpec
	Wall       time.Duration
	Options    Options
}

// experiment plans its runs and returns what builds the report from them.
type experiment struct {
	name  string
	about string
	plan  func(p *plan) func(r *Report)
}

var experiments = []experiment{
	{"baseline", "figure 6.1: polling-only crawlers, N = 1 ... 1024, contention on and off", planBaseline},
	{"rho-sweep", "figures 6.2 to 6.6: every crawler with the same fixed rho", planRhoSweep},
	{"random-rho", "figures 6.7 and 6.8: every crawler with its own random rho", planRandomRho},
	{"mirror", "figures 6.9 and 6.11: one global mirror among cooperating crawlers", func(p *plan) func(*Report) { return planLoner(p, "mirror") }},
	{"parasite", "figures 6.10 and 6.12: one parasite among cooperating crawlers", func(p *plan) func(*Report) { return planLoner(p, "parasite") }},
	{"bangbang", "figure 6.13 and table 6.1: the bang-bang controller", planBangBang},
	{"controllers", "every peer/rho controller against the best fixed rho for each N", planControllers},
	{"liars", "lying crawlers in a community, without and with spot-checks (spec section 12)", planLiars},
	{"revisits", "revisit policies (cycle, adaptive, optimal) on a web of spread change rates, against the optimum", planRevisits},
}

// Experiments lists the experiments' names and what they reproduce.
func Experiments() [][2]string {
	var out [][2]string
	for _, e := range experiments {
		out = append(out, [2]string{e.name, e.about})
	}
	return out
}

// RunExperiment plans, runs and reports one experiment by name.
func RunExperiment(ctx context.Context, name string, o Options) (*Report, error) {
	i := slices.IndexFunc(experiments, func(e experiment) bool { return e.name == name })
	if i < 0 {
		return nil, fmt.Errorf("%w: no experiment %q", ErrModel, name)
	}
	if err := o.Model.Validate(); err != nil {
		return nil, err
	}
	o.defaults()
	p := newPlan(&o)
	finish := experiments[i].plan(p)
	start := time.Now()
	if err := p.exec(ctx); err != nil {
		return nil, err
	}
	r := &Report{Experiment: name, Runs: p.runs, Wall: time.Since(start), Options: o}
	finish(r)
	return r, nil
}

func (p *plan) ns(def []int) []int {
	if len(p.opts.Ns) > 0 {
		return p.opts.Ns
	}
	return def
}

// contentions lists the contention settings simulated for n crawlers.
func (p *plan) contentions(n int) []bool {
	if n <= p.opts.FreeMaxN {
		return []bool{true, false}
	}
	return []bool{true}
}

func label(on bool) string {
	if on {
		return "contention"
	}
	return "no contention"
}

func freshness(r *runSpec, group string) float64 {
	return r.res.GroupMean(group, func(c *CrawlerResult) float64 { return c.Freshness })
}

// sweepRhos is the grid of fixed rho the sweeps and "best fixed rho" use.
var sweepRhos = []float64{0.001, 0.05, 0.1, 0.2, 0.3, 0.4, 0.5, 0.6, 0.7, 0.8, 0.85, 0.9, 0.95, 0.99, 1}

func fixedRun(p *plan, n int, rho float64, on bool) *runSpec {
	return p.add(fmt.Sprintf("fixed n=%d rho=%g", n, rho), on, homogeneous(n, fmt.Sprintf("fixed:%g", rho), true, "coop"))
}

func baselineRun(p *plan, n int, on bool) *runSpec {
	return p.add(fmt.Sprintf("baseline n=%d", n), on, homogeneous(n, "1", false, "baseline"))
}

func planBaseline(p *plan) func(*Report) {
	ns := p.ns(powers(0, 10))
	type cell struct {
		n  int
		on bool
		r  *runSpec
	}
	var cells []cell
	for _, n := range ns {
		for _, on := range []bool{true, false} { // polling only: cheap without contention at any N
			cells = append(cells, cell{n, on, baselineRun(p, n, on)})
		}
	}
	return func(r *Report) {
		ch := &Chart{Name: "figure-6.1", Title: "Figure 6.1: polling-only crawlers (rho = 1, no sharing)", XLabel: "crawlers N", YLabel: "time-averaged cache freshness", LogX: true, YMax: 1}
		t := &Table{Name: "baseline", Header: []string{"n", "contention", "freshness", "freshness_end", "coverage"}}
		for _, on := range []bool{true, false} {
			s := Series{Name: label(on)}
			for _, c := range cells {
				if c.on != on {
					continue
				}
				f := freshness(c.r, "")
				s.X, s.Y = append(s.X, float64(c.n)), append(s.Y, f)
				t.Rows = append(t.Rows, []string{fmt.Sprint(c.n), fmt.Sprint(on), fmtNum(f),
					fmtNum(c.r.res.GroupMean("", func(c *CrawlerResult) float64 { return c.FreshnessEnd })),
					fmtNum(c.r.res.GroupMean("", func(c *CrawlerResult) float64 { return c.Coverage }))})
				r.Summary = append(r.Summary, fmt.Sprintf("N=%-5d %-13s freshness %.3f", c.n, label(on), f))
			}
			ch.Series = append(ch.Series, s)
		}
		r.Charts = append(r.Charts, ch)
		r.Tables = append(r.Tables, t)
	}
}

func planRhoSweep(p *plan) func(*Report) {
	sweepNs := []int{2, 64, 256}
	if len(p.opts.Ns) > 0 {
		sweepNs = p.opts.Ns
	}
	overNs := p.ns(powers(1, 9))
	overRhos := []float64{0.001, 0.3, 0.85, 1}
	for _, n := range sweepNs {
		for _, on := range p.contentions(n) {
			for _, rho := range sweepRhos {
				fixedRun(p, n, rho, on)
			}
		}
	}
	for _, n := range overNs {
		for _, on := range p.contentions(n) {
			for _, rho := range overRhos {
				fixedRun(p, n, rho, on)
			}
		}
	}
	return func(r *Report) {
		t := &Table{Name: "rho-sweep", Header: []string{"n", "contention", "rho", "freshness", "coverage", "events_per_poll", "events_per_merge", "records_per_merge"}}
		figs := map[int]string{2: "6.2", 64: "6.3", 256: "6.4"}
		for _, n := range sweepNs {
			fig, ok := figs[n]
			name := "figure-" + fig
			if !ok {
				name, fig = fmt.Sprintf("sweep-n%d", n), fmt.Sprintf("sweep, N = %d", n)
			}
			ch := &Chart{Name: name, Title: fmt.Sprintf("Figure %s: %d sharing crawlers, every one with the same rho", fig, n), XLabel: "rho", YLabel: "time-averaged cache freshness", YMax: 1}
			for _, on := range p.contentions(n) {
				s := Series{Name: label(on), Dashed: !on}
				best, bestRho := -1.0, 0.0
				for _, rho := range sweepRhos {
					run := fixedRun(p, n, rho, on)
					f := freshness(run, "")
					s.X, s.Y = append(s.X, rho), append(s.Y, f)
					t.Rows = append(t.Rows, sweepRow(n, on, rho, run))
					if f > best {
						best, bestRho = f, rho
					}
				}
				ch.Series = append(ch.Series, s)
				r.Summary = append(r.Summary, fmt.Sprintf("N=%-4d %-13s best rho %-5g freshness %.3f (rho=1: %.3f)", n, label(on), bestRho, best, s.Y[len(s.Y)-1]))
			}
			r.Charts = append(r.Charts, ch)
		}
		for _, on := range []bool{false, true} {
			fig := map[bool]string{false: "6.5", true: "6.6"}[on]
			ch := &Chart{Name: "figure-" + fig, Title: fmt.Sprintf("Figure %s: fixed rho over N (%s)", fig, label(on)), XLabel: "crawlers N", YLabel: "time-averaged cache freshness", LogX: true, YMax: 1}
			for _, rho := range overRhos {
				s := Series{Name: fmt.Sprintf("rho = %g", rho)}
				for _, n := range overNs {
					if !slices.Contains(p.contentions(n), on) {
						continue
					}
					run := fixedRun(p, n, rho, on)
					s.X, s.Y = append(s.X, float64(n)), append(s.Y, freshness(run, ""))
					if !slices.Contains(sweepNs, n) {
						t.Rows = append(t.Rows, sweepRow(n, on, rho, run))
					}
				}
				ch.Series = append(ch.Series, s)
			}
			r.Charts = append(r.Charts, ch)
		}
		r.Tables = append(r.Tables, t)
	}
}

func sweepRow(n int, on bool, rho float64, run *runSpec) []string {
	res := run.res
	var polls, pe, merges, me, recs float64
	for _, c := range res.Crawlers {
		polls += float64(c.Polls)
		pe += float64(c.PollEvents)
		merges += float64(c.Merges)
		me += float64(c.MergeEvents)
		recs += float64(c.Records)
	}
	return []string{fmt.Sprint(n), fmt.Sprint(on), fmtNum(rho), fmtNum(freshness(run, "")),
		fmtNum(res.GroupMean("", func(c *CrawlerResult) float64 { return c.Coverage })),
		fmtNum(pe / math.Max(1, polls)), fmtNum(me / math.Max(1, merges)), fmtNum(recs / math.Max(1, merges))}
}

func planRandomRho(p *plan) func(*Report) {
	ns := p.ns(powers(1, 8))
	trials := p.opts.Trials
	type trial struct {
		n    int
		rhos []float64
		run  *runSpec
	}
	var all []trial
	for _, n := range ns {
		for k := range trials {
			rng := newRand(seedOf(p.opts.Seed, fmt.Sprintf("random-rho n=%d trial=%d", n, k)), 0)
			cs := make([]CrawlerSpec, n)
			rhos := make([]float64, n)
			for i := range cs {
				rhos[i] = math.Round(rng.Float64()*1000) / 1000
				cs[i] = CrawlerSpec{Controller: fmt.Sprintf("fixed:%g", rhos[i]), Sharing: true, Group: "coop"}
			}
			all = append(all, trial{n, rhos, p.add(fmt.Sprintf("random-rho n=%d trial=%d", n, k), true, cs)})
		}
	}
	const eqN = 64
	eqRhos := make([]float64, eqN)
	eqCs := make([]CrawlerSpec, eqN)
	for i := range eqCs {
		eqRhos[i] = (float64(i) + 0.5) / eqN
		eqCs[i] = CrawlerSpec{Controller: fmt.Sprintf("fixed:%g", eqRhos[i]), Sharing: true, Group: "coop"}
	}
	eq := p.add("equidistant-rho n=64", true, eqCs)
	return func(r *Report) {
		fig7 := &Chart{Name: "figure-6.7", Title: "Figure 6.7: 64 crawlers, each with its own random rho (contention)", XLabel: "rho of the crawler", YLabel: "time-averaged cache freshness"}
		pts := Series{Name: "random rho, all trials", Points: true}
		for _, tr := range all {
			if tr.n != eqN {
				continue
			}
			for i, c := range tr.run.res.Crawlers {
				pts.X, pts.Y = append(pts.X, tr.rhos[i]), append(pts.Y, c.Freshness)
			}
		}
		line := Series{Name: "equidistant rho"}
		for i, c := range eq.res.Crawlers {
			line.X, line.Y = append(line.X, eqRhos[i]), append(line.Y, c.Freshness)
		}
		fig7.Series = []Series{pts, line}
		fig8 := &Chart{Name: "figure-6.8", Title: "Figure 6.8: slope of freshness over a crawler's random rho", XLabel: "crawlers N", YLabel: "slope m of the least-squares line", LogX: true}
		slope := Series{Name: "slope m"}
		t := &Table{Name: "random-rho", Header: []string{"n", "trials", "slope", "intercept", "mean_freshness"}}
		for _, n := range ns {
			var xs, ys []float64
			for _, tr := range all {
				if tr.n == n {
					for i, c := range tr.run.res.Crawlers {
						xs, ys = append(xs, tr.rhos[i]), append(ys, c.Freshness)
					}
				}
			}
			m, b := leastSquares(xs, ys)
			slope.X, slope.Y = append(slope.X, float64(n)), append(slope.Y, m)
			t.Rows = append(t.Rows, []string{fmt.Sprint(n), fmt.Sprint(trials), fmtNum(m), fmtNum(b), fmtNum(mean(ys))})
			r.Summary = append(r.Summary, fmt.Sprintf("N=%-4d slope %+.3f  mean freshness %.3f", n, m, mean(ys)))
		}
		fig8.Series = []Series{slope}
		r.Charts = append(r.Charts, fig7, fig8)
		r.Tables = append(r.Tables, t)
	}
}

// leastSquares fits y = m x + b.
func leastSquares(xs, ys []float64) (m, b float64) {
	n := float64(len(xs))
	if n < 2 {
		return math.NaN(), math.NaN()
	}
	mx, my := mean(xs), mean(ys)
	var sxy, sxx float64
	for i := range xs {
		sxy += (xs[i] - mx) * (ys[i] - my)
		sxx += (xs[i] - mx) * (xs[i] - mx)
	}
	if sxx == 0 {
		return math.NaN(), my
	}
	m = sxy / sxx
	return m, my - m*mx
}

// lonerRun is n-1 cooperating crawlers at rho plus one mirror or parasite.
func lonerRun(p *plan, kind string, n int, rho float64) *runSpec {
	cs := homogeneous(n-1, fmt.Sprintf("fixed:%g", rho), true, "coop")
	cs = append(cs, CrawlerSpec{Controller: "fixed:0", Sharing: kind == "mirror", Group: kind})
	return p.add(fmt.Sprintf("%s n=%d rho=%g", kind, n, rho), true, cs)
}

func planLoner(p *plan, kind string) func(*Report) {
	const sweepN, fixedRho = 32, 0.85
	rhos := []float64{0.05, 0.1, 0.2, 0.3, 0.4, 0.5, 0.6, 0.7, 0.8, 0.85, 0.9, 0.95, 0.99}
	ns := p.ns(powers(1, 9))
	for _, rho := range rhos {
		lonerRun(p, kind, sweepN, rho)
		fixedRun(p, sweepN, rho, true)
	}
	for _, n := range ns {
		lonerRun(p, kind, n, fixedRho)
		fixedRun(p, n, fixedRho, true)
	}
	figs := map[string][2]string{"mirror": {"6.9", "6.11"}, "parasite": {"6.10", "6.12"}}[kind]
	return func(r *Report) {
		t := &Table{Name: kind, Header: []string{"n", "rho", kind, "cooperating_with_" + kind, "all_cooperating"}}
		sweep := &Chart{Name: "figure-" + figs[0], Title: fmt.Sprintf("Figure %s: 31 cooperating crawlers and one %s (contention)", figs[0], kind), XLabel: "rho of the cooperating crawlers", YLabel: "time-averaged cache freshness", YMax: 1}
		over := &Chart{Name: "figure-" + figs[1], Title: fmt.Sprintf("Figure %s: one %s among N-1 crawlers at rho = %g", figs[1], kind, fixedRho), XLabel: "crawlers N", YLabel: "time-averaged cache freshness", LogX: true, YMax: 1}
		fill := func(ch *Chart, xs []float64, get func(i int) (*runSpec, *runSpec), n func(i int) int, rho func(i int) float64) {
			lone, coop, all := Series{Name: "the " + kind}, Series{Name: "cooperating, with the " + kind}, Series{Name: "all cooperating", Dashed: true}
			for i, x := range xs {
				lr, ar := get(i)
				fl, fc, fa := freshness(lr, kind), freshness(lr, "coop"), freshness(ar, "")
				lone.X, lone.Y = append(lone.X, x), append(lone.Y, fl)
				coop.X, coop.Y = append(coop.X, x), append(coop.Y, fc)
				all.X, all.Y = append(all.X, x), append(all.Y, fa)
				t.Rows = append(t.Rows, []string{fmt.Sprint(n(i)), fmtNum(rho(i)), fmtNum(fl), fmtNum(fc), fmtNum(fa)})
				r.Summary = append(r.Summary, fmt.Sprintf("N=%-4d rho=%-5g %s %.3f  cooperating %.3f  all cooperating %.3f", n(i), rho(i), kind, fl, fc, fa))
			}
			ch.Series = []Series{lone, coop, all}
		}
		fill(sweep, rhos, func(i int) (*runSpec, *runSpec) {
			return lonerRun(p, kind, sweepN, rhos[i]), fixedRun(p, sweepN, rhos[i], true)
		}, func(int) int { return sweepN }, func(i int) float64 { return rhos[i] })
		xs := make([]float64, len(ns))
		for i, n := range ns {
			xs[i] = float64(n)
		}
		fill(over, xs, func(i int) (*runSpec, *runSpec) {
			return lonerRun(p, kind, ns[i], fixedRho), fixedRun(p, ns[i], fixedRho, true)
		}, func(i int) int { return ns[i] }, func(int) float64 { return fixedRho })
		r.Charts = append(r.Charts, sweep, over)
		r.Tables = append(r.Tables, t)
	}
}

// thesisTable61 is the thesis's table 6.1: share of time at rho low/high.
var thesisTable61 = map[int][2]float64{2: {.362, .638}, 4: {.572, .428}, 8: {.707, .293}, 16: {.780, .220},
	32: {.805, .195}, 64: {.808, .192}, 128: {.816, .184}, 256: {.782, .219}, 512: {.628, .373}}

// bestRhos is the grid searched for the best fixed rho.
var bestRhos = []float64{0.05, 0.1, 0.2, 0.3, 0.5, 0.7, 0.85, 0.9, 0.95, 0.99}

func bestFixed(p *plan, n int) (best *runSpec, rho float64) {
	for _, r := range bestRhos {
		run := fixedRun(p, n, r, true)
		if run.res == nil {
			continue
		}
		if best == nil || freshness(run, "") > freshness(best, "") {
			best, rho = run, r
		}
	}
	return best, rho
}

func controllerRun(p *plan, n int, ctl string) *runSpec {
	spec := ctl
	if ctl == "seek" {
		spec = "seek:" + p.opts.Model.SeekPeriod().String()
	}
	return p.add(fmt.Sprintf("controller=%s n=%d", ctl, n), true, homogeneous(n, spec, true, "coop"))
}

func planBangBang(p *plan) func(*Report) {
	ns := p.ns(powers(1, 9))
	for _, n := range ns {
		controllerRun(p, n, "bangbang")
		if p.opts.NoCompare {
			continue
		}
		baselineRun(p, n, true)
		for _, r := range bestRhos {
			fixedRun(p, n, r, true)
		}
	}
	return func(r *Report) {
		t := &Table{Name: "table-6.1", Header: []string{"n", "rho_low", "rho_high", "thesis_low", "thesis_high", "freshness", "baseline", "best_fixed", "best_rho", "wall_s"}}
		ch := &Chart{Name: "figure-6.13", Title: "Figure 6.13: bang-bang rho (0.10 / 0.90) against the baseline and the best fixed rho", XLabel: "crawlers N", YLabel: "time-averaged cache freshness", LogX: true, YMax: 1}
		bb, base, best := Series{Name: "bang-bang"}, Series{Name: "baseline (rho = 1, no sharing)", Dashed: true}, Series{Name: "best fixed rho", Dashed: true}
		var wall time.Duration
		for _, n := range ns {
			run := controllerRun(p, n, "bangbang")
			wall += run.res.Wall
			low := run.res.GroupMean("", func(c *CrawlerResult) float64 { return c.LowShare })
			f := freshness(run, "")
			fb, fbest, brho := math.NaN(), math.NaN(), math.NaN()
			if !p.opts.NoCompare {
				fb = freshness(baselineRun(p, n, true), "")
				var br *runSpec
				br, brho = bestFixed(p, n)
				fbest = freshness(br, "")
			}
			x := float64(n)
			bb.X, bb.Y = append(bb.X, x), append(bb.Y, f)
			base.X, base.Y = append(base.X, x), append(base.Y, fb)
			best.X, best.Y = append(best.X, x), append(best.Y, fbest)
			th, ok := thesisTable61[n]
			thLow, thHigh := "", ""
			if ok {
				thLow, thHigh = fmtNum(th[0]), fmtNum(th[1])
			}
			t.Rows = append(t.Rows, []string{fmt.Sprint(n), fmtNum(low), fmtNum(1 - low), thLow, thHigh, fmtNum(f), fmtNum(fb), fmtNum(fbest), fmtNum(brho), fmtNum(run.res.Wall.Seconds())})
			line := fmt.Sprintf("N=%-4d low %.3f high %.3f (thesis %s/%s)  freshness %.3f", n, low, 1-low, thLow, thHigh, f)
			if !p.opts.NoCompare {
				line += fmt.Sprintf("  baseline %.3f  best fixed %.3f at rho %g", fb, fbest, brho)
			}
			r.Summary = append(r.Summary, line+fmt.Sprintf("  run %.1fs", run.res.Wall.Seconds()))
		}
		r.Summary = append(r.Summary, fmt.Sprintf("bang-bang runs alone: %s of run time (table 6.1)", wall.Round(time.Millisecond)))
		ch.Series = []Series{bb, base, best}
		r.Charts = append(r.Charts, ch)
		r.Tables = append(r.Tables, t)
	}
}

// Controllers compared by the controllers experiment besides fixed rho.
var Controllers = []string{"bangbang", "rate", "seek"}

func planControllers(p *plan) func(*Report) {
	ns := p.ns(powers(1, 9))
	for _, n := range ns {
		for _, r := range bestRhos {
			fixedRun(p, n, r, true)
		}
		for _, c := range Controllers {
			controllerRun(p, n, c)
		}
	}
	return func(r *Report) {
		t := &Table{Name: "controllers", Header: []string{"n", "best_rho", "best_fixed"}}
		for _, c := range Controllers {
			t.Header = append(t.Header, c, c+"_ratio", c+"_mean_rho")
		}
		ch := &Chart{Name: "controllers", Title: "Controllers against the best fixed rho (freshness ratio; 0.95 is the goal)", XLabel: "crawlers N", YLabel: "freshness / best fixed rho's", LogX: true}
		series := make([]Series, len(Controllers))
		worst := make([]float64, len(Controllers))
		for i, c := range Controllers {
			series[i].Name = c
			worst[i] = math.Inf(1)
		}
		for _, n := range ns {
			br, brho := bestFixed(p, n)
			fb := freshness(br, "")
			row := []string{fmt.Sprint(n), fmtNum(brho), fmtNum(fb)}
			line := fmt.Sprintf("N=%-4d best fixed %.3f at rho %-5g", n, fb, brho)
			for i, c := range Controllers {
				run := controllerRun(p, n, c)
				f := freshness(run, "")
				ratio := f / fb
				mr := run.res.GroupMean("", func(c *CrawlerResult) float64 { return c.MeanRho })
				row = append(row, fmtNum(f), fmtNum(ratio), fmtNum(mr))
				series[i].X, series[i].Y = append(series[i].X, float64(n)), append(series[i].Y, ratio)
				worst[i] = min(worst[i], ratio)
				line += fmt.Sprintf("  %s %.3f (%.2f, mean rho %.2f)", c, f, ratio, mr)
			}
			t.Rows = append(t.Rows, row)
			r.Summary = append(r.Summary, line)
		}
		goal := Series{Name: "goal 0.95", Dashed: true}
		for _, n := range ns {
			goal.X, goal.Y = append(goal.X, float64(n)), append(goal.Y, 0.95)
		}
		ch.Series = append(series, goal)
		for i, c := range Controllers {
			r.Summary = append(r.Summary, fmt.Sprintf("%s: worst ratio to the best fixed rho %.3f (goal >= 0.95)", c, worst[i]))
		}
		r.Charts = append(r.Charts, ch)
		r.Tables = append(r.Tables, t)
	}
}
