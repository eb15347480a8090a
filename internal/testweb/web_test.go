package testweb

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"io"
	"math"
	"net/http"
	"runtime"
	"slices"
	"strings"
	"testing"
	"time"
)

func get(t *testing.T, url string, hdr ...string) (*http.Response, string) {
	t.Helper()
	req, _ := http.NewRequest("GET", url, nil)
	for i := 0; i+1 < len(hdr); i += 2 {
		req.Header.Set(hdr[i], hdr[i+1])
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	b, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	return resp, string(b)
}

func TestWeb(t *testing.T) {
	w, err := Start(Config{Hosts: 3, PagesPerHost: 4, RobotsEvery: 3, CrawlDelay: 2e9, RobotsDownHost: false, Traps: true, NoLastModifiedEvery: 2})
	if err != nil {
		t.Fatal(err)
	}
	defer w.Close()
	h0, h1, h2 := w.Hosts()[0], w.Hosts()[1], w.Hosts()[2]
	_, home := get(t, h0.URL+"/")
	if !strings.Contains(home, `href="/p/3.html"`) || !strings.Contains(home, `/cal/0`) {
		t.Fatalf("home page: %s", home)
	}
	page := h0.URL + "/p/1.html"
	resp, body := get(t, page)
	tag := resp.Header.Get("ETag")
	if resp.StatusCode != 200 || tag == "" || resp.Header.Get("Last-Modified") == "" || !strings.Contains(body, "version 1") {
		t.Fatalf("page: %d %v", resp.StatusCode, resp.Header)
	}
	if resp, _ := get(t, page, "If-None-Match", tag); resp.StatusCode != 304 {
		t.Fatalf("conditional: %d", resp.StatusCode)
	}
	if r, _ := get(t, h1.URL+"/p/0.html"); r.Header.Get("Last-Modified") != "" {
		t.Fatal("host 1 should send no Last-Modified")
	}
	w.Update(page)
	if resp, body := get(t, page, "If-None-Match", tag); resp.StatusCode != 200 || !strings.Contains(body, "version 2") {
		t.Fatalf("after update: %d", resp.StatusCode)
	}
	created := w.Create(0)
	if _, home := get(t, h0.URL+"/"); !strings.Contains(home, created[len(h0.URL):]) {
		t.Fatal("home page does not list the created page")
	}
	w.Delete(page)
	if resp, _ := get(t, page); resp.StatusCode != 404 && resp.StatusCode != 410 {
		t.Fatalf("deleted page: %d", resp.StatusCode)
	}
	tr := w.Truth()
	if tr[page].Live || tr[page].Version != 2 || !tr[created].Live || tr[h0.URL+"/"].Version != 3 {
		t.Fatalf("truth: page %+v created %+v home %+v", tr[page], tr[created], tr[h0.URL+"/"])
	}
	if _, r := get(t, h2.URL+"/robots.txt"); !strings.Contains(r, "Disallow: /private/") || !strings.Contains(r, "Crawl-delay: 2") {
		t.Fatalf("robots: %q", r)
	}
	if _, b := get(t, h0.URL+"/cal/41"); !strings.Contains(b, "/cal/42") {
		t.Fatal("calendar trap")
	}
	if n := len(h0.Log()); n != 7 || h0.MaxConcurrent() != 1 {
		t.Fatalf("log has %d requests, max concurrency %d", n, h0.MaxConcurrent())
	}
	if s := w.Stats(); s.Updates != 1 || s.Creates != 1 || s.Deletes != 1 {
		t.Fatalf("stats %+v", s)
	}
}

// A web without a request log serves as before, keeps no log, and still
// counts the requests it served at once.
func TestNoRequestLog(t *testing.T) {
	w, err := Start(Config{Hosts: 1, PagesPerHost: 4, NoRequestLog: true})
	if err != nil {
		t.Fatal(err)
	}
	defer w.Close()
	h := w.Hosts()[0]
	for range 3 {
		if resp, body := get(t, h.URL+"/p/1.html"); resp.StatusCode != 200 || !strings.Contains(body, "version 1") {
			t.Fatalf("page: %d", resp.StatusCode)
		}
	}
	if n := len(h.Log()); n != 0 || h.MaxConcurrent() != 1 {
		t.Fatalf("log has %d requests, max concurrency %d", n, h.MaxConcurrent())
	}
}

// Pages change at their own rates, log-uniform over RateSpread orders of
// magnitude, and Rates reports them: the fast half of the pages gets most
// of the updates.
func TestRateSpread(t *testing.T) {
	w, err := Start(Config{Hosts: 2, PagesPerHost: 40, UpdateRate: 20, RateSpread: 2, Seed: 9})
	if err != nil {
		t.Fatal(err)
	}
	defer w.Close()
	rates := w.Rates()
	lo, hi := math.Inf(1), 0.0
	for _, r := range rates {
		lo, hi = min(lo, r), max(hi, r)
	}
	if hi/lo < 10 || hi/lo > 100 || lo < 20/10.01 || hi > 20*10.01 {
		t.Fatalf("rates from %g to %g for a spread of 2 orders around 20", lo, hi)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
	defer cancel()
	w.Run(ctx)
	var fast, slow int
	w.mu.Lock()
	var all []float64
	for _, r := range rates {
		all = append(all, r)
	}
	slices.Sort(all)
	median := all[len(all)/2]
	for _, h := range w.hosts {
		for _, p := range h.pages {
			if w.pageRate(p) >= median {
				fast += p.version - 1
			} else {
				slow += p.version - 1
			}
		}
	}
	w.mu.Unlock()
	if fast < 3*slow {
		t.Errorf("the fast half got %d updates, the slow half %d", fast, slow)
	}
}

// A page is found by its path, whether or not it is one of /p/N.html.
func TestPageLookup(t *testing.T) {
	w, err := Start(Config{Hosts: 2, PagesPerHost: 20, RobotsEvery: 1, Seed: 4})
	if err != nil {
		t.Fatal(err)
	}
	defer w.Close()
	h := w.hosts[0]
	for i, p := range h.pages {
		if got := h.page(p.path); got != p {
			t.Errorf("page %d (%s): found %v", i, p.path, got)
		}
	}
	for _, path := range []string{"/p/20.html", "/p/99.html", "/p/01.html", "/p/-1.html", "/p/.html", "/p/1.htm", "/p/1x.html", "/p/9999999999.html", "/nothing", "/"} {
		if got := h.page(path); got != nil { // 20 is the private page's place
			t.Errorf("%s: found %s", path, got.path)
		}
	}
	if h.page("/private/secret.html") == nil {
		t.Error("the private page is not found")
	}
	if u := w.Create(0); h.page(strings.TrimPrefix(u, h.URL)) == nil {
		t.Errorf("a created page %s is not found", u)
	}
}

// BenchmarkWebMemory reports the heap bytes and objects a page of a web
// built as `cocrawl testweb` builds it takes (the scale runs' web held 25
// million pages).
func BenchmarkWebMemory(b *testing.B) {
	const hosts, pages = 200, 5000
	for b.Loop() {
		runtime.GC()
		var before, after runtime.MemStats
		runtime.ReadMemStats(&before)
		w, err := Start(Config{Hosts: hosts, PagesPerHost: pages, RobotsEvery: 5, CrawlDelay: time.Second,
			NoLastModifiedEvery: 4, LinksPerPage: 5, Seed: 1, NoRequestLog: true})
		if err != nil {
			b.Fatal(err)
		}
		runtime.GC()
		runtime.ReadMemStats(&after)
		b.ReportMetric(float64(after.HeapAlloc-before.HeapAlloc)/(hosts*pages), "B/page")
		b.ReportMetric(float64(after.HeapObjects-before.HeapObjects)/(hosts*pages), "objects/page")
		w.Close()
	}
}

// With ServedDigests the web tells which version a body was, by its
// SHA-256: two responses of a Dynamic page differ in their noise and are
// the same version; after an update, the next is the next version.
func TestVersionOfServedDigests(t *testing.T) {
	w, err := Start(Config{Hosts: 1, PagesPerHost: 2, Kinds: []PageKind{Dynamic}, ServedDigests: true})
	if err != nil {
		t.Fatal(err)
	}
	defer w.Close()
	page := w.Hosts()[0].URL + "/p/1.html"
	digest := func() string {
		_, body := get(t, page)
		sum := sha256.Sum256([]byte(body))
		return "sha256:" + hex.EncodeToString(sum[:])
	}
	a, b := digest(), digest()
	if a == b {
		t.Fatal("two responses of a Dynamic page are the same bytes: the noise is gone")
	}
	w.Update(page)
	c := digest()
	for d, want := range map[string]int{a: 1, b: 1, c: 2} {
		if v, ok := w.VersionOf(d); !ok || v != want {
			t.Errorf("VersionOf(%s) = %d, %v; want %d", d, v, ok, want)
		}
	}
	if _, ok := w.VersionOf("sha256:00"); ok {
		t.Error("a digest never served has a version")
	}
}
