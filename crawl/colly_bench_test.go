package crawl

import (
	"context"
	"errors"
	"io"
	"net"
	"net/http"
	"net/url"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/gocolly/colly/v2"

	"github.com/cocrawl/cocrawl/internal/testweb"
	"github.com/cocrawl/cocrawl/webevents"
)

// benchPages is how many pages each crawler of BenchmarkCrawlAgainstColly
// fetches.
const benchPages = 10000

// BenchmarkCrawlAgainstColly crawls the 200-host web of BenchmarkCrawl
// with cocrawl as `cocrawl run` sets it up (the store, the backlog and the
// parked revisits, the content fingerprint, one connection per host, no
// delay) and with Colly (github.com/gocolly/colly/v2, the most used Go
// scraping framework), both to benchPages pages with 64 fetches in flight,
// one after the other on the same web, and reports their pages/s and the
// ratio. Colly gets the better of the comparison: no robots.txt, no store,
// no change detection, and up to 64 connections to a host.
//
// A third crawler in the same run gives the ceiling: 64 fetchers that
// know every URL, fetch each page once over one connection per host and
// throw its body away (no parse, no store). x-colly-bare is its ratio
// to Colly, and of-bare cocrawl's share of its speed: what a crawler
// built on net/http can reach on this web and machine, where the web's
// server and the transport's system calls take most of the CPU. Each
// crawler's CPU µs a page (the process's, the web's server included) is
// reported beside its speed: pages a second follow the machine's speed of
// the moment and any wait, CPU a page the work alone.
func BenchmarkCrawlAgainstColly(b *testing.B) {
	w, err := testweb.Start(testweb.Config{Hosts: 200, PagesPerHost: 50, Seed: 3})
	if err != nil {
		b.Fatal(err)
	}
	defer w.Close()
	for b.Loop() {
		o, t, r := cocrawlPages(b, w, nil), collyPages(b, w), barePages(b, w)
		ours, theirs, bare := o.perSecond, t.perSecond, r.perSecond
		b.ReportMetric(o.cpuPerPage, "cocrawl-cpu-µs/page")
		b.ReportMetric(t.cpuPerPage, "colly-cpu-µs/page")
		b.ReportMetric(r.cpuPerPage, "bare-cpu-µs/page")
		b.ReportMetric(ours, "cocrawl-pages/s")
		b.ReportMetric(theirs, "colly-pages/s")
		b.ReportMetric(ours/theirs, "x-colly")
		b.ReportMetric(bare, "bare-pages/s")
		b.ReportMetric(bare/theirs, "x-colly-bare")
		b.ReportMetric(ours/bare, "of-bare")
	}
}

// crawlClock times a crawl: its wall time, and the process's CPU time
// (user and system, the web's server included). The crawlers here keep
// the two cores mostly busy (73% to 99% in the runs of 2026-11-28), so
// what a page costs in CPU says why one is faster.
type crawlClock struct {
	b    *testing.B
	wall time.Time
	cpu  time.Duration
}

// crawlRates are a crawl's pages a second and CPU µs a page.
type crawlRates struct{ perSecond, cpuPerPage float64 }

func startClock(b *testing.B) crawlClock {
	c := crawlClock{b: b}
	c.wall, c.cpu = time.Now(), c.processCPU()
	return c
}

func (c crawlClock) processCPU() time.Duration {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		c.b.Fatal(err)
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}

// rates is the crawl's figures, pages fetched since the clock started.
func (c crawlClock) rates(pages int64) crawlRates {
	cpu, el := c.processCPU()-c.cpu, time.Since(c.wall)
	if pages <= 0 {
		return crawlRates{}
	}
	return crawlRates{perSecond: float64(pages) / el.Seconds(), cpuPerPage: float64(cpu.Microseconds()) / float64(pages)}
}

