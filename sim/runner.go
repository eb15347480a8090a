package sim

import (
	"cmp"
	"context"
	"fmt"
	"hash/fnv"
	"io"
	"math"
	"runtime"
	"slices"
	"sync"
	"sync/atomic"
	"time"
)

// Options configure an experiment.
type Options struct {
	Model    Model
	Scale    string // name of Model's preset, for the report
	Seed     uint64
	Ns       []int // numbers of crawlers; nil: the experiment's own list
	Trials   int   // random-rho trials per N (default 3)
	FreeMaxN int   // largest N simulated without contention (default 64; see sim/README.md)
	Workers  int   // runs at once (default: one per core)
	// NoCompare runs only bang-bang in the bangbang experiment, without
	// the baseline and fixed-rho runs figure 6.13 compares it with: the
	// table 6.1 timing.
	NoCompare bool
	// Liars is how many lying crawlers the liars experiment adds (default
	// 1), LieRate the false records each makes up per simulated second
	// (default: one per poll time).
	Liars   int
	LieRate float64
	// RatesGiven says Model.RateSpread was chosen, 0 included: the
	// revisits experiment otherwise spreads rates over 3 orders.
	RatesGiven bool
	// Cadence gives every sharing crawler a live peer's merge cadence
	// (CrawlerSpec.Cadence: waits from 5 poll times, the link its
	// budget), where the thesis's crawlers merge whenever rho draws a
	// merge.
	Cadence bool
	// Progress receives a progress bar with the time left; nil for none.
	Progress io.Writer
}

func (o *Options) defaults() {
	if o.Trials <= 0 {
		o.Trials = 3
	}
	if o.Liars <= 0 {
		o.Liars = 1
	}
	if o.FreeMaxN <= 0 {
		o.FreeMaxN = 64
	}
	if o.Workers <= 0 {
		o.Workers = runtime.GOMAXPROCS(0)
	}
}

// runSpec is one planned run; identical runs of several figures are shared.
type runSpec struct {
	key      string
	n        int
	contend  bool
	crawlers []CrawlerSpec
	res      *Result
	done     atomic.Uint64 // share of simulated time done, in 1e-6
	weight   float64
}

// plan collects the runs of one or more experiments.
type plan struct {
	opts  *Options
	runs  []*runSpec
	index map[string]*runSpec
}

func newPlan(o *Options) *plan { return &plan{opts: o, index: map[string]*runSpec{}} }

// add plans a run (once per key) and returns it; its res is set after exec.
func (p *plan) add(key string, contend bool, crawlers []CrawlerSpec) *runSpec {
	key = fmt.Sprintf("%s contention=%v", key, contend)
	if r, ok := p.index[key]; ok {
		return r
	}
	n := len(crawlers)
	// Rough cost: operations grow with the crawlers the network lets run
	// at full speed, merged records with their square.
	eff := float64(n)
	if contend {
		eff = min(eff, p.opts.Model.Slots())
	}
	if p.opts.Cadence {
		crawlers = withCadence(crawlers, p.opts.Model)
	}
	r := &runSpec{key: key, n: n, contend: contend, crawlers: crawlers, weight: p.opts.Model.Duration * (1 + eff) * (1 + float64(n)/16)}
	p.runs = append(p.runs, r)
	p.index[key] = r
	return r
}

// withCadence is crawlers, the sharing ones given a live peer's merge
// cadence where they have none: waits from 5 poll times (the live 250 ms
// at 20 polls a second) to 7,200 times that (30 minutes), the link the
// budget merges share.
func withCadence(crawlers []CrawlerSpec, m Model) []CrawlerSpec {
	poll := m.ObjectBytes / (m.LinkBps / 8)
	cd := &Cadence{Min: 5 * poll, Max: 7200 * 5 * poll, Budget: true}
	out := slices.Clone(crawlers)
	for i := range out {
		if out[i].Sharing && out[i].Cadence == nil {
			out[i].Cadence = cd
		}
	}
	return out
}

