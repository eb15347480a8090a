package crawl

import (
	"fmt"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/cocrawl/cocrawl/webevents"
)

// hostileSite serves an index linking to n pages; bad decides the headers
// of each answer.
func hostileSite(t *testing.T, n int, bad func(w http.ResponseWriter, r *http.Request)) *httptest.Server {
	t.Helper()
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		switch {
		case r.URL.Path == "/robots.txt":
			http.NotFound(w, r)
		case r.URL.Path == "/":
			w.Header().Set("Content-Type", "text/html")
			var b strings.Builder
			for i := range n {
				fmt.Fprintf(&b, `<a href="/p%d">p</a> `, i)
			}
			fmt.Fprint(w, "<html><body>", b.String(), "</body></html>")
		default:
			if bad != nil {
				bad(w, r)
			}
			w.Header().Set("Content-Type", "text/plain")
			if r.Method != http.MethodHead {
				fmt.Fprint(w, "page ", r.URL.Path)
			}
		}
	}))
	t.Cleanup(srv.Close)
	return srv
}

// Issue 18, item 8: three hosts send headers no event can carry (a tab in
// an ETag, an ETag of 2,000 bytes, a HEAD Content-Length of 2^62); the two
// honest hosts crawled with them keep every event, and so do the hostile
// ones, judged without the bad header.
func TestHostileHeadersLoseNoEvents(t *testing.T) {
	const pages = 15
	sites := []*httptest.Server{
		hostileSite(t, pages, nil),
		hostileSite(t, pages, func(w http.ResponseWriter, _ *http.Request) { w.Header().Set("ETag", "\"a\tb\"") }),
		hostileSite(t, pages, func(w http.ResponseWriter, _ *http.Request) {
			w.Header().Set("ETag", `"`+strings.Repeat("x", 2000)+`"`)
		}),
		hostileSite(t, pages, func(w http.ResponseWriter, r *http.Request) {
			if r.Method == http.MethodHead {
				w.Header().Set("Content-Length", "4611686018427387904")
			}
		}),
		hostileSite(t, pages, nil),
	}
	cfg := Config{
		CID: testCID, Workers: 8, MinDelay: 5 * time.Millisecond, DelaySet: true, DelayFactor: 1,
		RevisitMin: 100 * time.Millisecond, RevisitMax: 200 * time.Millisecond,
		BackoffBase: 200 * time.Millisecond, BackoffMax: time.Second,
		Fetch: FetchConfig{AllowPrivate: true, Timeout: 5 * time.Second},
	}
	for _, s := range sites {
		cfg.Seeds = append(cfg.Seeds, s.URL+"/")
	}
	st := webevents.NewMemStore()
	c := startCrawler(t, cfg, st, &MemFrontier{})
	waitFor(t, 20*time.Second, "an event for every page of every host", func() bool {
		for _, s := range sites {
			for i := range pages {
				if _, ok := stat(st, fmt.Sprintf("%s/p%d", s.URL, i)); !ok {
					return false
				}
			}
		}
		return true
	})
	// Re-polls with HEAD (the pages are not HTML) must not stop either.
	before := c.Stats().Polls
	waitFor(t, 10*time.Second, "re-polls", func() bool { return c.Stats().Polls > before+4*pages })
	for _, s := range sites[1:3] {
		e, _ := stat(st, s.URL+"/p0")
		if e.ETag != "" {
			t.Errorf("a hostile ETag was kept: %.40q", e.ETag)
		}
	}
	if n := c.Stats().Errors["refused"]; n != 0 {
		t.Errorf("%d events refused: the headers should have been cleaned first", n)
	}
}
