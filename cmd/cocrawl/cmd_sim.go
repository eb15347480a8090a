package main

import (
	"cmp"
	"context"
	"flag"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"

	"github.com/cocrawl/cocrawl/sim"
)

// simOptions are the flags of cocrawl sim.
type simOptions struct {
	scale, nList, dir                      string
	seed                                   uint64
	trials, freeMax, workers, liars        int
	quiet, noCompare, cadence, undated     bool
	damping, record, update, lieRate, rate float64
	name                                   string      // the experiment, set by check
	run                                    sim.Options // set by check
}

func newSimFlags() (*flag.FlagSet, *simOptions) {
	fs := newFlags("sim", "sim EXPERIMENT [--scale S] [--seed N] [--n LIST] [--cadence] [--undated] [--out DIR]\n\nexperiments:\n"+experimentList())
	o := &simOptions{}
	fs.StringVar(&o.scale, "scale", "small", "model size: thesis (1,000,000 objects, 180 days), medium (1/10), small (1/100) or tiny (1/1000)")
	fs.Uint64Var(&o.seed, "seed", 1, "random seed; a run's result depends only on it and the run")
	fs.StringVar(&o.nList, "n", "", "numbers of crawlers, comma-separated (default: the experiment's own)")
	fs.IntVar(&o.trials, "trials", 3, "random-rho: trials per N")
	fs.IntVar(&o.freeMax, "free-max-n", 64, "largest N also simulated without contention (merged records grow with N squared there)")
	fs.IntVar(&o.workers, "workers", 0, "runs at once (default: one per core)")
	fs.StringVar(&o.dir, "out", "", "folder for the CSV and SVG files (default sim-results/EXPERIMENT)")
	fs.BoolVar(&o.quiet, "quiet", false, "no progress bar")
	fs.BoolVar(&o.noCompare, "no-compare", false, "bangbang: only the bang-bang runs (table 6.1), not the baseline and fixed rho of figure 6.13")
	fs.Float64Var(&o.damping, "damping", 1, "network slots = damping x 1.5 Mbps / 100 Kbps")
	fs.Float64Var(&o.record, "record-bytes", 16, "bytes of one merged web-event record")
	fs.Float64Var(&o.update, "update-rate", 0, "updates per object per second at thesis scale (default: the calibrated value)")
	fs.IntVar(&o.liars, "liars", 1, "liars: lying crawlers added to the community")
	fs.Float64Var(&o.lieRate, "lie-rate", 0, "liars: false records each liar makes up per simulated second (default: one per poll time, 1/s)")
	fs.BoolVar(&o.cadence, "cadence", false, "sharing crawlers merge as a live peer does: from a peer only when its wait, which follows what merges bring, is over, within 15% of the link (the thesis's merge whenever rho draws one)")
	fs.BoolVar(&o.undated, "undated", false, "objects carry no date of their last change (live: no Last-Modified): rates are estimated from whether each poll found a change")
	fs.Float64Var(&o.rate, "rate-spread", -1, "objects' update rates log-uniform over this many orders of magnitude, mean unchanged (0: equal rates, the thesis's; default: 0, and 3 for revisits)")
	return fs, o
}

// check takes the experiment named by pos and builds the run's options.
func (o *simOptions) check(pos []string) error {
	if len(pos) != 1 {
		return usagef("sim takes one experiment: %s", strings.Join(experimentNames(), ", "))
	}
	o.name = pos[0]
	if !slices.Contains(experimentNames(), o.name) {
		return usagef("no experiment %q: %s", o.name, strings.Join(experimentNames(), ", "))
	}
	k, ok := sim.Scales[o.scale]
	if !ok {
		return usagef("--scale %q: thesis, medium, small or tiny", o.scale)
	}
	m, err := simModel(k, o.damping, o.record, o.update, o.rate)
	if err != nil {
		return err
	}
	m.Undated = o.undated
	if o.liars < 1 || o.lieRate < 0 {
		return usagef("--liars must be at least 1 and --lie-rate cannot be negative")
	}
	o.run = sim.Options{Model: m, Scale: o.scale, Seed: o.seed, Trials: o.trials, FreeMaxN: o.freeMax, Workers: o.workers,
		NoCompare: o.noCompare, Liars: o.liars, LieRate: o.lieRate, RatesGiven: o.rate >= 0, Cadence: o.cadence}
	if o.run.Ns, err = parseNs(o.nList); err != nil {
		return err
	}
	if !o.quiet {
		o.run.Progress = os.Stderr
	}
	o.dir = cmp.Or(o.dir, filepath.Join("sim-results", o.name))
	return nil
}

// cmdSim runs one experiment of the simulator and writes its results.
func cmdSim(ctx context.Context, args []string, out io.Writer) error {
	fs, o := newSimFlags()
	pos, err := parse(fs, args)
	if err != nil {
		return err
	}
	if err := layerSettings(fs); err != nil {
		return err
	}
	if err := o.check(pos); err != nil {
		return err
	}
	rep, err := sim.RunExperiment(ctx, o.name, o.run)
	if err != nil {
		return err
	}
	if err := rep.Write(o.dir); err != nil {
		return err
	}
	fmt.Fprint(out, rep.Text())
	fmt.Fprintf(out, "results in %s\n", o.dir)
	return nil
}

// simModel is the thesis's model with the flags' changes, at scale k.
func simModel(k float64, damping, recordBytes, updateRate, rateSpread float64) (sim.Model, error) {
	m := sim.Thesis()
	m.Damping = damping
	m.RecordBytes = recordBytes
	m.RateSpread = max(0, rateSpread)
	if updateRate > 0 {
		m.UpdateRate = updateRate
	}
	m = m.Scaled(k)
	if err := m.Validate(); err != nil {
		return m, usagef("%v", err) // Validate only checks what it is told
	}
	return m, nil
}

// parseNs reads --n: comma-separated numbers of crawlers; empty is none.
func parseNs(list string) ([]int, error) {
	if list == "" {
		return nil, nil
	}
	var ns []int
	for _, f := range strings.Split(list, ",") {
		n, err := strconv.Atoi(strings.TrimSpace(f))
		if err != nil || n < 1 || n > 4096 {
			return nil, usagef("--n: %q is not a number of crawlers in [1,4096]", f)
		}
		ns = append(ns, n)
	}
	return ns, nil
}

func experimentNames() []string {
	var ns []string
	for _, e := range sim.Experiments() {
		ns = append(ns, e[0])
	}
	return ns
}

func experimentList() string {
	var b strings.Builder
	for _, e := range sim.Experiments() {
		fmt.Fprintf(&b, "  %-12s %s\n", e[0], e[1])
	}
	return b.String()
}
