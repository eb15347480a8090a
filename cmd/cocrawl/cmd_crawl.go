package main

import (
	"context"
	"fmt"
	"io"
	"sort"
	"strings"
	"time"

	"github.com/cocrawl/cocrawl/crawl"
	"github.com/cocrawl/cocrawl/peer"
)

func cmdCrawl(ctx context.Context, args []string, out io.Writer) error {
	fs := newFlags("crawl", "crawl --seed URL... --data DIR [--duration D] [--allow-private] [crawl settings]")
	var seeds multiFlag
	fs.Var(&seeds, "seed", "URL to start from (repeatable)")
	data := fs.String("data", "./cocrawl-data", "data folder: the store and the frontier")
	duration := fs.Duration("duration", 0, "stop after this long (0: until Ctrl-C)")
	allowPrivate := fs.Bool("allow-private", false, "allow loopback and private addresses (tests, LANs)")
	cid := fs.String("cid", "", "crawler id written in events, \"host:port Moniker\"; default HOSTNAME:0 and the User-Agent's product")
	every := fs.Duration("progress", 5*time.Second, "how often to print a progress line")
	cf := addCrawlFlags(fs)
	pos, err := parse(fs, args)
	if err != nil {
		return err
	}
	seeds = append(seeds, pos...)
	set, err := cf.settings()
	if err != nil {
		return err
	}
	st, err := openStore(*data, logger())
	if err != nil {
		return err
	}
	defer st.Close()
	if *cid == "" {
		*cid = defaultCID(set.UserAgent)
	}
	cfg := set.crawlConfig(seeds, *cid, *allowPrivate)
	cfg.Logger = logger()
	c, err := crawl.New(cfg, st, peer.StoresIn(st).Frontier)
	if err != nil {
		return usagef("%v", err)
	}
	known, err := c.Load()
	if err != nil {
		return err
	}
	if len(seeds) == 0 && known == 0 {
		return usagef("give at least one --seed URL (the frontier in %s is empty)", *data)
	}
	if *duration > 0 {
		var cancel context.CancelFunc
		ctx, cancel = context.WithTimeout(ctx, *duration)
		defer cancel()
	}
	fmt.Fprintf(out, "crawling as %q, %d seeds, %d URLs resumed from %s; Ctrl-C stops\n", set.UserAgent, len(seeds), known, *data)
	start := time.Now()
	done := make(chan error, 1)
	go func() { done <- c.Run(ctx) }()
	tick := time.NewTicker(*every)
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
	return fmt.Sprintf("%d URLs known, %d polls (%d not modified), events %d created %d updated %d deleted",
		s.Known, s.Polls, s.NotModified, s.Created, s.Updated, s.Deleted)
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
