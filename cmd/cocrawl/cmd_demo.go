package main

import (
	"context"
	"io"

	"github.com/cocrawl/cocrawl/internal/demo"
	"github.com/cocrawl/cocrawl/peer/rho"
)

func cmdDemo(ctx context.Context, args []string, out io.Writer) error {
	fs := newFlags("demo", "demo [--peers K] [--hosts N] [--pages N] [--change-every D] [--duration D] [--warmup D] [--revisit D] [--split] [--liars N] [--controller C] [--budget R] [--seed N] [--keep]")
	d := demo.Config{}
	fs.IntVar(&d.Peers, "peers", 3, "peers in each group")
	fs.IntVar(&d.Hosts, "hosts", 20, "hosts of the synthetic web")
	fs.IntVar(&d.Pages, "pages", 100, "pages per host")
	fs.DurationVar(&d.ChangeEvery, "change-every", 0, "mean time between two updates of one page (default 10s)")
	fs.DurationVar(&d.ChurnEvery, "churn-every", 0, "mean time between creations, and deletions, on one host (default 2m)")
	fs.DurationVar(&d.Duration, "duration", 0, "how long the peers run (default 3m)")
	fs.DurationVar(&d.Warmup, "warmup", 0, "time before freshness is averaged (default a third of --duration)")
	fs.DurationVar(&d.Revisit, "revisit", 0, "fixed revisit interval of every peer: each page wanted once per D (default: cocrawl run's, by estimated change rates)")
	fs.BoolVar(&d.Split, "split", false, "split the hosts between the cooperating peers by hand, with special prefixes")
	fs.IntVar(&d.Liars, "liars", 0, "lying peers that join the community")
	fs.BoolVar(&d.RealWeb, "real-web", false, "a web that behaves like the real one: dynamic pages with template noise, Last-Modified = now, ETags per response, soft 404s, redirects home")
	fs.Float64Var(&d.LieRate, "lie-rate", 20, "false events a second each liar tells")
	fs.StringVar(&d.Controller, "controller", "rate", "rho controller of the cooperating peers: rate, bangbang, seek[:PERIOD] or a number")
	fs.Float64Var(&d.Budget, "budget", 40, "requests per second of every peer")
	fs.Uint64Var(&d.Seed, "seed", 1, "random seed of the synthetic web")
	fs.StringVar(&d.Dir, "data", "", "folder for the peers' stores (default: a temporary folder)")
	fs.BoolVar(&d.Keep, "keep", false, "keep the peers' data folders")
	fs.StringVar(&d.Results, "results", "demo-results", "folder for summary.txt, freshness.csv and freshness.svg")
	fs.DurationVar(&d.Every, "progress", 0, "how often to print a progress line (default 5s)")
	if pos, err := parse(fs, args); err != nil {
		return err
	} else if len(pos) > 0 {
		return usagef("unexpected argument %q", pos[0])
	}
	if err := layerSettings(fs); err != nil {
		return err
	}
	switch {
	case d.Peers < 2:
		return usagef("--peers must be at least 2: a community needs two")
	case d.Hosts < 1 || d.Pages < 1:
		return usagef("--hosts and --pages must be at least 1")
	case d.Budget <= 0:
		return usagef("--budget must be positive")
	case d.Liars < 0 || d.LieRate < 0:
		return usagef("--liars and --lie-rate cannot be negative")
	case d.Duration < 0 || d.ChangeEvery < 0 || d.ChurnEvery < 0 || d.Warmup < 0 || d.Revisit < 0:
		return usagef("durations cannot be negative")
	}
	if _, err := rho.Parse(d.Controller); err != nil {
		return usagef("--controller: %v", err)
	}
	d.Out = out
	_, err := demo.Run(ctx, d)
	return err
}
