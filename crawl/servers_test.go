package crawl

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/cocrawl/cocrawl/internal/testweb"
	"github.com/cocrawl/cocrawl/webevents"
)

// Two host names of one server (127.0.0.1 and localhost, same port) are
// two hosts to the frontier but one server: after each host's robots.txt,
// which teaches the crawler where it is served, the server never serves
// two requests at once, and waits its share of the delay between them.
// Without per-server politeness the two names' requests interleave.
func TestVirtualHostsShareTheirServer(t *testing.T) {
	const delay = 40 * time.Millisecond
	overlaps, short, servers := crawlTwoNames(t, func(cfg *Config) { cfg.ServerDelayShare = 0.5 }, delay/2)
	if overlaps > 0 || short > 0 || servers != 1 {
		t.Errorf("the server served %d requests at once and %d too close together; %d servers known", overlaps, short, servers)
	}
	overlaps, short, _ = crawlTwoNames(t, func(cfg *Config) { cfg.ServerDelayShare, cfg.ServerConns = -1, 2 }, delay/2)
	if overlaps+short == 0 {
		t.Error("without per-server politeness the two names were still served a share of the delay apart: the test shows nothing")
	}
}

// crawlTwoNames crawls one testweb host under two names until both are
// polled whole, and counts the server's requests (after the first two)
// that overlapped the one before or started within gap of its end.
func crawlTwoNames(t *testing.T, set func(*Config), gap time.Duration) (overlaps, short, servers int) {
	t.Helper()
	w, err := testweb.Start(testweb.Config{Hosts: 1, PagesPerHost: 20, Seed: 5})
	if err != nil {
		t.Fatal(err)
	}
	defer w.Close()
	h := w.Hosts()[0]
	named := "http://localhost:" + h.URL[strings.LastIndex(h.URL, ":")+1:]
	cfg := testConfig(w)
	cfg.Seeds = []string{h.URL + "/", named + "/"}
	cfg.MinDelay = 2 * gap
	set(&cfg)
	st := webevents.NewMemStore()
	c, err := New(cfg, st, &MemFrontier{})
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- c.Run(ctx) }()
	waitFor(t, 20*time.Second, "both names' pages polled", func() bool {
		for _, u := range w.LiveURLs() {
			if strings.Contains(u, "/private/") {
				continue
			}
			if _, ok := stat(st, u); !ok {
				return false
			}
			if _, ok := stat(st, strings.Replace(u, h.URL, named, 1)); !ok {
				return false
			}
		}
		return true
	})
	cancel()
	if err := <-done; err != nil {
		t.Fatal(err)
	}
	log := h.Log()
	slices.SortFunc(log, func(a, b testweb.Request) int { return a.Start.Compare(b.Start) })
	const slack = 2 * time.Millisecond
	for i := 2; i < len(log); i++ {
		if d := log[i].Start.Sub(log[i-1].End); d < 0 {
			overlaps++
		} else if d < gap-slack {
			short++
		}
	}
	t.Logf("%d requests to the server; %d overlapping, %d closer than %v", len(log), overlaps, short, gap)
	return overlaps, short, len(c.f.servers)
}

// A server with more hosts than MaxHostsPerServer gets no polls for those
// beyond the cap, and no new URLs of them are taken.
func TestHostsPastTheirServersCapAreNotPolled(t *testing.T) {
	f := newFrontier()
	f.serverPolicy.maxHosts = 2
	var hosts []*host
	for i := range 3 {
		h := f.host(fmt.Sprintf("http://h%d.test", i))
		hosts = append(hosts, h)
		if refused := f.assignServer(h, "192.0.2.1:80"); refused != (i == 2) {
			t.Errorf("host %d: refused %v", i, refused)
		}
	}
	if s := f.servers["192.0.2.1:80"]; s == nil || s.hosts != 2 || !hosts[2].overServerCap || hosts[2].server != nil {
		t.Errorf("server %+v; third host over the cap: %v", s, hosts[2].overServerCap)
	}
	f.add(URLState{URL: "http://h2.test/a", Due: time.Now()})
	if h, _ := f.next(time.Now()); h != nil {
		t.Errorf("the host over the cap was handed out: %s", h.key)
	}
	// A host that moves to another server leaves the first.
	f.assignServer(hosts[0], "192.0.2.2:80")
	if s := f.servers["192.0.2.1:80"]; s.hosts != 1 {
		t.Errorf("the first server counts %d hosts after one moved", s.hosts)
	}
}
