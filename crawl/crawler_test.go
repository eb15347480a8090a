package crawl

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/cocrawl/cocrawl/internal/testweb"
	"github.com/cocrawl/cocrawl/webevents"
)

const testCID = "test.example:0 cocrawl/1.1"

func testConfig(w *testweb.Web) Config {
	return Config{
		Seeds: w.Seeds(), CID: testCID, Workers: 8,
		MinDelay: 20 * time.Millisecond, DelaySet: true, DelayFactor: 1,
		RevisitMin: 100 * time.Millisecond, RevisitMax: 400 * time.Millisecond,
		BackoffBase: 200 * time.Millisecond, BackoffMax: time.Second,
		Fetch: FetchConfig{AllowPrivate: true, Timeout: 5 * time.Second},
	}
}

// runWeb starts a testweb that changes (Web.Run) until the test ends.
func runWeb(t *testing.T, cfg testweb.Config) *testweb.Web {
	t.Helper()
	w, err := testweb.Start(cfg)
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() { defer close(done); w.Run(ctx) }()
	t.Cleanup(func() { cancel(); <-done; w.Close() })
	return w
}

// startCrawler runs a crawler until the test ends.
func startCrawler(t *testing.T, cfg Config, st Store, fs FrontierStore) *Crawler {
	t.Helper()
	c, err := New(cfg, st, fs)
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- c.Run(ctx) }()
	t.Cleanup(func() {
		cancel()
		if err := <-done; err != nil {
			t.Errorf("crawler: %v", err)
		}
	})
	return c
}

