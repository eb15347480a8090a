package measure

import (
	"context"
	"fmt"
	"io"
	"log/slog"
	"sync"
	"time"

	"github.com/cocrawl/cocrawl/crawl"
	"github.com/cocrawl/cocrawl/internal/testweb"
	"github.com/cocrawl/cocrawl/webevents"
)

// SitemapConfig shapes the sitemap experiment. Zero fields take the
// defaults named.
type SitemapConfig struct {
	Hosts int // default 4
	Pages int // per host, default 100
	// ChangeEvery is the mean time between changes of a page (Poisson);
	// default 5 min.
	ChangeEvery time.Duration
	// Delay is the politeness delay per host; default 100 ms.
	Delay time.Duration
	// SitemapEvery is how often a host's sitemap is read; default 10 s.
	SitemapEvery time.Duration
	Warmup       time.Duration // default 1 min
	Measure      time.Duration // default 3 min
	Seed         uint64
	Progress     io.Writer
}

func (c *SitemapConfig) defaults() {
	def := func(d *time.Duration, v time.Duration) {
		if *d <= 0 {
			*d = v
		}
	}
	if c.Hosts <= 0 {
		c.Hosts = 4
	}
	if c.Pages <= 0 {
		c.Pages = 100
	}
	def(&c.ChangeEvery, 5*time.Minute)
	def(&c.Delay, 100*time.Millisecond)
	def(&c.SitemapEvery, 10*time.Second)
	def(&c.Warmup, time.Minute)
	def(&c.Measure, 3*time.Minute)
	if c.Seed == 0 {
		c.Seed = 1
	}
}

// SitemapRun is one arm of the experiment over the measured window.
type SitemapRun struct {
	Arm       string
	Requests  int64   // polls and sitemap reads
	Changes   int64   // updates, creations and deletions the crawler found
	Freshness float64 // time-averaged share of pages held as they are
	// FirstHost and OtherHosts split Freshness: the first host (the liar
	// in the one-liar arms) and the rest.
	FirstHost, OtherHosts float64
	// DistrustedAfter is when a host was first distrusted, from the start
	// (0: none was); FirstAfterDistrust the first host's freshness from
	// then on, and PlainAfterDistrust the plain-polling arm's over the
	// same samples.
	DistrustedAfter                        time.Duration
	FirstAfterDistrust, PlainAfterDistrust float64
	Signals                                crawl.SignalStats
}

// PerChange is requests per detected change.
func (r SitemapRun) PerChange() float64 {
	if r.Changes == 0 {
		return 0
	}
	return float64(r.Requests) / float64(r.Changes)
}

