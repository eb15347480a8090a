package main

import (
	"context"
	"flag"
	"fmt"
	"io"
	"math"
	"sort"
	"strings"
	"time"

	"github.com/cocrawl/cocrawl/crawl"
	"github.com/cocrawl/cocrawl/peer"
)

// crawlOptions are the flags of cocrawl crawl.
type crawlOptions struct {
	seeds        multiFlag
	data, cid    string
	duration     time.Duration
	every        time.Duration
	budget       float64
	allowPrivate bool
	crawl        *crawlFlagSet
	settings     crawlSettings // set by check
}

func newCrawlFlags() (*flag.FlagSet, *crawlOptions) {
	fs := newFlags("crawl", "crawl --seed URL... --data DIR [--duration D] [--budget R] [--allow-private] [crawl settings]")
	o := &crawlOptions{}
	fs.Var(&o.seeds, "seed", "URL to start from (repeatable)")
	fs.StringVar(&o.data, "data", "./cocrawl-data", "data folder: the store and the frontier")
	fs.DurationVar(&o.duration, "duration", 0, "stop after this long (0: until Ctrl-C)")
	fs.BoolVar(&o.allowPrivate, "allow-private", false, "allow loopback and private addresses (tests, LANs)")
	fs.StringVar(&o.cid, "cid", "", "crawler id written in events, \"host:port Moniker\"; default HOSTNAME:0 and the User-Agent's product")
	fs.DurationVar(&o.every, "progress", 5*time.Second, "how often to print a progress line")
	fs.Float64Var(&o.budget, "budget", 0, "most requests a second the crawler sends, across hosts; revisits are planned within it (0: no limit but politeness and --workers)")
	o.crawl = addCrawlFlags(fs)
	return fs, o
}

func (o *crawlOptions) check() error {
	var err error
	if o.settings, err = o.crawl.settings(); err != nil {
		return err
	}
	if o.budget < 0 || math.IsNaN(o.budget) || math.IsInf(o.budget, 0) {
		return usagef("--budget must be a rate of at least 0")
	}
	if err := checkSeeds(o.seeds); err != nil {
		return err
	}
	if len(o.seeds) == 0 && !storeExists(o.data) {
		return usagef("give at least one --seed URL (there is no frontier in %s yet)", o.data)
	}
	if o.cid == "" {
		o.cid = defaultCID(o.settings.UserAgent)
	}
	return nil
}

func cmdCrawl(ctx context.Context, args []string, out io.Writer) error {
	fs, o := newCrawlFlags()
	pos, err := parse(fs, args)
	if err != nil {
		return err
	}
	o.seeds = append(o.seeds, pos...)
	if err := o.check(); err != nil {
		return err
	}
	return runCrawl(ctx, o, out)
}

func runCrawl(ctx context.Context, o *crawlOptions, out io.Writer) error {
	st, err := openStore(o.data, logger())
	if err != nil {
		return err
	}
	defer st.Close()
	cfg := o.settings.crawlConfig(o.seeds, o.cid, o.allowPrivate)
	cfg.Logger = logger()
	cfg.RequestRate = o.budget
	o.settings.keepHeapHeadroom(ctx)
	arch, err := o.settings.openArchive()
	if err != nil {
		return err
	}
	if arch != nil {
		cfg.Archive = arch
		defer func() {
			if err := arch.Close(); err != nil {
				logger().Error("WARC: the last file was not finished", "err", err)
			}
			fmt.Fprintln(out, archiveLine(arch, o.settings.Warc))
		}()
	}
	c, err := crawl.New(cfg, st, peer.StoresIn(st.BadgerStore).Frontier)
	if err != nil {
		st.discardIfNew()
		return asUsage(err)
	}
	known, err := c.Load()
	if err != nil {
		return err
	}
	if len(o.seeds) == 0 && known == 0 {
		return usagef("give at least one --seed URL (the frontier in %s is empty)", o.data)
	}
	if o.duration > 0 {
		var cancel context.CancelFunc
		ctx, cancel = context.WithTimeout(ctx, o.duration)
		defer cancel()
	}
	fmt.Fprintf(out, "crawling as %q, %d seeds, %d URLs resumed from %s; Ctrl-C stops\n", o.settings.UserAgent, len(o.seeds), known, o.data)
	return superviseCrawl(ctx, c, o.every, out)
}

// superviseCrawl runs c until ctx ends, printing progress and a summary.
func superviseCrawl(ctx context.Context, c *crawl.Crawler, every time.Duration, out io.Writer) error {
	start := time.Now()
	done := make(chan error, 1)
	go func() { done <- c.Run(ctx) }()
	tick := time.NewTicker(every)
	defer tick.Stop()
	for {
		select {
		case err := <-done:
			s := c.Stats()
			fmt.Fprintf(out, "done after %v: %s\n", time.Since(start).Round(time.Second), summary(s))
			fmt.Fprintf(out, "errors: %s; robots.txt fetched %d times, %d URLs excluded by it; %d links refused by scope and trap rules\n",
				errorsLine(s.Errors), s.RobotsFetches, s.RobotsExcluded, s.Skipped)
			return err
		case <-tick.C:
			fmt.Fprintf(out, "%6.0fs %s\n", time.Since(start).Seconds(), summary(c.Stats()))
		}
	}
}

func summary(s crawl.Stats) string {
	line := fmt.Sprintf("%d URLs known, %d polls (%d not modified), events %d created %d updated %d deleted",
		s.Known, s.Polls, s.NotModified, s.Created, s.Updated, s.Deleted)
	if n := s.DeletedBy["soft-404"] + s.DeletedBy["redirect"]; n > 0 {
		line += fmt.Sprintf(" (%d soft 404s, %d redirects)", s.DeletedBy["soft-404"], s.DeletedBy["redirect"])
	}
	return line
}

func errorsLine(m map[string]int64) string {
	if len(m) == 0 {
		return "none"
	}
	var parts []string
	for k, v := range m {
		parts = append(parts, fmt.Sprintf("%s %d", k, v))
	}
	sort.Strings(parts)
	return strings.Join(parts, ", ")
}
