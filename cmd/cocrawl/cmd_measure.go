package main

import (
	"context"
	"fmt"
	"io"
	"strings"
	"time"

	"github.com/cocrawl/cocrawl/internal/measure"
	"github.com/cocrawl/cocrawl/internal/memlimit"
	"github.com/cocrawl/cocrawl/peer"
)

// measures are cocrawl measure's subcommands, in the order help lists
// them.
var measures = []struct {
	name string
	run  func(context.Context, []string, io.Writer) error
}{
	{"revisits", measureRevisits}, {"first-visits", measureFirstVisits}, {"sitemaps", measureSitemaps},
	{"publish", measurePublish}, {"regimes", measureRegimes}, {"events", measureEvents}, {"mediawiki", measureMediaWiki},
	{"scale", measureScale},
}

// measureList is "a, b or c" of the experiments' names.
func measureList() string {
	names := make([]string, len(measures))
	for i, e := range measures {
		names[i] = e.name
	}
	return strings.Join(names[:len(names)-1], ", ") + " or " + names[len(names)-1]
}

// cmdMeasure runs the crawler's policy experiments (docs/performance.md).
func cmdMeasure(ctx context.Context, args []string, out io.Writer) error {
	if len(args) == 0 || strings.HasPrefix(args[0], "-") {
		return usagef("measure takes an experiment: %s", measureList())
	}
	for _, e := range measures {
		if e.name == args[0] {
			return e.run(ctx, args[1:], out)
		}
	}
	return usagef("no experiment %q: %s", args[0], measureList())
}

func measureEvents(ctx context.Context, args []string, out io.Writer) error {
	fs := newFlags("measure events", "measure events [--pages N] [--change-every D] [--delay D] [--run D] [--delete-share F] [--seed N]\n\n"+
		"How true one crawler's web-events are on a web built like the real one: 18 hosts serving static pages,\n"+
		"dynamic pages with template noise (in header, aside and footer elements, in plain divs, or a count\n"+
		"inside every paragraph), pages whose Last-Modified is the response's time and pages with an ETag per\n"+
		"response, answering for deleted pages with 404s, soft 404s or redirects home. Prints update\n"+
		"precision and recall per page kind and deletions held per style.")
	var c measure.EventsConfig
	fs.IntVar(&c.PagesPerHost, "pages", 50, "pages per host")
	fs.DurationVar(&c.ChangeEvery, "change-every", time.Minute, "mean time between two changes of a page")
	fs.DurationVar(&c.Delay, "delay", 200*time.Millisecond, "politeness delay per host")
	fs.DurationVar(&c.Run, "run", 3*time.Minute, "how long the crawler runs")
	fs.Float64Var(&c.DeleteShare, "delete-share", 0.1, "share of each host's pages deleted during the run")
	fs.Uint64Var(&c.Seed, "seed", 1, "random seed of the web")
	if pos, err := parse(fs, args); err != nil {
		return err
	} else if len(pos) > 0 {
		return usagef("unexpected argument %q", pos[0])
	}
	if c.PagesPerHost < 2 || c.DeleteShare >= 1 {
		return usagef("--pages must be at least 2 and --delete-share below 1")
	}
	c.Progress = out
	rep, err := measure.Events(ctx, c)
	if err != nil {
		return err
	}
	rep.Print(out)
	return nil
}

func measureMediaWiki(ctx context.Context, args []string, out io.Writer) error {
	fs := newFlags("measure mediawiki", "measure mediawiki [--pages N] [--change-every D] [--delay D] [--run D] [--seed N]\n\n"+
		"How true one crawler's web-events are on a real CMS: Debian's MediaWiki on SQLite under PHP's built-in\n"+
		"server on loopback, its articles edited and deleted by its maintenance scripts while the crawler polls.\n"+
		"Needs: apt-get install mediawiki php-cli php-sqlite3.")
	var c measure.MediaWikiConfig
	fs.IntVar(&c.Pages, "pages", 30, "articles")
	fs.DurationVar(&c.ChangeEvery, "change-every", time.Minute, "mean time between two edits of one article")
	fs.DurationVar(&c.Delay, "delay", 200*time.Millisecond, "politeness delay")
	fs.DurationVar(&c.Run, "run", 3*time.Minute, "how long the crawler runs")
	fs.Uint64Var(&c.Seed, "seed", 1, "random seed of the edits")
	if pos, err := parse(fs, args); err != nil {
		return err
	} else if len(pos) > 0 {
		return usagef("unexpected argument %q", pos[0])
	}
	c.Progress = out
	rep, err := measure.MediaWiki(ctx, c)
	if err != nil {
		return err
	}
	rep.Print(out)
	return nil
}

