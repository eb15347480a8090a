package crawl

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/cocrawl/cocrawl/webevents"
)

func TestFetchHostile(t *testing.T) {
	mux := http.NewServeMux()
	mux.HandleFunc("/big", func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "text/html")
		for range 100 {
			w.Write([]byte(strings.Repeat("<p>x</p>", 1024)))
		}
	})
	mux.HandleFunc("/slow", func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "text/html")
		for i := 0; r.Context().Err() == nil && i < 100; i++ {
			w.Write([]byte("<"))
			w.(http.Flusher).Flush()
			time.Sleep(20 * time.Millisecond)
		}
	})
	mux.HandleFunc("/latin1", func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "text/html; charset=iso-8859-1")
		w.Write([]byte("<a href=\"/caf\xe9\">x</a>"))
	})
	mux.HandleFunc("/moved", func(w http.ResponseWriter, r *http.Request) {
		http.Redirect(w, r, "/new#frag", http.StatusMovedPermanently)
	})
	mux.HandleFunc("/pdf", func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "application/pdf")
		w.Write([]byte("%PDF <a href=/not-a-link>"))
	})
	ts := httptest.NewServer(mux)
	defer ts.Close()
	f := NewFetcher(FetchConfig{AllowPrivate: true, MaxBodyBytes: 64 << 10, MinSpeed: 1000, MinSpeedAfter: 200 * time.Millisecond})
	ctx := context.Background()

	if r := f.Fetch(ctx, ts.URL+"/big", false, "", ""); r.Err != nil || !r.Truncated || r.Size != 64<<10 {
		t.Errorf("big: err %v truncated %v size %d", r.Err, r.Truncated, r.Size)
	}
	if r := f.Fetch(ctx, ts.URL+"/slow", false, "", ""); !errors.Is(r.Err, ErrTooSlow) {
		t.Errorf("slow: %v", r.Err)
	}
	if r := f.Fetch(ctx, ts.URL+"/latin1", false, "", ""); len(r.Links.URLs) != 1 || r.Links.URLs[0] != ts.URL+"/caf%C3%A9" {
		t.Errorf("latin1 links: %v", r.Links.URLs)
	}
	if r := f.Fetch(ctx, ts.URL+"/moved", false, "", ""); r.Status != 301 || r.Location != ts.URL+"/new" {
		t.Errorf("redirect: %d %q", r.Status, r.Location)
	}
	if r := f.Fetch(ctx, ts.URL+"/pdf", false, "", ""); r.HTML || len(r.Links.URLs) != 0 || r.Digest == "" {
		t.Errorf("pdf: html %v links %v digest %q", r.HTML, r.Links.URLs, r.Digest)
	}
	guarded := NewFetcher(FetchConfig{})
	if r := guarded.Fetch(ctx, ts.URL+"/big", false, "", ""); r.Err == nil || !strings.Contains(r.Err.Error(), "not public") {
		t.Errorf("a crawler without --allow-private fetched loopback: %v", r.Err)
	}
}

func TestRetryAfter(t *testing.T) {
	now := time.Unix(1_700_000_000, 0)
	for _, tt := range []struct {
		in   string
		want time.Duration
	}{{"", 0}, {"120", 2 * time.Minute}, {"-1", 0}, {"soon", 0}, {now.Add(time.Hour).UTC().Format(http.TimeFormat), time.Hour}} {
		if got := retryAfter(tt.in, now); got != tt.want {
			t.Errorf("retryAfter(%q) = %v, want %v", tt.in, got, tt.want)
		}
	}
}

// A host answering 503 or 429 is backed off, exponentially, and a longer
// Retry-After is honoured; a recovered host is polled at the normal pace.
func TestBackoffOn503And429(t *testing.T) {
	var mu = make(chan struct{}, 1)
	var times []time.Time
	calls := 0
	ts := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path == "/robots.txt" {
			http.NotFound(w, r)
			return
		}
		mu <- struct{}{}
		times = append(times, time.Now())
		calls++
		n := calls
		<-mu
		switch {
		case n <= 2:
			http.Error(w, "busy", http.StatusServiceUnavailable)
		case n == 3:
			w.Header().Set("Retry-After", "1")
			http.Error(w, "slow down", http.StatusTooManyRequests)
		default:
			fmt.Fprint(w, "<html>ok</html>")
		}
	}))
	defer ts.Close()
	cfg := Config{Seeds: []string{ts.URL + "/"}, CID: testCID, MinDelay: 0, DelaySet: true,
		BackoffBase: 100 * time.Millisecond, BackoffMax: 5 * time.Second,
		RevisitMin: 50 * time.Millisecond, RevisitMax: 50 * time.Millisecond, Fetch: FetchConfig{AllowPrivate: true}}
	st := webevents.NewMemStore()
	c := startCrawler(t, cfg, st, &MemFrontier{})
	waitFor(t, 10*time.Second, "no success after backoff", func() bool { return c.Stats().Created == 1 })
	mu <- struct{}{}
	gaps := []time.Duration{times[1].Sub(times[0]), times[2].Sub(times[1]), times[3].Sub(times[2])}
	<-mu
	// 100 ms after the first 503, 200 ms after the second, Retry-After (1 s) after the 429.
	if gaps[0] < 100*time.Millisecond || gaps[1] < 200*time.Millisecond || gaps[2] < time.Second {
		t.Fatalf("gaps between attempts %v", gaps)
	}
	if e := c.Stats().Errors; e["5xx"] != 2 || e["429"] != 1 {
		t.Fatalf("errors %v", e)
	}
}

