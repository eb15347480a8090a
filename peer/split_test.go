package peer

import (
	"context"
	"errors"
	"fmt"
	"net"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/cocrawl/cocrawl/crawl"
	"github.com/cocrawl/cocrawl/internal/testweb"
	"github.com/cocrawl/cocrawl/webevents"
)

// A peer takes part in a host's split while its merged records show its
// own recent polls of that host, and it is healthy and polls at all.
func TestPollersFollowOwnPolls(t *testing.T) {
	s := newPeerSet(MergeSchedule{})
	now := time.Unix(1_700_000_000, 0)
	rows := map[string]string{"http://a.example/robots.shr": "a:1 x", "http://b.example/robots.shr": "b:1 x", "http://m.example/robots.shr": "m:1 x"}
	for u, cid := range rows {
		s.add(u, "static", now)
		s.next(now)
		rho := "0.5"
		if cid == "m:1 x" {
			rho = "0" // a mirror
		}
		s.done(u, mergeOutcome{gained: 1, crawler: cid, rho: rho}, now)
	}
	ev := func(cid, u string, lpd time.Time) webevents.Event {
		return webevents.Event{URL: u, CID: cid, LPD: lpd.Unix()}
	}
	all := func(string) bool { return true }
	s.polledBy("http://a.example/robots.shr", []webevents.Event{ev("a:1 x", "http://h1.test/p", now), ev("b:1 x", "http://h2.test/p", now)}, all)
	s.polledBy("http://b.example/robots.shr", []webevents.Event{ev("b:1 x", "http://h1.test:8080/q?x=1", now), ev("b:1 x", "http://h2.test/", now.Add(-time.Hour))}, all)
	s.polledBy("http://m.example/robots.shr", []webevents.Event{ev("m:1 x", "http://h1.test/p", now)}, all)
	gap := splitGapMerges * 2 * s.sched.MergeMin // a merge of one event doubled the wait
	want := map[string][]crawl.SplitPeer{"http://h1.test": {{Name: "a:1 x", Gap: gap}}, "http://h1.test:8080": {{Name: "b:1 x", Gap: gap}}}
	if got := s.pollers(now); !reflect.DeepEqual(got, want) {
		t.Fatalf("pollers %v, want %v (a relayed record, an old poll and a mirror do not count)", got, want)
	}
	// Hosts this peer does not crawl are not noted.
	s.polledBy("http://b.example/robots.shr", []webevents.Event{ev("b:1 x", "http://elsewhere.test/x", now)},
		func(u string) bool { return !strings.Contains(u, "elsewhere") })
	if got := s.pollers(now); len(got["http://elsewhere.test"]) != 0 {
		t.Fatalf("a host out of scope is split: %v", got)
	}
	// A failing peer leaves the split at once.
	s.next(now)
	s.done("http://a.example/robots.shr", mergeOutcome{err: errors.New("refused")}, now)
	if got := s.pollers(now); len(got["http://h1.test"]) != 0 {
		t.Fatalf("a failing peer still splits h1: %v", got)
	}
	// And its polls age out.
	if n := len(s.polls[rowKey("http://b.example/robots.shr")]); n == 0 {
		t.Fatal("no notes of b's polls")
	}
	if got := s.pollers(now.Add(pollerWindow + time.Second)); len(got) != 0 {
		t.Fatalf("pollers after the window: %v", got)
	}
	if n := len(s.polls[rowKey("http://b.example/robots.shr")]); n != 0 {
		t.Fatalf("%d notes kept past the window", n)
	}
}

func TestURLHost(t *testing.T) {
	for u, want := range map[string]string{"http://a.test/x": "http://a.test", "https://a.test:8443?q": "https://a.test:8443", "http://a.test": "http://a.test", "nohost": "", "http:///x": ""} {
		if got := urlHost(u); got != want {
			t.Errorf("urlHost(%q) = %q, want %q", u, got, want)
		}
	}
}