func measureRegimes(ctx context.Context, args []string, out io.Writer) error {
	fs := newFlags("measure regimes", "measure regimes [--cells LIST] [--hosts N] [--warmup-cycles N] [--measure-cycles N] [--no-split] [--seed N]\n\n"+
		"Cooperating `cocrawl run` peers against as many `cocrawl crawl` crawlers, all on their defaults, cell by cell.\n"+
		"A cell is ratio:pages:lm|nolm|lmnow|noisy:delay:peers[:soft404][:spreadN][:budgetR]: the lone poller's cycle over a\n"+
		"host (pages x delay) over a page's mean change interval, pages per host, Last-Modified (or none, or the\n"+
		"response's time, or none with template noise in every response), the politeness delay, the peers, and\n"+
		"optionally pages deleted and created (a tenth of a host's pages each lone cycle), deleted ones answered\n"+
		"as soft 404s, change rates spread log-uniformly over N orders of magnitude (the same mean), and a budget of\n"+
		"R requests/s for every peer (--budget, polls and merges) and crawler (--budget) below what politeness allows.")
	var c measure.RegimeConfig
	cells := fs.String("cells", "", "cells, comma-separated, as 5:50:lm:200ms:3 (default: every cycle ratio, then each other regime at a ratio of 5: 13 cells, about 50 minutes)")
	fs.IntVar(&c.Hosts, "hosts", 4, "hosts of each cell's web")
	fs.Float64Var(&c.WarmupCycles, "warmup-cycles", 3, "warm-up, in lone-poller cycles (at least 30 s)")
	fs.Float64Var(&c.MeasureCycles, "measure-cycles", 4, "measured window, in lone-poller cycles (at least 60 s)")
	fs.Uint64Var(&c.Seed, "seed", 1, "random seed of the first cell's web (the next cells add one)")
	fs.BoolVar(&c.NoSplit, "no-split", false, "peers without the rendezvous split: random orders, the emergent split")
	if pos, err := parse(fs, args); err != nil {
		return err
	} else if len(pos) > 0 {
		return usagef("unexpected argument %q", pos[0])
	}
	if *cells != "" {
		var err error
		if c.Cells, err = measure.ParseRegimeCells(*cells); err != nil {
			return usagef("--cells: %v", err)
		}
	}
	if c.Hosts < 1 {
		return usagef("--hosts must be at least 1")
	}
	c.Progress = out
	rs, err := measure.Regimes(ctx, c)
	if len(rs) > 0 {
		measure.PrintRegimes(out, c, rs)
	}
	return err
}

func measurePublish(ctx context.Context, args []string, out io.Writer) error {
	fs := newFlags("measure publish", "measure publish [--files N] [--per-minute N] [--measure D] [--merge-min D] [--merge-max D] [--indexnow] [--seed N]")
	var c measure.PublishConfig
	fs.IntVar(&c.Files, "files", 10000, "files in the document root")
	fs.Float64Var(&c.PerMinute, "per-minute", 100, "files changed a minute (Poisson)")
	fs.DurationVar(&c.Measure, "measure", 3*time.Minute, "how long files are changed")
	fs.DurationVar(&c.MergeMin, "merge-min", peer.DefaultMergeMin, "the peer's shortest wait between two merges (cocrawl run's default)")
	fs.DurationVar(&c.MergeMax, "merge-max", 30*time.Minute, "the peer's longest wait between two merges")
	fs.Uint64Var(&c.Seed, "seed", 1, "random seed of the changes")
	fs.BoolVar(&c.IndexNow, "indexnow", false, "the publisher pings the peer's /indexnow with each change")
	if pos, err := parse(fs, args); err != nil {
		return err
	} else if len(pos) > 0 {
		return usagef("unexpected argument %q", pos[0])
	}
	c.Progress = out
	rep, err := measure.Publish(ctx, c)
	if err != nil {
		return err
	}
	rep.Print(out)
	return nil
}

