package main

import (
	"context"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"

	"github.com/cocrawl/cocrawl/sim"
)

func cmdSim(ctx context.Context, args []string, out io.Writer) error {
	fs := newFlags("sim", "sim EXPERIMENT [--scale S] [--seed N] [--n LIST] [--out DIR]\n\nexperiments:\n"+experimentList())
	scale := fs.String("scale", "small", "model size: thesis (1,000,000 objects, 180 days), medium (1/10), small (1/100) or tiny (1/1000)")
	seed := fs.Uint64("seed", 1, "random seed; a run's result depends only on it and the run")
	nList := fs.String("n", "", "numbers of crawlers, comma-separated (default: the experiment's own)")
	trials := fs.Int("trials", 3, "random-rho: trials per N")
	freeMax := fs.Int("free-max-n", 64, "largest N also simulated without contention (merged records grow with N squared there)")
	workers := fs.Int("workers", 0, "runs at once (default: one per core)")
	dir := fs.String("out", "", "folder for the CSV and SVG files (default sim-results/EXPERIMENT)")
	quiet := fs.Bool("quiet", false, "no progress bar")
	noCompare := fs.Bool("no-compare", false, "bangbang: only the bang-bang runs (table 6.1), not the baseline and fixed rho of figure 6.13")
	damping := fs.Float64("damping", 1, "network slots = damping x 1.5 Mbps / 100 Kbps")
	record := fs.Float64("record-bytes", 16, "bytes of one merged web-event record")
	update := fs.Float64("update-rate", 0, "updates per object per second at thesis scale (default: the calibrated value)")
	liars := fs.Int("liars", 1, "liars: lying crawlers added to the community")
	lieRate := fs.Float64("lie-rate", 0, "liars: false records each liar makes up per simulated second (default: one per poll time, 1/s)")
	rateSpread := fs.Float64("rate-spread", -1, "objects' update rates log-uniform over this many orders of magnitude, mean unchanged (0: equal rates, the thesis's; default: 0, and 3 for revisits)")
	pos, err := parse(fs, args)
	if err != nil {
		return err
	}
	if len(pos) != 1 {
		return usagef("sim takes one experiment: %s", strings.Join(experimentNames(), ", "))
	}
	if err := layerSettings(fs); err != nil {
		return err
	}
	name := pos[0]
	if !slices.Contains(experimentNames(), name) {
		return usagef("no experiment %q: %s", name, strings.Join(experimentNames(), ", "))
	}
	k, ok := sim.Scales[*scale]
	if !ok {
		return usagef("--scale %q: thesis, medium, small or tiny", *scale)
	}
	m, err := simModel(k, *damping, *record, *update, *rateSpread)
	if err != nil {
		return err
	}
	if *liars < 1 || *lieRate < 0 {
		return usagef("--liars must be at least 1 and --lie-rate cannot be negative")
	}
	o := sim.Options{Model: m, Scale: *scale, Seed: *seed, Trials: *trials, FreeMaxN: *freeMax, Workers: *workers, NoCompare: *noCompare,
		Liars: *liars, LieRate: *lieRate, RatesGiven: *rateSpread >= 0}
	if o.Ns, err = parseNs(*nList); err != nil {
		return err
	}
	if !*quiet {
		o.Progress = os.Stderr
	}
	if *dir == "" {
		*dir = filepath.Join("sim-results", name)
	}
	rep, err := sim.RunExperiment(ctx, name, o)
	if err != nil {
		return err
	}
	if err := rep.Write(*dir); err != nil {
		return err
	}
	fmt.Fprint(out, rep.Text())
	fmt.Fprintf(out, "results in %s\n", *dir)
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
