package crawl

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/cocrawl/cocrawl/internal/testweb"
	"github.com/cocrawl/cocrawl/webevents"
)

// Issue 18, item 9: with scope "all", wildcard subdomains cannot add hosts
// without end, and the robots.txt files hosts keep stay within a budget.
func TestHostAndRobotsCaps(t *testing.T) {
	cfg := Config{Seeds: []string{"http://seed.example/"}, CID: testCID, Scope: "all",
		MaxHosts: 50, MaxHostsPerDomain: 10, MaxRobotsBytes: 10 << 10}
	c, err := New(cfg, webevents.NewMemStore(), &MemFrontier{})
	if err != nil {
		t.Fatal(err)
	}
	now := time.Now()
	c.mu.Lock()
	defer c.mu.Unlock()
	for i := range 1000 {
		c.addURL(fmt.Sprintf("http://w%d.wildcard.example/", i), 1, now)
		c.addURL(fmt.Sprintf("http://site%d.example/", i), 1, now)
	}
	if n := c.f.domains["wildcard.example"]; n != 10 {
		t.Errorf("%d hosts of one registrable domain, want the cap 10", n)
	}
	if n := len(c.f.hosts); n != 50 {
		t.Errorf("%d hosts, want the cap 50", n)
	}
	body := "User-agent: *\nDisallow: /x\n" + strings.Repeat("# padding\n", 300) // about 3 KiB
	for _, h := range c.f.hosts {
		c.cacheRobots(h, ParseRobots([]byte(body), "cocrawl"))
		if c.robotsMem > cfg.MaxRobotsBytes {
			t.Fatalf("robots.txt files keep %d bytes, over the budget %d", c.robotsMem, cfg.MaxRobotsBytes)
		}
	}
	kept, mem := 0, 0
	for _, h := range c.f.hosts {
		if h.robots != nil {
			kept++
			mem += h.robots.size()
		}
	}
	if kept == 0 || kept == len(c.f.hosts) || mem != c.robotsMem {
		t.Errorf("%d of %d hosts keep a robots.txt, %d bytes, counted %d", kept, len(c.f.hosts), mem, c.robotsMem)
	}
}

// stalledStore is a store whose writes block until released: a full disk
// under Badger.
type stalledStore struct {
	*webevents.MemStore
	release chan struct{}
}

func (s stalledStore) Record(events []webevents.Event) error {
	<-s.release
	return s.MemStore.Record(events)
}

// Issue 18, item 10 (in part): a store that stops taking writes stops the
// crawler's requests once a bounded backlog waits, leaves its counters
// answering, and cannot keep it from stopping.
func TestStalledStore(t *testing.T) {
	w, err := testweb.Start(testweb.Config{Hosts: 3, PagesPerHost: 30})
	if err != nil {
		t.Fatal(err)
	}
	defer w.Close()
	cfg := testConfig(w)
	cfg.MaxBacklog = 20
	st := stalledStore{webevents.NewMemStore(), make(chan struct{})}
	defer close(st.release)
	c, err := New(cfg, st, &MemFrontier{})
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- c.Run(ctx) }()
	waitFor(t, 10*time.Second, "polling to pause", func() bool { return c.Stats().Stalled > 0 })
	polls := c.Stats().Polls
	time.Sleep(300 * time.Millisecond)
	if more := c.Stats().Polls - polls; more > int64(cfg.Workers) {
		t.Errorf("%d more requests while the store took nothing", more)
	}
	StopTimeout = 500 * time.Millisecond
	defer func() { StopTimeout = 30 * time.Second }()
	cancel()
	select {
	case err := <-done:
		if err == nil || !strings.Contains(err.Error(), "not stored") {
			t.Errorf("stop with a stalled store: %v", err)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("the crawler did not stop while its store was stalled")
	}
}

// fullStore refuses writes until room is made: a full disk.
type fullStore struct {
	*webevents.MemStore
	full *atomic.Bool
}

func (s fullStore) Record(events []webevents.Event) error {
	if s.full.Load() {
		return webevents.ErrNoSpace
	}
	return s.MemStore.Record(events)
}

// Issue 18, item 10: events the store refused (a full disk) are kept and
// written once it takes writes again; nothing polled is lost.
func TestEventsSurviveAFullDisk(t *testing.T) {
	w, err := testweb.Start(testweb.Config{Hosts: 2, PagesPerHost: 10})
	if err != nil {
		t.Fatal(err)
	}
	defer w.Close()
	full := &atomic.Bool{}
	full.Store(true)
	st := fullStore{webevents.NewMemStore(), full}
	c := startCrawler(t, testConfig(w), st, &MemFrontier{})
	waitFor(t, 10*time.Second, "polls while the disk is full", func() bool { return c.Stats().Created >= 10 && c.Stats().Errors["store"] > 0 })
	created := c.Stats().Created
	full.Store(false)
	waitFor(t, 10*time.Second, "the events kept to be written", func() bool {
		n := 0
		st.Current(func(webevents.Event) error { n++; return nil })
		return int64(n) >= created
	})
}

// Issue 18, item 11: URLs long gone leave the frontier and its store;
// recent ones and live ones stay.
func TestForgetGone(t *testing.T) {
	now := time.Now()
	fs := &MemFrontier{}
	old := now.Add(-60 * 24 * time.Hour).UnixMilli()
	states := []URLState{
		{URL: "http://a.example/gone-long", Gone: true, HostNext: old},
		{URL: "http://a.example/gone-lately", Gone: true, HostNext: now.UnixMilli()},
		{URL: "http://a.example/live", HostNext: old, Due: now},
	}
	if err := fs.SaveFrontier(states); err != nil {
		t.Fatal(err)
	}
	c, err := New(Config{Seeds: []string{"http://a.example/"}, CID: testCID}, webevents.NewMemStore(), fs)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := c.Load(); err != nil {
		t.Fatal(err)
	}
	n, err := c.ForgetGone(now.Add(-30 * 24 * time.Hour))
	if err != nil || n != 1 {
		t.Fatalf("forgot %d, %v; want 1", n, err)
	}
	var kept []string
	fs.LoadFrontier(func(s URLState) error { kept = append(kept, s.URL); return nil })
	if len(kept) != 2 || slices.Contains(kept, "http://a.example/gone-long") {
		t.Fatalf("frontier store keeps %v", kept)
	}
	c.mu.Lock()
	inMemory := c.f.get("http://a.example/gone-long") != nil
	c.mu.Unlock()
	if inMemory {
		t.Fatal("the frontier still holds a URL gone for 60 days")
	}
}