// Three peers with the same seeds split a host's URLs: each URL is polled
// mostly by one of them; when one stops, the URLs it polled are polled by
// the two others within seconds.
func TestSplitAndFailover(t *testing.T) {
	w, err := testweb.Start(testweb.Config{Hosts: 1, PagesPerHost: 30, UpdateRate: 0.5, CrossLinks: -1, Seed: 21})
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	go w.Run(ctx)
	t.Cleanup(func() { cancel(); w.Close() })
	host := strings.TrimSuffix(w.Seeds()[0], "/")

	lns := []net.Listener{listen(t), listen(t), listen(t)}
	peers := make([]*testPeer, 3)
	for i := range peers {
		var others []string
		for j, ln := range lns {
			if j != i {
				others = append(others, "http://"+ln.Addr().String()+"/robots.shr")
			}
		}
		cfg := testConfig(w.Seeds(), "sharing-hybrid", others...)
		cfg.Crawl.Fetch.UserAgent = fmt.Sprintf("peer%d/1.0", i)
		cfg.Crawl.SampleShare = -1 // only the split's polls
		peers[i] = startPeer(t, lns[i], t.TempDir(), cfg)
	}
	waitFor(t, 30*time.Second, "every peer splits the host with the two others", func() bool {
		for _, p := range peers {
			if len(p.peers.pollers(time.Now())[host]) != 2 {
				return false
			}
		}
		return true
	})
	// byAgent counts, per page, the polls of each peer since a point in
	// the host's log.
	byAgent := func(from int) (map[string]map[string]int, int) {
		log := w.Hosts()[0].Log()
		out := map[string]map[string]int{}
		for _, r := range log[from:] {
			if r.Path == "/robots.txt" || r.Path == "/" {
				continue
			}
			if out[r.Path] == nil {
				out[r.Path] = map[string]int{}
			}
			out[r.Path][r.UserAgent]++
		}
		return out, len(log)
	}
	time.Sleep(2 * time.Second) // due times set before the split settle
	_, mark := byAgent(0)
	time.Sleep(6 * time.Second)
	counts, mark2 := byAgent(mark)
	owner := map[string]string{}
	top, all := 0, 0
	for path, m := range counts {
		best := ""
		for ua, n := range m {
			all += n
			if best == "" || n > m[best] {
				best = ua
			}
		}
		owner[path] = best
		top += m[best]
	}
	t.Logf("%d pages polled %d times, %.2f of the polls by each page's main poller", len(counts), all, float64(top)/float64(all))
	if float64(top) < 0.8*float64(all) {
		t.Errorf("only %d of %d polls by the page's main poller: the peers do not split", top, all)
	}
	// Peer 2 leaves: its pages are polled by the others.
	peers[2].stop()
	// It leaves the split of both others (whether they split the host
	// with each other at that moment is not the question: a merge between
	// them that fails under load drops one for a moment).
	gone := func() bool {
		for _, p := range peers[:2] {
			for _, sp := range p.peers.pollers(time.Now())[host] {
				if sp.Name == peers[2].cid {
					return false
				}
			}
		}
		return true
	}
	deadline := time.Now().Add(15 * time.Second)
	for !gone() {
		if time.Now().After(deadline) {
			for i, p := range peers[:2] {
				t.Logf("peer %d splits with %v", i, p.peers.pollers(time.Now())[host])
				for _, r := range p.Peers() {
					t.Logf("peer %d row %s: crawler %q rho %q merges %d, consecutive failures %d (%s), last attempt %s ago, success %s ago, interval %v, next due in %s, confirmed %d refuted %d distrusted %v",
						i, r.URL, r.Crawler, r.Rho, r.Merges, r.Consecutive, r.LastError,
						time.Since(r.LastAttempt).Round(time.Millisecond), time.Since(r.LastSuccess).Round(time.Millisecond),
						time.Duration(r.Interval), time.Until(r.NextDue).Round(time.Millisecond), r.Confirmed, r.Refuted, !r.Distrusted.IsZero())
				}
			}
			t.Fatal("after 15s: peer 2 still takes part in the others' split")
		}
		time.Sleep(50 * time.Millisecond)
	}
	time.Sleep(4 * time.Second)
	after, _ := byAgent(mark2)
	orphans, taken := 0, 0
	for path, ua := range owner {
		if ua != "peer2/1.0" {
			continue
		}
		orphans++
		if after[path]["peer0/1.0"]+after[path]["peer1/1.0"] > 0 {
			taken++
		}
	}
	t.Logf("peer 2 polled %d pages; %d of them were polled by the others after it left", orphans, taken)
	if orphans == 0 || taken < orphans*9/10 {
		t.Errorf("%d of the %d pages peer 2 polled were polled by the others after it left", taken, orphans)
	}
}