func measureRevisits(ctx context.Context, args []string, out io.Writer) error {
	fs := newFlags("measure revisits", "measure revisits [--hosts N] [--pages N] [--delay D] [--center R] [--spread S] [--last-modified given|absent|now] [--warmup D] [--measure D] [--policies LIST] [--seed N]")
	var c measure.RevisitConfig
	fs.IntVar(&c.Hosts, "hosts", 2, "testweb hosts")
	fs.IntVar(&c.Pages, "pages", 100, "pages per host")
	fs.DurationVar(&c.Delay, "delay", 50*time.Millisecond, "politeness delay per host: the request rate is capped near 1/delay")
	fs.Float64Var(&c.Center, "center", 0.6, "geometric centre of the pages' change rates, per second")
	fs.Float64Var(&c.Spread, "spread", 3, "orders of magnitude the change rates spread over (log-uniform)")
	fs.StringVar(&c.LastModified, "last-modified", measure.LastModifiedGiven, "what the hosts send as Last-Modified: given (the last change), absent, or now (the response's time)")
	fs.DurationVar(&c.Warmup, "warmup", 3*time.Minute, "crawl time before freshness is measured")
	fs.DurationVar(&c.Measure, "measure", 3*time.Minute, "time freshness is averaged over")
	fs.Uint64Var(&c.Seed, "seed", 1, "random seed of the web")
	policies := fs.String("policies", "optimal,adaptive,uniform", "revisit policies to compare, comma-separated")
	if pos, err := parse(fs, args); err != nil {
		return err
	} else if len(pos) > 0 {
		return usagef("unexpected argument %q", pos[0])
	}
	c.Policies = strings.Split(*policies, ",")
	c.Progress = out
	fmt.Fprintf(out, "each policy crawls its own copy of the web at once; %v in all\n", c.Warmup+c.Measure)
	rep, err := measure.Revisits(ctx, c)
	if err != nil {
		return err
	}
	rep.Print(out)
	return nil
}

func measureFirstVisits(ctx context.Context, args []string, out io.Writer) error {
	fs := newFlags("measure first-visits", "measure first-visits FOLDER... [--start PATH] [--share F] [--hot F] [--delay D]\n\n"+
		"Each FOLDER is a site of real HTML, served on loopback, for example\n"+
		"/usr/share/doc/python3.11/html (apt-get install python3-doc) or\n"+
		"/usr/share/doc/postgresql-doc-15/html (apt-get install postgresql-doc-15).")
	var c measure.FirstVisitConfig
	fs.StringVar(&c.Start, "start", "/index.html", "path of the page each crawl starts from")
	fs.Float64Var(&c.Share, "share", 0.1, "share of each site's URLs a crawl may fetch")
	fs.Float64Var(&c.Hot, "hot", 0.1, "share of URLs, by in-links, that are hot")
	fs.DurationVar(&c.Delay, "delay", 20*time.Millisecond, "politeness delay of the live crawls")
	pos, err := parse(fs, args)
	if err != nil {
		return err
	}
	if len(pos) == 0 {
		return usagef("measure first-visits takes one or more folders of HTML")
	}
	c.Sites, c.Progress = pos, out
	res, err := measure.FirstVisits(ctx, c)
	if err != nil {
		return err
	}
	measure.PrintFirstVisits(out, c, res)
	return nil
}

func measureSitemaps(ctx context.Context, args []string, out io.Writer) error {
	fs := newFlags("measure sitemaps", "measure sitemaps [--hosts N] [--pages N] [--change-every D] [--delay D] [--sitemap-every D] [--warmup D] [--measure D] [--seed N]")
	var c measure.SitemapConfig
	fs.IntVar(&c.Hosts, "hosts", 4, "testweb hosts")
	fs.IntVar(&c.Pages, "pages", 100, "pages per host")
	fs.DurationVar(&c.ChangeEvery, "change-every", 5*time.Minute, "mean time between changes of a page")
	fs.DurationVar(&c.Delay, "delay", 100*time.Millisecond, "politeness delay per host")
	fs.DurationVar(&c.SitemapEvery, "sitemap-every", 10*time.Second, "how often a host's sitemap is read")
	fs.DurationVar(&c.Warmup, "warmup", time.Minute, "crawl time before measuring")
	fs.DurationVar(&c.Measure, "measure", 3*time.Minute, "measured time")
	fs.Uint64Var(&c.Seed, "seed", 1, "random seed of the web")
	if pos, err := parse(fs, args); err != nil {
		return err
	} else if len(pos) > 0 {
		return usagef("unexpected argument %q", pos[0])
	}
	c.Progress = out
	fmt.Fprintf(out, "five copies of one web crawled at once: plain polling, honest sitemaps, lying sitemaps (every page dated now), honest but for the first host's (dated now, or dates that never move); %v in all\n", c.Warmup+c.Measure)
	runs, err := measure.Sitemaps(ctx, c)
	if err != nil {
		return err
	}
	measure.PrintSitemaps(out, c, runs)
	return nil
}

