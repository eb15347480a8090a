package measure

import (
	"context"
	"fmt"
	"io"
	"log/slog"
	"math"
	"slices"
	"sort"
	"strings"
	"sync"
	"time"

	"github.com/cocrawl/cocrawl/crawl"
	"github.com/cocrawl/cocrawl/crawl/revisit"
	"github.com/cocrawl/cocrawl/internal/testweb"
	"github.com/cocrawl/cocrawl/webevents"
)

// RevisitConfig shapes the revisit experiment. Zero fields take the
// defaults named.
type RevisitConfig struct {
	Hosts int // default 2
	Pages int // per host, default 100
	// Delay is the politeness delay per host, which caps its request rate
	// near 1/Delay; default 50 ms.
	Delay time.Duration
	// Center and Spread: the pages' change rates are log-uniform over
	// Spread orders of magnitude around Center changes per second; default
	// 0.6 and 3 (0.019 to 19 changes per second).
	Center, Spread float64
	// LastModified is what the hosts send as Last-Modified: "given" (the
	// time of the page's last change; the default), "absent" (none), or
	// "now" (the time of the response, as dynamic sites do).
	LastModified string
	Warmup       time.Duration // before freshness is measured; default 3 min
	Measure      time.Duration // the time freshness is averaged over; default 3 min
	// Policies to compare; default optimal, adaptive and uniform. Each
	// runs against its own copy of the web (the same seed: the same rates).
	Policies []string
	Seed     uint64
	Progress io.Writer // a line every 30 s; nil for none
}

func (c *RevisitConfig) defaults() {
	if c.Hosts <= 0 {
		c.Hosts = 2
	}
	if c.Pages <= 0 {
		c.Pages = 100
	}
	if c.Delay <= 0 {
		c.Delay = 50 * time.Millisecond
	}
	if c.Center <= 0 {
		c.Center = 0.6
	}
	if c.Spread <= 0 {
		c.Spread = 3
	}
	if c.LastModified == "" {
		c.LastModified = LastModifiedGiven
	}
	if c.Warmup <= 0 {
		c.Warmup = 3 * time.Minute
	}
	if c.Measure <= 0 {
		c.Measure = 3 * time.Minute
	}
	if len(c.Policies) == 0 {
		c.Policies = []string{crawl.RevisitOptimal, crawl.RevisitAdaptive, crawl.RevisitUniform}
	}
	if c.Seed == 0 {
		c.Seed = 1
	}
}

// What a RevisitConfig's hosts send as Last-Modified.
const (
	LastModifiedGiven  = "given"
	LastModifiedAbsent = "absent"
	LastModifiedNow    = "now"
)

func (c *RevisitConfig) web() (testweb.Config, error) {
	w := testweb.Config{Hosts: c.Hosts, PagesPerHost: c.Pages, UpdateRate: c.Center,
		RateSpread: c.Spread, CrossLinks: -1, Seed: c.Seed}
	switch c.LastModified {
	case LastModifiedGiven:
	case LastModifiedAbsent:
		w.NoLastModifiedEvery = 1
	case LastModifiedNow:
		w.LastModifiedNow = true
	default:
		return w, fmt.Errorf("last-modified %q: want %s, %s or %s", c.LastModified, LastModifiedGiven, LastModifiedAbsent, LastModifiedNow)
	}
	return w, nil
}

// PolicyRun is what one policy achieved.
type PolicyRun struct {
	Policy    string
	Freshness float64 // time-averaged share of pages held fresh over the window
	Requests  float64 // requests per second over the window
	Optimum   float64 // the optimum's freshness at RevisitReport.Budget
	// Estimates: how many pages had at least 20 visits, and the median
	// and mean of estimated/true rate over them.
	Estimated          int
	MedianRatio, MeanR float64
	// Bands split the pages by true change rate, half a decade each:
	// where the policy's visits went against the optimum's.
	Bands []RateBand
}

// RateBand is one band of pages by true change rate, over the window.
type RateBand struct {
	Lo, Hi    float64 // changes per second
	Pages     int
	Visits    float64 // the policy's visits per page per second
	OptVisits float64 // the optimum's
	Fresh     float64 // the policy's mean freshness of the band's pages
	OptFresh  float64 // the optimum's
}

// Share is the run's freshness as a share of the optimum.
func (r PolicyRun) Share() float64 { return r.Freshness / r.Optimum }

// RevisitReport is the experiment's result.
type RevisitReport struct {
	Config RevisitConfig
	// Budget is the request rate the optimum may spend: the highest any
	// policy reached (uniform revisits keep every host busy, so it is what
	// politeness allows).
	Budget float64
	Runs   []PolicyRun
}