// homogeneous is n crawlers with the same controller.
func homogeneous(n int, ctl string, sharing bool, group string) []CrawlerSpec {
	cs := make([]CrawlerSpec, n)
	for i := range cs {
		cs[i] = CrawlerSpec{Controller: ctl, Sharing: sharing, Group: group}
	}
	return cs
}

// seedOf derives a run's seed from the experiment seed and the run's key,
// so a run's result does not depend on which others run with it.
func seedOf(seed uint64, key string) uint64 {
	h := fnv.New64a()
	fmt.Fprintf(h, "%d|%s", seed, key)
	return h.Sum64()
}

// exec runs every planned run, spread over the workers, and draws the
// progress bar.
func (p *plan) exec(ctx context.Context) error {
	o := p.opts
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	total := 0.0
	for _, r := range p.runs {
		total += r.weight
	}
	start := time.Now()
	var finished atomic.Int64
	stop := make(chan struct{})
	var barDone sync.WaitGroup
	if o.Progress != nil {
		barDone.Add(1)
		go func() {
			defer barDone.Done()
			t := time.NewTicker(time.Second)
			defer t.Stop()
			for {
				select {
				case <-stop:
					p.drawBar(start, total, int(finished.Load()), true)
					return
				case <-t.C:
					p.drawBar(start, total, int(finished.Load()), false)
				}
			}
		}()
	}
	jobs := make(chan *runSpec)
	errs := make(chan error, len(p.runs))
	var wg sync.WaitGroup
	for range min(o.Workers, len(p.runs)) {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for r := range jobs {
				res, err := Run(ctx, Setup{
					Model:    withContention(o.Model, r.contend),
					Crawlers: r.crawlers,
					Seed:     seedOf(o.Seed, r.key),
					Progress: func(f float64) { r.done.Store(uint64(f * 1e6)) },
				})
				if err != nil {
					errs <- fmt.Errorf("%s: %w", r.key, err)
					cancel()
					continue
				}
				r.res = res
				finished.Add(1)
			}
		}()
	}
	// Costliest first, so the last minutes are not one long run on one core.
	order := slices.Clone(p.runs)
	slices.SortStableFunc(order, func(a, b *runSpec) int { return cmp.Compare(b.weight, a.weight) })
feed:
	for _, r := range order {
		select {
		case jobs <- r:
		case <-ctx.Done():
			break feed
		}
	}
	close(jobs)
	wg.Wait()
	close(stop)
	barDone.Wait()
	close(errs)
	if err := <-errs; err != nil {
		return err
	}
	return ctx.Err()
}

func withContention(m Model, on bool) Model { m.Contention = on; return m }

func (p *plan) drawBar(start time.Time, total float64, finished int, last bool) {
	done := 0.0
	for _, r := range p.runs {
		done += r.weight * float64(r.done.Load()) / 1e6
	}
	f := 0.0
	if total > 0 {
		f = done / total
	}
	const width = 30
	bar := make([]byte, width)
	for i := range bar {
		bar[i] = ' '
		if float64(i) < f*width {
			bar[i] = '='
		}
	}
	el := time.Since(start)
	left := "?"
	if f > 0.01 {
		left = time.Duration(float64(el) * (1 - f) / f).Round(time.Second).String()
	}
	end := "\r"
	if last {
		end = "\n"
	}
	fmt.Fprintf(p.opts.Progress, "\r[%s] %3.0f%%  %d/%d runs  %s elapsed  %s left   %s", bar, 100*f, finished, len(p.runs), el.Round(time.Second), left, end)
}

// powers returns 2^a ... 2^b.
func powers(a, b int) []int {
	var ns []int
	for e := a; e <= b; e++ {
		ns = append(ns, 1<<e)
	}
	return ns
}

// mean of xs, NaN if empty.
func mean(xs []float64) float64 {
	if len(xs) == 0 {
		return math.NaN()
	}
	s := 0.0
	for _, x := range xs {
		s += x
	}
	return s / float64(len(xs))
}