// waitFor polls cond until it holds or the deadline passes.
func waitFor(t *testing.T, d time.Duration, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(d)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("after %v: %s", d, what)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

func stat(st *webevents.MemStore, u string) (webevents.Event, bool) {
	e, ok, _ := st.Get(u)
	return e, ok
}

func TestCrawlFindsEveryEvent(t *testing.T) {
	w, err := testweb.Start(testweb.Config{Hosts: 6, PagesPerHost: 15, RobotsEvery: 3, NoLastModifiedEvery: 2, Seed: 1})
	if err != nil {
		t.Fatal(err)
	}
	defer w.Close()
	st := webevents.NewMemStore()
	c := startCrawler(t, testConfig(w), st, &MemFrontier{})

	// Every live page is found and created.
	waitFor(t, 15*time.Second, "not every live page was created", func() bool {
		for _, u := range w.LiveURLs() {
			if strings.Contains(u, "/private/") {
				continue
			}
			if e, ok := stat(st, u); !ok || e.Stat == webevents.Delete {
				return false
			}
		}
		return true
	})

	// Change the web: every change must come back as the right event.
	hosts := w.Hosts()
	var updated, deleted, created []string
	time.Sleep(1100 * time.Millisecond) // Last-Modified has whole seconds
	for i, h := range hosts {
		u := h.URL + "/p/2.html"
		if w.Update(u) {
			updated = append(updated, u)
		}
		if d := h.URL + "/p/3.html"; i%2 == 0 && w.Delete(d) {
			deleted = append(deleted, d)
		}
		if i%3 == 0 {
			created = append(created, w.Create(i))
		}
	}
	truth := w.Truth()
	waitFor(t, 15*time.Second, "changes not all detected", func() bool {
		for _, u := range updated {
			e, ok := stat(st, u)
			if !ok || e.Stat != webevents.Update {
				return false
			}
		}
		for _, u := range deleted {
			if e, ok := stat(st, u); !ok || e.Stat != webevents.Delete {
				return false
			}
		}
		for _, u := range created {
			if e, ok := stat(st, u); !ok || e.Stat != webevents.Create {
				return false
			}
		}
		return true
	})
	// Where the server gives Last-Modified, the event carries it exactly.
	for _, u := range updated {
		e, _ := stat(st, u)
		if w.HostOf(u).SendsLastModified() && e.LMD != truth[u].LMD {
			t.Errorf("%s: lmd %d, truth %d", u, e.LMD, truth[u].LMD)
		}
		if e.CID != testCID {
			t.Errorf("%s: cid %q", u, e.CID)
		}
	}
	s := c.Stats()
	t.Logf("polls %d, not modified %d, created %d, updated %d, deleted %d, robots excluded %d, errors %v",
		s.Polls, s.NotModified, s.Created, s.Updated, s.Deleted, s.RobotsExcluded, s.Errors)
	checkPoliteness(t, w, 20*time.Millisecond)
}

// checkPoliteness proves from the request logs that no host ever served two
// requests at once, that requests were at least delay apart (end to
// start), that robots.txt came first, and that no disallowed path was asked.
func checkPoliteness(t *testing.T, w *testweb.Web, delay time.Duration) {
	t.Helper()
	const slack = 2 * time.Millisecond // the two clocks read at slightly different points
	for _, h := range w.Hosts() {
		if h.MaxConcurrent() > 1 {
			t.Errorf("%s served %d requests at once", h.URL, h.MaxConcurrent())
		}
		log := h.Log()
		rb := ParseRobots([]byte(h.Robots()), "cocrawl")
		for i, r := range log {
			if i == 0 && r.Path != "/robots.txt" {
				t.Errorf("%s: first request %s, not robots.txt", h.URL, r.Path)
			}
			if h.Robots() != "" && !rb.Allowed("cocrawl", h.URL+r.Path) {
				t.Errorf("%s: fetched %s, which robots.txt disallows", h.URL, r.Path)
			}
			if i > 0 {
				if gap := r.Start.Sub(log[i-1].End); gap < delay-slack {
					t.Errorf("%s: %s only %v after the previous request ended", h.URL, r.Path, gap)
				}
			}
		}
	}
}

func TestCrawlTrapsStayBounded(t *testing.T) {
	w, err := testweb.Start(testweb.Config{Hosts: 1, PagesPerHost: 3, Traps: true})
	if err != nil {
		t.Fatal(err)
	}
	defer w.Close()
	cfg := testConfig(w)
	cfg.MinDelay = 0
	cfg.RevisitMin, cfg.RevisitMax = time.Hour, time.Hour
	c := startCrawler(t, cfg, webevents.NewMemStore(), &MemFrontier{})
	waitFor(t, 10*time.Second, "trap crawl did not settle", func() bool {
		s := c.Stats()
		time.Sleep(300 * time.Millisecond)
		return s.Polls > 10 && c.Stats().Polls == s.Polls
	})
	cal, search, loop := 0, 0, 0
	for _, r := range w.Hosts()[0].Log() {
		switch {
		case strings.HasPrefix(r.Path, "/cal/"):
			cal++
		case strings.HasPrefix(r.Path, "/search"):
			search++
		case strings.HasPrefix(r.Path, "/loop/"):
			loop++
			if strings.Count(r.Path, "/a") > 3 { // the default MaxSegmentRepet
				t.Errorf("fetched %s", r.Path)
			}
		}
	}
	// Home is depth 0: the calendar may reach depth 15, searches depth 5.
	if cal != 15 || search != 5 || loop != 3 {
		t.Errorf("trap fetches: calendar %d (want 15), search %d (want 5), loop %d (want 3)", cal, search, loop)
	}
}

func TestCrawlHonoursCrawlDelayAndRobotsDown(t *testing.T) {
	w, err := testweb.Start(testweb.Config{Hosts: 2, PagesPerHost: 3, RobotsEvery: 1, CrawlDelay: time.Second, RobotsDownHost: true})
	if err != nil {
		t.Fatal(err)
	}
	defer w.Close()
	cfg := testConfig(w)
	cfg.MinDelay = 0
	startCrawler(t, cfg, webevents.NewMemStore(), &MemFrontier{})
	time.Sleep(2500 * time.Millisecond)
	good, down := w.Hosts()[0], w.Hosts()[1]
	if n := len(good.Log()); n < 3 || n > 4 {
		t.Errorf("host with Crawl-delay 1 got %d requests in 2.5 s, want 3 (robots.txt, then one a second)", n)
	}
	checkPoliteness(t, w, time.Second)
	for _, r := range down.Log() {
		if r.Path != "/robots.txt" {
			t.Errorf("host whose robots.txt answers 503 was asked for %s", r.Path)
		}
	}
}

// Issue 18, item 14: a crawl stopped and started again keeps the host's
// Crawl-delay between the last request before the stop and the first
// after it.
func TestPolitenessSurvivesRestart(t *testing.T) {
	w, err := testweb.Start(testweb.Config{Hosts: 1, PagesPerHost: 5, RobotsEvery: 1, CrawlDelay: 2 * time.Second})
	if err != nil {
		t.Fatal(err)
	}
	defer w.Close()
	cfg := testConfig(w)
	cfg.MinDelay = 0
	st, fs := webevents.NewMemStore(), &MemFrontier{}
	h := w.Hosts()[0]
	run := func(until func() bool) {
		c, err := New(cfg, st, fs)
		if err != nil {
			t.Fatal(err)
		}
		ctx, cancel := context.WithCancel(context.Background())
		done := make(chan error, 1)
		go func() { done <- c.Run(ctx) }()
		waitFor(t, 10*time.Second, "requests", until)
		cancel()
		if err := <-done; err != nil {
			t.Fatal(err)
		}
	}
	run(func() bool { return len(h.Log()) >= 2 }) // robots.txt and a page
	before := len(h.Log())
	run(func() bool { return len(h.Log()) > before })
	checkPoliteness(t, w, 2*time.Second)
}
