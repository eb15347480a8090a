package main

import (
	"context"
	"fmt"
	"io"
	"os"
	"runtime/pprof"
	"time"

	"github.com/cocrawl/cocrawl/internal/testweb"
)

func cmdTestweb(ctx context.Context, args []string, out io.Writer) error {
	fs := newFlags("testweb", "testweb [--hosts N] [--pages N] [--update-every D] [--churn-every D] [--links N] [--seed N] [--port-base PORT] [--cpu-profile FILE]")
	hosts := fs.Int("hosts", 10, "web servers, each on its own loopback port")
	pages := fs.Int("pages", 50, "pages per host at start")
	every := fs.Duration("update-every", 5*time.Minute, "mean time between updates of one page (Poisson); 0 for a static web")
	churn := fs.Duration("churn-every", 10*time.Minute, "mean time between a creation, and between a deletion, on one host; 0 for none")
	links := fs.Int("links", 5, "links per page to pages of its host (each to a page made before it)")
	seed := fs.Uint64("seed", 1, "random seed")
	portBase := fs.Int("port-base", 0, "serve host i on 127.0.0.1:PORT-BASE+i (0: free ports)")
	profile := fs.String("cpu-profile", "", "write a CPU profile of the web from start to stop to this file (go tool pprof)")
	if pos, err := parse(fs, args); err != nil {
		return err
	} else if len(pos) > 0 {
		return usagef("unexpected argument %q", pos[0])
	}
	if *hosts < 1 || *pages < 1 || *links < 1 {
		return usagef("--hosts, --pages and --links must be at least 1")
	}
	if *portBase < 0 || *portBase+*hosts > 65536 {
		return usagef("--port-base %d leaves no room for %d hosts", *portBase, *hosts)
	}
	rate := func(d time.Duration) float64 {
		if d <= 0 {
			return 0
		}
		return 1 / d.Seconds()
	}
	if *profile != "" {
		f, err := os.Create(*profile)
		if err != nil {
			return err
		}
		defer f.Close()
		if err := pprof.StartCPUProfile(f); err != nil {
			return err
		}
		defer pprof.StopCPUProfile()
	}
	w, err := testweb.Start(testweb.Config{
		Hosts: *hosts, PagesPerHost: *pages, UpdateRate: rate(*every), CreateRate: rate(*churn), DeleteRate: rate(*churn),
		RobotsEvery: 5, CrawlDelay: time.Second, NoLastModifiedEvery: 4, Seed: *seed,
		PortBase: *portBase, LinksPerPage: *links,
		NoRequestLog: true, // nothing reads it, and it grew by every request
	})
	if err != nil {
		return fmt.Errorf("%w; choose another --port-base", err)
	}
	defer w.Close()
	fmt.Fprintf(out, "synthetic web of %d hosts on loopback; Ctrl-C stops. Seeds:\n", *hosts)
	for _, s := range w.Seeds() {
		fmt.Fprintln(out, s)
	}
	w.Run(ctx)
	s := w.Stats()
	fmt.Fprintf(out, "stopped: %d creations, %d updates, %d deletions\n", s.Creates, s.Updates, s.Deletes)
	return nil
}
