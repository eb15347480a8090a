package crawl

import (
	"context"
	"io"
	"net"
	"net/http"
	"net/url"
	"sync"
	"sync/atomic"
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
// server and the transport's system calls take most of the CPU.
func BenchmarkCrawlAgainstColly(b *testing.B) {
	w, err := testweb.Start(testweb.Config{Hosts: 200, PagesPerHost: 50, Seed: 3})
	if err != nil {
		b.Fatal(err)
	}
	defer w.Close()
	for b.Loop() {
		ours := cocrawlPagesPerSecond(b, w, nil)
		theirs := collyPagesPerSecond(b, w)
		bare := barePagesPerSecond(w)
		b.ReportMetric(ours, "cocrawl-pages/s")
		b.ReportMetric(theirs, "colly-pages/s")
		b.ReportMetric(ours/theirs, "x-colly")
		b.ReportMetric(bare, "bare-pages/s")
		b.ReportMetric(bare/theirs, "x-colly-bare")
		b.ReportMetric(ours/bare, "of-bare")
	}
}

// cocrawlPagesPerSecond crawls w to benchPages pages as `cocrawl run`
// sets it up, with arch as its archive when not nil.
func cocrawlPagesPerSecond(b *testing.B, w *testweb.Web, arch Archive) float64 {
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
	start := time.Now()
	go func() {
		for ctx.Err() == nil && c.Stats().Polls < benchPages {
			time.Sleep(5 * time.Millisecond)
		}
		cancel()
	}()
	if err := c.Run(ctx); err != nil {
		b.Fatal(err)
	}
	el := time.Since(start)
	polls := c.Stats().Polls
	if polls < benchPages {
		b.Fatalf("cocrawl polled %d pages in %v, not %d", polls, el, benchPages)
	}
	return float64(polls) / el.Seconds()
}

func collyPagesPerSecond(b *testing.B, w *testweb.Web) float64 {
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
	start := time.Now()
	for _, s := range w.Seeds() {
		if err := c.Visit(s); err != nil {
			b.Fatal(err)
		}
	}
	c.Wait()
	el := time.Since(start)
	n := pages.Load()
	if n < benchPages*9/10 {
		b.Fatalf("colly fetched %d pages, not about %d", n, benchPages)
	}
	return float64(n) / el.Seconds()
}

// barePagesPerSecond fetches every page of w once, with 64 fetchers that
// each take a host's pages in turn, over one connection per host, and
// reads each body to its end: the fetching alone.
func barePagesPerSecond(w *testweb.Web) float64 {
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
	start := time.Now()
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
	return float64(pages.Load()) / time.Since(start).Seconds()
}
