package crawl

import (
	"bytes"
	"context"
	"crypto/sha256"
	"fmt"
	"math"
	"net/url"
	"runtime"
	"strings"
	"testing"
	"time"

	"golang.org/x/net/html"

	"github.com/cocrawl/cocrawl/crawl/fingerprint"
	"github.com/cocrawl/cocrawl/internal/testweb"
	"github.com/cocrawl/cocrawl/webevents"
)

// BenchmarkCrawl polls testweb's 200 hosts with no per-host delay (one
// connection per host still) and reports pages per second, with the
// content fingerprint (as the crawler runs) and without it (the cost of
// the fingerprint).
func BenchmarkCrawl(b *testing.B) {
	w, err := testweb.Start(testweb.Config{Hosts: 200, PagesPerHost: 50, Seed: 3})
	if err != nil {
		b.Fatal(err)
	}
	defer w.Close()
	for _, fp := range []bool{true, false} {
		name := "fingerprint"
		if !fp {
			name = "no-fingerprint"
		}
		b.Run(name, func(b *testing.B) { benchmarkCrawl(b, w, !fp) })
	}
}

func benchmarkCrawl(b *testing.B, w *testweb.Web, noFingerprint bool) {
	for b.Loop() {
		cfg := Config{Seeds: w.Seeds(), CID: testCID, Workers: 64, DelaySet: true, DelayFactor: 0.000001,
			RevisitMin: time.Hour, RevisitMax: time.Hour, Fetch: FetchConfig{AllowPrivate: true}}
		st, err := webevents.OpenBadger(b.TempDir(), webevents.BadgerOptions{})
		if err != nil {
			b.Fatal(err)
		}
		c, err := New(cfg, st, StoredFrontier{Table: st.Table(webevents.TableFrontier), Backlog: st.Table(webevents.TableBacklog)})
		if err != nil {
			b.Fatal(err)
		}
		c.fetcher.noFingerprint = noFingerprint
		ctx, cancel := context.WithTimeout(context.Background(), 8*time.Second)
		start := time.Now()
		go func() {
			for ctx.Err() == nil && c.Stats().Polls < 10000 {
				time.Sleep(10 * time.Millisecond)
			}
			cancel()
		}()
		if err := c.Run(ctx); err != nil {
			b.Fatal(err)
		}
		el := time.Since(start)
		s := c.Stats()
		b.ReportMetric(float64(s.Polls)/el.Seconds(), "pages/s")
		b.ReportMetric(float64(s.Created), "created")
		st.Close()
	}
}

func samplePage(n int) []byte {
	var b bytes.Buffer
	b.WriteString(`<!doctype html><html><head><title>t</title><link rel="alternate" href="/feed"><base href="http://site.example/dir/"></head><body>`)
	for i := range n {
		fmt.Fprintf(&b, `<div class="item"><p>Paragraph %d with <b>bold</b> text and a <a href="page-%d.html?x=%d#frag">link</a>.</p></div>`, i, i, i%7)
	}
	b.WriteString(`</body></html>`)
	return b.Bytes()
}

// BenchmarkExtractLinks compares our tokenizer-based extraction with a
// plain html.Parse of the same page (the tree alone, no link walk).
func BenchmarkExtractLinks(b *testing.B) {
	page := samplePage(400)
	base, _ := url.Parse("http://site.example/dir/index.html")
	b.Run("ExtractLinks", func(b *testing.B) {
		b.SetBytes(int64(len(page)))
		for b.Loop() {
			if _, err := ExtractLinks(bytes.NewReader(page), base); err != nil {
				b.Fatal(err)
			}
		}
	})
	b.Run("html.Parse", func(b *testing.B) {
		b.SetBytes(int64(len(page)))
		for b.Loop() {
			if _, err := html.Parse(bytes.NewReader(page)); err != nil {
				b.Fatal(err)
			}
		}
	})
}

// BenchmarkPageRead compares what a fetched HTML page costs to read:
// its links alone, its links with the content fingerprint in the same
// pass (what the fetcher does), and the sha-256 digest of its bytes that
// it also keeps.
func BenchmarkPageRead(b *testing.B) {
	page := samplePage(400)
	base, _ := url.Parse("http://site.example/dir/index.html")
	b.Run("links", func(b *testing.B) {
		b.SetBytes(int64(len(page)))
		for b.Loop() {
			if _, err := extractPage(bytes.NewReader(page), base, nil); err != nil {
				b.Fatal(err)
			}
		}
	})
	b.Run("links+fingerprint", func(b *testing.B) {
		b.SetBytes(int64(len(page)))
		for b.Loop() {
			var fb fingerprint.Builder
			fb.IgnoreWordsOf(base.RequestURI())
			if _, err := extractPage(bytes.NewReader(page), base, &fb); err != nil {
				b.Fatal(err)
			}
			if _, ok := fb.Sum(); !ok {
				b.Fatal("no fingerprint")
			}
		}
	})
	b.Run("sha256", func(b *testing.B) {
		b.SetBytes(int64(len(page)))
		for b.Loop() {
			sha256.Sum256(page)
		}
	})
}