// Revisits crawls a testweb whose pages change at Poisson rates spread
// over orders of magnitude, once per policy at the same time, each against
// its own copy of the web, with a request rate capped by politeness. It
// measures each policy's time-averaged freshness against the web's truth
// and the optimum for the request rate reached (Cho and Garcia-Molina's
// Lagrangian allocation over the true rates, revisit.OptimalFrequencies).
func Revisits(ctx context.Context, cfg RevisitConfig) (*RevisitReport, error) {
	cfg.defaults()
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	type arm struct {
		sampled
		c      *crawl.Crawler
		polls  [2]int64
		visits [2]map[string]int // per page, at the warm-up's end and at the window's
		fresh  map[string]int    // samples that found the page fresh, in the window
		ticks  int
	}
	var arms []*arm
	defer func() {
		for _, a := range arms {
			a.web.Close()
		}
	}()
	webCfg, err := cfg.web()
	if err != nil {
		return nil, err
	}
	var wg sync.WaitGroup
	for _, p := range cfg.Policies {
		w, err := testweb.Start(webCfg)
		if err != nil {
			return nil, err
		}
		a := &arm{sampled: sampled{name: p, web: w, store: webevents.NewMemStore()}}
		arms = append(arms, a)
		c, err := crawl.New(crawl.Config{
			Seeds: w.Seeds(), CID: "measure.test:1 cocrawl/1.1", Workers: cfg.Hosts * 2,
			MinDelay: cfg.Delay, DelaySet: true, DelayFactor: 1,
			RevisitMin: cfg.Delay, RevisitMax: time.Hour, Revisit: p,
			NoSitemaps: true, // the testweb has none; polls alone are compared
			Fetch:      crawl.FetchConfig{AllowPrivate: true, Timeout: 5 * time.Second},
			Logger:     slog.New(slog.DiscardHandler),
		}, a.store, &crawl.MemFrontier{})
		if err != nil {
			return nil, err
		}
		a.c = c
		wg.Add(2)
		go func() { defer wg.Done(); w.Run(ctx) }()
		go func() { defer wg.Done(); c.Run(ctx) }()
	}
	defer wg.Wait()
	defer cancel()

	views := make([]*sampled, len(arms))
	for i, a := range arms {
		views[i] = &a.sampled
	}
	measuring := false
	err = sampleFreshness(ctx, views, cfg.Warmup, cfg.Measure, cfg.Progress, func() {
		measuring = true
		for _, a := range arms {
			a.polls[0] = a.c.Stats().Polls
			a.visits[0] = pageVisits(a.web, a.c)
		}
	}, func(time.Time) {
		if !measuring {
			return
		}
		for _, a := range arms {
			if a.fresh == nil {
				a.fresh = map[string]int{}
			}
			truth := a.web.Truth()
			for u := range a.web.Rates() {
				if e, ok, err := a.store.Get(u); err == nil && ok && e.Stat != webevents.Delete && e.ETag == truth[u].ETag {
					a.fresh[u]++
				}
			}
			a.ticks++
		}
	})
	if err != nil {
		return nil, err
	}
	rep := &RevisitReport{Config: cfg}
	for _, a := range arms {
		a.polls[1] = a.c.Stats().Polls
		a.visits[1] = pageVisits(a.web, a.c)
		run := PolicyRun{Policy: a.name, Freshness: a.mean(),
			Requests: float64(a.polls[1]-a.polls[0]) / cfg.Measure.Seconds()}
		run.Estimated, run.MedianRatio, run.MeanR = estimateRatios(a.web, a.c)
		rep.Runs = append(rep.Runs, run)
		rep.Budget = max(rep.Budget, run.Requests)
	}
	for i, a := range arms {
		// Every arm's web has the same rates, on its own hosts' URLs.
		opt, optFreq := optimumPerHost(a.web, rep.Budget)
		rep.Runs[i].Optimum = opt
		rep.Runs[i].Bands = rateBands(a.web.Rates(), optFreq, a.visits, a.fresh, a.ticks, cfg.Measure)
	}
	return rep, nil
}

// pageVisits is how many visits the crawler counted for each of the
// web's pages of known rate.
func pageVisits(w *testweb.Web, c *crawl.Crawler) map[string]int {
	out := map[string]int{}
	for u := range w.Rates() {
		_, n, _ := c.ChangeRate(u)
		out[u] = n
	}
	return out
}

