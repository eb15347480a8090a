package peer

import (
	"errors"
	"reflect"
	"testing"
	"time"

	"github.com/cocrawl/cocrawl/crawl"
	"github.com/cocrawl/cocrawl/webevents"
)

// A peer takes part in a host's split while its merged records show its
// own recent polls of that host, and it is healthy and polls at all.
func TestPollersFollowOwnPolls(t *testing.T) {
	s := newPeerSet(Schedule{})
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
	s.polledBy("http://a.example/robots.shr", []webevents.Event{ev("a:1 x", "http://h1.test/p", now), ev("b:1 x", "http://h2.test/p", now)})
	s.polledBy("http://b.example/robots.shr", []webevents.Event{ev("b:1 x", "http://h1.test:8080/q?x=1", now), ev("b:1 x", "http://h2.test/", now.Add(-time.Hour))})
	s.polledBy("http://m.example/robots.shr", []webevents.Event{ev("m:1 x", "http://h1.test/p", now)})
	gap := splitGapMerges * 2 * s.sched.MergeMin // a merge of one event doubled the wait
	want := map[string][]crawl.SplitPeer{"http://h1.test": {{Name: "a:1 x", Gap: gap}}, "http://h1.test:8080": {{Name: "b:1 x", Gap: gap}}}
	if got := s.pollers(now); !reflect.DeepEqual(got, want) {
		t.Fatalf("pollers %v, want %v (a relayed record, an old poll and a mirror do not count)", got, want)
	}
	// A failing peer leaves the split at once.
	s.next(now)
	s.done("http://a.example/robots.shr", mergeOutcome{err: errors.New("refused")}, now)
	if got := s.pollers(now); len(got["http://h1.test"]) != 0 {
		t.Fatalf("a failing peer still splits h1: %v", got)
	}
	// And its polls age out.
	if got := s.pollers(now.Add(pollerWindow + time.Second)); len(got) != 0 {
		t.Fatalf("pollers after the window: %v", got)
	}
}

func TestURLHost(t *testing.T) {
	for u, want := range map[string]string{"http://a.test/x": "http://a.test", "https://a.test:8443?q": "https://a.test:8443", "http://a.test": "http://a.test", "nohost": "", "http:///x": ""} {
		if got := urlHost(u); got != want {
			t.Errorf("urlHost(%q) = %q, want %q", u, got, want)
		}
	}
}