// BenchmarkFrontierMemory reports the heap bytes per known URL.
func BenchmarkFrontierMemory(b *testing.B) {
	const n = 200_000
	for b.Loop() {
		runtime.GC()
		var before, after runtime.MemStats
		runtime.ReadMemStats(&before)
		f := newFrontier()
		now := time.Now()
		for i := range n {
			f.add(URLState{URL: fmt.Sprintf("http://host%d.example.org/section/%d/page-%d.html", i%1000, i%50, i), Due: now, Depth: 3})
		}
		runtime.GC()
		runtime.ReadMemStats(&after)
		b.ReportMetric(float64(after.HeapAlloc-before.HeapAlloc)/n, "B/URL")
		runtime.KeepAlive(f)
	}
}

func BenchmarkNormalize(b *testing.B) {
	base, _ := url.Parse("http://Example.com/a/b/")
	refs := strings.Fields("../x.html?PHPSESSID=1&a=b#f /%7Euser/ HTTP://OTHER.example:80/p page.html")
	for b.Loop() {
		for _, r := range refs {
			Normalize(base, r)
		}
	}
}

// BenchmarkPageLinks normalises the links of a page in the forms pages
// write them (a CMS writes its own origin before every path; anchors,
// queries, other sites) by the page's short way (pageBase.normalize,
// "page") and by the general one (Normalize, "general"), in one run.
func BenchmarkPageLinks(b *testing.B) {
	base, _ := url.Parse("https://example.org/blog/2024/11/a-post/")
	links := []string{"https://example.org/", "https://example.org/about/", "https://example.org/2024/10/older-post/",
		"https://example.org/category/news/", "https://example.org/?p=123", "https://example.org/feed/", "#comments",
		"#respond", "/wp-content/uploads/2024/11/photo.jpg", "reply.html?replytocom=42#respond", "page/2/",
		"https://other.example/", "https://cdn.example.net/lib.js?ver=6.4", "/tag/go/", "https://example.org/tag/crawling/#top"}
	b.Run("page", func(b *testing.B) {
		for b.Loop() {
			pb := newPageBase(base)
			for _, l := range links {
				if _, err := pb.normalize(l); err != nil {
					b.Fatal(err)
				}
			}
		}
		b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N*len(links)), "ns/link")
	})
	b.Run("general", func(b *testing.B) {
		for b.Loop() {
			for _, l := range links {
				if _, err := Normalize(base, l); err != nil {
					b.Fatal(err)
				}
			}
		}
		b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N*len(links)), "ns/link")
	})
}

// BenchmarkRefit is the cost of one host's fit of its revisit schedule:
// a pass over its URLs (prior, then bins) and the bisection for μ.
func BenchmarkRefit(b *testing.B) {
	const n = 100_000
	c, err := New(Config{Seeds: []string{"http://a.test/"}, CID: testCID, MinDelay: 10 * time.Millisecond, DelaySet: true,
		RevisitMin: time.Second, RevisitMax: 1e6 * time.Second}, nil, &MemFrontier{})
	if err != nil {
		b.Fatal(err)
	}
	now := time.Now()
	for i := range n {
		lambda := math.Pow(10, -4+3*float64(i%997)/997)
		c.f.add(URLState{URL: fmt.Sprintf("http://a.test/%d", i), Polls: 10, Due: now.Add(time.Hour), Rate: rateOf(lambda)})
	}
	h := c.f.hosts["http://a.test"]
	for b.Loop() {
		h.fit.at = time.Time{}
		c.refit(h, now)
	}
	b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N)/n, "ns/URL")
}

// BenchmarkFrontierLoad is a restart: 200,000 stored states of 200 hosts,
// polled once, read back into a crawler's frontier.
func BenchmarkFrontierLoad(b *testing.B) {
	st, err := webevents.OpenBadger(b.TempDir(), webevents.BadgerOptions{})
	if err != nil {
		b.Fatal(err)
	}
	defer st.Close()
	sf := StoredFrontier{Table: st.Table(webevents.TableFrontier), Backlog: st.Table(webevents.TableBacklog)}
	const n = 200000
	due := time.Now().Add(time.Hour)
	batch := make([]URLState, 0, 1000)
	for i := range n {
		batch = append(batch, URLState{URL: fmt.Sprintf("http://h%d.test:8080/p/%d.html", i%200, i), Depth: 2, Due: due,
			Interval: time.Hour, Polls: 1, ETag: `"abc"`, LastMod: "Tue, 24 Nov 2026 10:00:00 GMT", HostNext: due.UnixMilli(), Seen: due.UnixMilli()})
		if len(batch) == cap(batch) {
			if err := sf.SaveFrontier(batch); err != nil {
				b.Fatal(err)
			}
			batch = batch[:0]
		}
	}
	for b.Loop() {
		c, err := New(Config{CID: testCID}, webevents.NewMemStore(), sf)
		if err != nil {
			b.Fatal(err)
		}
		if got, err := c.Load(); err != nil || got != n {
			b.Fatalf("loaded %d, %v", got, err)
		}
	}
	b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N*n), "ns/URL")
}