// Sitemaps crawls five copies of one testweb at once, each page changing
// at the same mean rate: without sitemaps (plain polling), with honest
// sitemaps, with sitemaps that date every page now, and with honest
// sitemaps but for the first host's, which dates every page now or never
// moves its dates. It reports each arm's requests per detected change
// and time-averaged freshness, the first host's apart.
func Sitemaps(ctx context.Context, cfg SitemapConfig) ([]SitemapRun, error) {
	cfg.defaults()
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	type arm struct {
		sampled
		c     *crawl.Crawler
		start crawl.Stats
		sig   crawl.SignalStats
	}
	arms := []*arm{{sampled: sampled{name: "plain polling"}}, {sampled: sampled{name: "honest sitemaps"}}, {sampled: sampled{name: "lying sitemaps"}},
		{sampled: sampled{name: "one liar (now)"}}, {sampled: sampled{name: "one liar (frozen)"}}}
	modes := []testweb.SitemapMode{testweb.NoSitemap, testweb.SitemapHonest, testweb.SitemapLying, testweb.SitemapHonest, testweb.SitemapHonest}
	liars := []testweb.SitemapMode{0, 0, 0, testweb.SitemapLying, testweb.SitemapFrozen}
	var wg sync.WaitGroup
	defer wg.Wait()
	defer cancel()
	for i, a := range arms {
		w, err := testweb.Start(testweb.Config{Hosts: cfg.Hosts, PagesPerHost: cfg.Pages, UpdateRate: 1 / cfg.ChangeEvery.Seconds(),
			CrossLinks: -1, RobotsEvery: 1, Sitemap: modes[i], Seed: cfg.Seed, SitemapLiars: min(int(liars[i]), 1), LiarSitemap: liars[i]})
		if err != nil {
			return nil, err
		}
		defer w.Close()
		a.web, a.store, a.byHost = w, webevents.NewMemStore(), true
		a.c, err = crawl.New(crawl.Config{
			Seeds: w.Seeds(), CID: "measure.test:1 cocrawl/1.1", Workers: cfg.Hosts * 2,
			MinDelay: cfg.Delay, DelaySet: true, DelayFactor: 1,
			RevisitMin: time.Second, RevisitMax: time.Hour, SitemapEvery: cfg.SitemapEvery, NoSitemaps: modes[i] == testweb.NoSitemap,
			Fetch:  crawl.FetchConfig{AllowPrivate: true, Timeout: 5 * time.Second},
			Logger: slog.New(slog.DiscardHandler),
		}, a.store, &crawl.MemFrontier{})
		if err != nil {
			return nil, err
		}
		wg.Add(2)
		go func() { defer wg.Done(); w.Run(ctx) }()
		go func() { defer wg.Done(); a.c.Run(ctx) }()
	}
	views := make([]*sampled, len(arms))
	for i, a := range arms {
		views[i] = &a.sampled
	}
	start := time.Now()
	distrustedAt := make([]time.Time, len(arms)) // when each arm first distrusted a host
	err := sampleFreshness(ctx, views, cfg.Warmup, cfg.Measure, cfg.Progress, func() {
		for _, a := range arms {
			a.start, a.sig = a.c.Stats(), a.c.SignalStats()
		}
	}, func(now time.Time) {
		for i, a := range arms {
			if distrustedAt[i].IsZero() && a.c.SignalStats().HostsDistrusted > 0 {
				distrustedAt[i] = now
			}
		}
	})
	if err != nil {
		return nil, err
	}
	var out []SitemapRun
	for i, a := range arms {
		s, sig := a.c.Stats(), a.c.SignalStats()
		changes := (s.Created + s.Updated + s.Deleted) - (a.start.Created + a.start.Updated + a.start.Deleted)
		reqs := (s.Polls - a.start.Polls) + (sig.SitemapReads - a.sig.SitemapReads)
		run := SitemapRun{Arm: a.name, Requests: reqs, Changes: changes, Freshness: a.mean(),
			FirstHost: a.firstMean(), OtherHosts: a.restMean(), Signals: sig}
		if at := distrustedAt[i]; !at.IsZero() {
			run.DistrustedAfter = at.Sub(start)
			run.FirstAfterDistrust = a.firstMeanFrom(at)
			run.PlainAfterDistrust = arms[0].firstMeanFrom(at)
		}
		out = append(out, run)
	}
	return out, nil
}

// PrintSitemaps writes the runs as a table.
func PrintSitemaps(out io.Writer, cfg SitemapConfig, runs []SitemapRun) {
	cfg.defaults()
	fmt.Fprintf(out, "sitemaps: %d hosts x %d pages, each changing every %v on average, delay %v, sitemaps read every %v; warm-up %v, measured over %v\n",
		cfg.Hosts, cfg.Pages, cfg.ChangeEvery, cfg.Delay, cfg.SitemapEvery, cfg.Warmup, cfg.Measure)
	fmt.Fprintf(out, "%-18s %9s %8s %12s %9s %15s %12s %18s %10s\n", "arm", "requests", "changes", "per change", "fresh", "first host", "other hosts", "lastmods ok/false", "distrusted")
	base := runs[0]
	ratio := func(a, b float64) string {
		if a > 0 && b > 0 {
			return fmt.Sprintf(" (%.2fx)", a/b)
		}
		return ""
	}
	for _, r := range runs {
		fmt.Fprintf(out, "%-18s %9d %8d %12s %9.4f %15s %12.4f %18s %10d\n", r.Arm, r.Requests, r.Changes,
			fmt.Sprintf("%.2f%s", r.PerChange(), ratio(r.PerChange(), base.PerChange())), r.Freshness,
			fmt.Sprintf("%.4f%s", r.FirstHost, ratio(r.FirstHost, base.FirstHost)), r.OtherHosts,
			fmt.Sprintf("%d/%d", r.Signals.LastmodConfirmed, r.Signals.LastmodRefuted), r.Signals.HostsDistrusted)
	}
	for _, r := range runs {
		if r.DistrustedAfter > 0 {
			fmt.Fprintf(out, "%s: a host distrusted %v in; the first host from then on %.4f, plain polling's %.4f (%.2fx)\n",
				r.Arm, r.DistrustedAfter.Round(time.Second), r.FirstAfterDistrust, r.PlainAfterDistrust, r.FirstAfterDistrust/max(r.PlainAfterDistrust, 1e-9))
		}
	}
}