// rateBands groups the pages in half-decade bands of true rate.
func rateBands(rates, optFreq map[string]float64, visits [2]map[string]int, fresh map[string]int, ticks int, window time.Duration) []RateBand {
	const perDecade = 2
	byBand := map[int]*RateBand{}
	for u, l := range rates {
		if l <= 0 {
			continue
		}
		i := int(math.Floor(math.Log10(l) * perDecade))
		b := byBand[i]
		if b == nil {
			b = &RateBand{Lo: math.Pow(10, float64(i)/perDecade), Hi: math.Pow(10, float64(i+1)/perDecade)}
			byBand[i] = b
		}
		b.Pages++
		b.Visits += float64(visits[1][u]-visits[0][u]) / window.Seconds()
		b.OptVisits += optFreq[u]
		b.Fresh += float64(fresh[u]) / float64(max(ticks, 1))
		b.OptFresh += revisit.Freshness(l, optFreq[u])
	}
	keys := make([]int, 0, len(byBand))
	for k := range byBand {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	out := make([]RateBand, 0, len(keys))
	for _, k := range keys {
		b := *byBand[k]
		n := float64(b.Pages)
		b.Visits, b.OptVisits, b.Fresh, b.OptFresh = b.Visits/n, b.OptVisits/n, b.Fresh/n, b.OptFresh/n
		out = append(out, b)
	}
	return out
}

// freshShare is the share of the pages of known rate (every page but the
// home pages) whose state the store holds as it is now.
func freshShare(w *testweb.Web, store *webevents.MemStore) float64 {
	truth := w.Truth()
	rates := w.Rates()
	fresh := 0
	for u := range rates {
		e, ok, err := store.Get(u)
		if err == nil && ok && e.Stat != webevents.Delete && e.ETag == truth[u].ETag {
			fresh++
		}
	}
	return float64(fresh) / float64(max(len(rates), 1))
}

// estimateRatios compares the crawler's change-rate estimates with the
// true rates, over pages of at least 20 visits.
func estimateRatios(w *testweb.Web, c *crawl.Crawler) (n int, median, mean float64) {
	var ratios []float64
	for u, rate := range w.Rates() {
		est, visits, ok := c.ChangeRate(u)
		if ok && visits >= 20 {
			ratios = append(ratios, est/rate)
		}
	}
	if len(ratios) == 0 {
		return 0, math.NaN(), math.NaN()
	}
	slices.Sort(ratios)
	s := 0.0
	for _, r := range ratios {
		s += r
	}
	return len(ratios), ratios[len(ratios)/2], s / float64(len(ratios))
}

// optimumPerHost is the optimal mean freshness when each host gets an
// equal share of budget requests per second (politeness is per host),
// and each page's optimal visits per second.
func optimumPerHost(w *testweb.Web, budget float64) (float64, map[string]float64) {
	byHost := map[string][]float64{}
	urls := map[string][]string{}
	for u, r := range w.Rates() {
		h := u[:strings.Index(u[len("http://"):], "/")+len("http://")]
		byHost[h] = append(byHost[h], r)
		urls[h] = append(urls[h], u)
	}
	freqs := map[string]float64{}
	hosts := make([]string, 0, len(byHost))
	for h := range byHost {
		hosts = append(hosts, h)
	}
	sort.Strings(hosts)
	sum, n := 0.0, 0
	for _, h := range hosts {
		rates := byHost[h]
		fs, f := revisit.OptimalFrequencies(rates, budget/float64(len(hosts)))
		for i, u := range urls[h] {
			freqs[u] = fs[i]
		}
		sum += f * float64(len(rates))
		n += len(rates)
	}
	return sum / float64(max(n, 1)), freqs
}

// Print writes the report as a table.
func (r *RevisitReport) Print(out io.Writer) {
	c := r.Config
	fmt.Fprintf(out, "revisits: %d hosts x %d pages, change rates log-uniform over %g orders around %g/s, delay %v, Last-Modified %s; warm-up %v, measured over %v\n",
		c.Hosts, c.Pages, c.Spread, c.Center, c.Delay, c.LastModified, c.Warmup, c.Measure)
	fmt.Fprintf(out, "optimum for %.2f requests/s: freshness %.4f\n", r.Budget, r.Runs[0].Optimum)
	fmt.Fprintf(out, "%-9s %9s %10s %12s %10s %14s\n", "policy", "fresh", "of optimum", "requests/s", "estimated", "est/true med,mean")
	for _, run := range r.Runs {
		fmt.Fprintf(out, "%-9s %9.4f %10.3f %12.2f %10d %8.2f,%5.2f\n", run.Policy, run.Freshness, run.Share(), run.Requests,
			run.Estimated, run.MedianRatio, run.MeanR)
	}
	fmt.Fprintln(out, "by true change rate: visits per page per hour and freshness, the policy's against the optimum's")
	for _, run := range r.Runs {
		fmt.Fprintf(out, "%s:\n  %-17s %5s %9s %9s %7s %7s\n", run.Policy, "changes/s", "pages", "visits/h", "optimum", "fresh", "optimum")
		for _, b := range run.Bands {
			fmt.Fprintf(out, "  %7.2g to %-7.2g %5d %9.1f %9.1f %7.3f %7.3f\n", b.Lo, b.Hi, b.Pages, b.Visits*3600, b.OptVisits*3600, b.Fresh, b.OptFresh)
		}
	}
}
