package crawl

import (
	"context"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/cocrawl/cocrawl/crawl/warc"
	"github.com/cocrawl/cocrawl/internal/testweb"
	"github.com/cocrawl/cocrawl/webevents"
)

// BenchmarkCrawlWARC measures what --warc costs and writes: the crawl of
// BenchmarkCrawlAgainstColly's web with and without an archive, in turns
// in one run (pages/s and their ratio); then a crawl that revisits a web
// where about a fifth of the pages change between two polls, for the WARC
// bytes (compressed, on disk) per page fetched and the share of fetches
// written as revisits.
func BenchmarkCrawlWARC(b *testing.B) {
	w, err := testweb.Start(testweb.Config{Hosts: 200, PagesPerHost: 50, Seed: 3})
	if err != nil {
		b.Fatal(err)
	}
	defer w.Close()
	var off, on float64
	for b.Loop() {
		off += cocrawlPages(b, w, nil).perSecond
		arch, err := warc.Open(warc.Options{Dir: b.TempDir(), Software: "cocrawl bench"})
		if err != nil {
			b.Fatal(err)
		}
		on += cocrawlPages(b, w, arch).perSecond
		if err := arch.Close(); err != nil {
			b.Fatal(err)
		}
	}
	b.ReportMetric(off/float64(b.N), "off-pages/s")
	b.ReportMetric(on/float64(b.N), "warc-pages/s")
	b.ReportMetric(on/off, "x-off")

	bytesPerPage, revisitShare := warcOfChangingWeb(b)
	b.ReportMetric(bytesPerPage, "warc-bytes/page")
	b.ReportMetric(revisitShare, "revisit-share")
}

// warcOfChangingWeb crawls 20 hosts of 20 pages, each page changing at
// 0.22 per second (a fifth of the pages between two polls a second
// apart), revisited every second, for 15 s, and returns the WARC bytes
// on disk per page fetched and the share of fetches written as revisits.
func warcOfChangingWeb(b *testing.B) (float64, float64) {
	w, err := testweb.Start(testweb.Config{Hosts: 20, PagesPerHost: 20, UpdateRate: 0.223, Seed: 5})
	if err != nil {
		b.Fatal(err)
	}
	defer w.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 15*time.Second)
	defer cancel()
	go w.Run(ctx)
	dir := b.TempDir()
	arch, err := warc.Open(warc.Options{Dir: dir, Software: "cocrawl bench"})
	if err != nil {
		b.Fatal(err)
	}
	cfg := Config{Seeds: w.Seeds(), CID: testCID, Workers: 16, MinDelay: 10 * time.Millisecond, DelaySet: true, DelayFactor: 1,
		RevisitMin: time.Second, RevisitMax: time.Second, Revisit: RevisitUniform, Fetch: FetchConfig{AllowPrivate: true}, Archive: arch}
	c, err := New(cfg, webevents.NewMemStore(), &MemFrontier{})
	if err != nil {
		b.Fatal(err)
	}
	if err := c.Run(ctx); err != nil {
		b.Fatal(err)
	}
	if err := arch.Close(); err != nil {
		b.Fatal(err)
	}
	var onDisk int64
	names, _ := filepath.Glob(filepath.Join(dir, "*.warc.gz"))
	for _, n := range names {
		if fi, err := os.Stat(n); err == nil {
			onDisk += fi.Size()
		}
	}
	s := arch.Stats()
	fetches := float64(s.Records / 2)
	if fetches == 0 {
		b.Fatal("nothing archived")
	}
	return float64(onDisk) / fetches, float64(s.Revisits) / fetches
}