func measureScale(ctx context.Context, args []string, out io.Writer) error {
	fs := newFlags("measure scale", "measure scale [--hosts N] [--pages N] [--links N] [--run D] [--workers N] [--revisit-min D] [--port-base PORT] [--data DIR] [--head N] [--heap-headroom X] [--heap-profile FILE] [--cpu-profile FILE] [--early-cpu-profile FILE] [--web-cpu-profile FILE] [--restart-profile FILE] [--restart-only] [--fresh-baseline=false] [--fresh-run D]\n\n"+
		"The web is served by `cocrawl testweb` in a process of its own, on 127.0.0.1 ports from --port-base.")
	var c measure.ScaleConfig
	fs.IntVar(&c.Hosts, "hosts", 1000, "hosts of the loopback web")
	fs.IntVar(&c.Pages, "pages", 1000, "pages per host")
	fs.IntVar(&c.Links, "links", 5, "links per page within its host")
	fs.DurationVar(&c.Run, "run", 4*time.Minute, "how long to crawl")
	fs.DurationVar(&c.Every, "every", 10*time.Second, "time between samples")
	fs.IntVar(&c.Workers, "workers", 64, "fetches in flight")
	fs.DurationVar(&c.RevisitMin, "revisit-min", 0, "shortest revisit (default: the crawler's; the web is static, so an hour grows the frontier fastest)")
	fs.IntVar(&c.PortBase, "port-base", 30000, "the web's first port")
	fs.StringVar(&c.Dir, "data", "", "the crawler's data folder (default: a temporary one, removed after)")
	fs.StringVar(&c.HeapProfile, "heap-profile", "", "write the crawl's Go heap profile at its end to this file (go tool pprof)")
	fs.StringVar(&c.CPUProfile, "cpu-profile", "", "write a CPU profile of the crawl's last minute to this file (go tool pprof)")
	fs.StringVar(&c.WebCPUProfile, "web-cpu-profile", "", "have the web's process write a CPU profile of its whole run to this file")
	fs.StringVar(&c.EarlyCPUProfile, "early-cpu-profile", "", "write a CPU profile of a minute from 1.5 million URLs known to this file, to set against --cpu-profile's")
	fs.StringVar(&c.RestartProfile, "restart-profile", "", "write a CPU profile of the restart to this file (go tool pprof)")
	fs.BoolVar(&c.RestartOnly, "restart-only", false, "crawl nothing: restart from the store in --data (a scale crawl's, on the same web flags) and time it")
	fs.BoolVar(&c.FreshBaseline, "fresh-baseline", true, "after the restart, crawl the web again from nothing in a new data folder to 2 million URLs known: the 1-2 million baseline measured again, minutes after the late windows")
	fs.DurationVar(&c.FreshRun, "fresh-run", 6*time.Minute, "the most the fresh crawl of --fresh-baseline runs (and no longer than --run)")
	fs.IntVar(&c.Head, "head", 0, "first visits, and revisits, a host keeps in memory (default: the crawler's)")
	fs.Float64Var(&c.HeapHeadroom, "heap-headroom", memlimit.Default.Share, "the collector's headroom over the live heap, as cocrawl run's --heap-headroom; 0: Go's default")
	if pos, err := parse(fs, args); err != nil {
		return err
	} else if len(pos) > 0 {
		return usagef("unexpected argument %q", pos[0])
	}
	if c.HeapHeadroom < 0 {
		return usagef("--heap-headroom cannot be negative")
	} else if c.HeapHeadroom == 0 {
		c.HeapHeadroom = -1 // measure.ScaleConfig's "none"
	}
	if c.RestartOnly && c.Dir == "" {
		return usagef("--restart-only needs --data")
	}
	if c.PortBase < 1024 || c.PortBase+c.Hosts > 65535 {
		return usagef("--port-base %d leaves no room for %d hosts", c.PortBase, c.Hosts)
	}
	c.Progress = out
	rep, err := measure.Scale(ctx, c)
	if err != nil {
		return err
	}
	if !c.RestartOnly { // its restart line is all it has to say
		rep.Print(out)
	}
	return nil
}