// FetchDoc follows redirects on the document's host only: another host's
// delay is not the crawler's to spend.
func TestFetchDocStaysOnItsHost(t *testing.T) {
	other := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { fmt.Fprint(w, "elsewhere") }))
	defer other.Close()
	site := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		switch r.URL.Path {
		case "/moved":
			http.Redirect(w, r, "/here", http.StatusMovedPermanently)
		case "/away":
			http.Redirect(w, r, other.URL+"/x", http.StatusFound)
		default:
			fmt.Fprint(w, "here")
		}
	}))
	defer site.Close()
	f := NewFetcher(FetchConfig{AllowPrivate: true})
	var body []byte
	read := func(r io.Reader) error { var err error; body, err = io.ReadAll(r); return err }
	if status, _, err := f.FetchDoc(context.Background(), site.URL+"/moved", read); err != nil || status != 200 || string(body) != "here" {
		t.Errorf("same-host redirect: %d %q %v", status, body, err)
	}
	body = nil
	if _, _, err := f.FetchDoc(context.Background(), site.URL+"/away", read); err == nil || body != nil {
		t.Errorf("a redirect to another host was followed: %q %v", body, err)
	}
}

// Responses the crawler reads no body of (a robots.txt not found, a
// redirect, a 404, a sitemap that is not there) leave the connection to
// be used again, as long as their bodies are short: one connection for
// all of them.
func TestFetchKeepsTheConnection(t *testing.T) {
	var conns atomic.Int64
	page404 := strings.Repeat("not found here ", 500) // 7.5 KB, as a CMS sends
	site := httptest.NewUnstartedServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		switch r.URL.Path {
		case "/moved":
			http.Redirect(w, r, "/here", http.StatusMovedPermanently)
		case "/here":
			fmt.Fprint(w, "<p>here</p>")
		case "/busy":
			w.WriteHeader(http.StatusServiceUnavailable)
			fmt.Fprint(w, page404)
		default:
			w.WriteHeader(http.StatusNotFound)
			fmt.Fprint(w, page404)
		}
	}))
	site.Config.ConnState = func(_ net.Conn, s http.ConnState) {
		if s == http.StateNew {
			conns.Add(1)
		}
	}
	site.Start()
	defer site.Close()
	f := NewFetcher(FetchConfig{AllowPrivate: true})
	ctx := context.Background()
	if _, _, status, _ := f.FetchRobots(ctx, site.URL, "cocrawl"); status != 404 {
		t.Fatalf("robots.txt: %d", status)
	}
	for _, p := range []string{"/moved", "/missing", "/busy", "/here", "/missing"} {
		if r := f.Fetch(ctx, site.URL+p, false, "", ""); r.Err != nil {
			t.Fatalf("%s: %v", p, r.Err)
		}
	}
	if status, _, err := f.FetchDoc(ctx, site.URL+"/sitemap.xml", func(io.Reader) error { return nil }); status != 404 || err != nil {
		t.Fatalf("sitemap: %d %v", status, err)
	}
	if n := conns.Load(); n != 1 {
		t.Errorf("%d connections for seven responses, want 1", n)
	}
	if n := f.Connections(); n != 1 {
		t.Errorf("the fetcher counted %d connections, want 1", n)
	}
}

// A fetcher going round more hosts than its idle pool holds opens a
// connection for nearly every request; by default the pool holds at
// least 1,024, so going round 40 hosts opens 40.
func TestFetcherKeepsAConnectionForEachHostItGoesRound(t *testing.T) {
	if n := defaultIdleConns(); n < 1024 || n > 4096 {
		t.Fatalf("defaultIdleConns() = %d, want 1,024 to 4,096", n)
	}
	var conns atomic.Int64
	var sites []string
	for range 40 {
		site := httptest.NewUnstartedServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			fmt.Fprint(w, "<p>a page</p>")
		}))
		site.Config.ConnState = func(_ net.Conn, s http.ConnState) {
			if s == http.StateNew {
				conns.Add(1)
			}
		}
		site.Start()
		defer site.Close()
		sites = append(sites, site.URL)
	}
	for _, c := range []struct {
		idle, want int
	}{{0, 40}, {10, 120}} {
		conns.Store(0)
		f := NewFetcher(FetchConfig{AllowPrivate: true, IdleConns: c.idle})
		for range 3 {
			for _, u := range sites {
				if r := f.Fetch(context.Background(), u+"/", false, "", ""); r.Err != nil || r.Status != 200 {
					t.Fatalf("%s: %d %v", u, r.Status, r.Err)
				}
			}
		}
		if n := f.Connections(); n != int64(c.want) || conns.Load() != n {
			t.Errorf("idle pool %d: the fetcher counted %d connections, the servers %d, want %d", c.idle, n, conns.Load(), c.want)
		}
	}
}

// A 404 whose body trickles does not hold the fetch past maxDrainTime:
// the connection is dropped instead.
func TestFetchDoesNotWaitForATricklingBody(t *testing.T) {
	release := make(chan struct{})
	site := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.WriteHeader(http.StatusNotFound)
		fmt.Fprint(w, "not ")
		w.(http.Flusher).Flush()
		select { // the rest never comes while the test waits
		case <-release:
		case <-r.Context().Done():
		}
	}))
	defer site.Close()
	defer close(release)
	f := NewFetcher(FetchConfig{AllowPrivate: true})
	start := time.Now()
	r := f.Fetch(context.Background(), site.URL+"/gone", false, "", "")
	if el := time.Since(start); r.Status != 404 || el > maxDrainTime+2*time.Second {
		t.Fatalf("status %d after %v, want 404 within about %v", r.Status, el, maxDrainTime)
	}
}