// cocrawlPages crawls w to benchPages pages as `cocrawl run` sets it
// up, with arch as its archive when not nil.
func cocrawlPages(b *testing.B, w *testweb.Web, arch Archive) crawlRates {
	cfg := Config{Seeds: w.Seeds(), CID: testCID, Workers: 64, DelaySet: true, DelayFactor: 0.000001,
		RevisitMin: time.Hour, RevisitMax: time.Hour, Fetch: FetchConfig{AllowPrivate: true}, Archive: arch}
	st, err := webevents.OpenBadger(b.TempDir(), webevents.BadgerOptions{})
	if err != nil {
		b.Fatal(err)
	}
	defer st.Close()
	c, err := New(cfg, st, StoredFrontier{Table: st.Table(webevents.TableFrontier),
		Backlog: st.Table(webevents.TableBacklog), Revisits: st.Table(webevents.TableRevisits)})
	if err != nil {
		b.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	clock := startClock(b)
	go func() {
		for ctx.Err() == nil && c.Stats().Polls < benchPages {
			time.Sleep(5 * time.Millisecond)
		}
		cancel()
	}()
	if err := c.Run(ctx); err != nil {
		b.Fatal(err)
	}
	r := clock.rates(c.Stats().Polls)
	if polls := c.Stats().Polls; polls < benchPages {
		b.Fatalf("cocrawl polled %d pages, not %d", polls, benchPages)
	}
	return r
}

func collyPages(b *testing.B, w *testweb.Web) crawlRates {
	c := colly.NewCollector(colly.Async(true), colly.MaxRequests(benchPages))
	c.WithTransport(&http.Transport{
		DialContext:         (&net.Dialer{Timeout: 5 * time.Second}).DialContext,
		MaxIdleConns:        1024,
		MaxIdleConnsPerHost: 64,
		IdleConnTimeout:     30 * time.Second,
	})
	if err := c.Limit(&colly.LimitRule{DomainGlob: "*", Parallelism: 64}); err != nil {
		b.Fatal(err)
	}
	var pages atomic.Int64
	c.OnResponse(func(*colly.Response) { pages.Add(1) })
	c.OnHTML("a[href]", func(e *colly.HTMLElement) {
		_ = e.Request.Visit(e.Attr("href")) // known, or past MaxRequests: not an error here
	})
	clock := startClock(b)
	for _, s := range w.Seeds() {
		// Colly runs asynchronously: a link from a page already fetched
		// may have reached a later seed first.
		var seen *colly.AlreadyVisitedError
		if err := c.Visit(s); err != nil && !errors.As(err, &seen) {
			b.Fatal(err)
		}
	}
	c.Wait()
	n := pages.Load()
	r := clock.rates(n)
	if n < benchPages*9/10 {
		b.Fatalf("colly fetched %d pages, not about %d", n, benchPages)
	}
	return r
}

// barePages fetches every page of w once, with 64 fetchers that
// each take a host's pages in turn, over one connection per host, and
// reads each body to its end: the fetching alone.
func barePages(b *testing.B, w *testweb.Web) crawlRates {
	byHost := map[string][]string{}
	for _, u := range w.LiveURLs() {
		p, err := url.Parse(u)
		if err == nil {
			byHost[p.Host] = append(byHost[p.Host], u)
		}
	}
	hosts := make(chan []string, len(byHost))
	for _, us := range byHost {
		hosts <- us
	}
	close(hosts)
	tr := &http.Transport{MaxConnsPerHost: 1, MaxIdleConnsPerHost: 1, MaxIdleConns: 1024}
	defer tr.CloseIdleConnections()
	client := &http.Client{Transport: tr, Timeout: 5 * time.Second}
	var pages atomic.Int64
	var wg sync.WaitGroup
	clock := startClock(b)
	for range 64 {
		wg.Go(func() {
			for us := range hosts {
				for _, u := range us {
					resp, err := client.Get(u)
					if err != nil {
						continue
					}
					_, _ = io.Copy(io.Discard, resp.Body)
					resp.Body.Close()
					pages.Add(1)
				}
			}
		})
	}
	wg.Wait()
	return clock.rates(pages.Load())
}
