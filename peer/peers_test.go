package peer

import (
	"errors"
	"fmt"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/cocrawl/cocrawl/protocol"
	"github.com/cocrawl/cocrawl/webevents"
)

func TestPeerSetRoundRobinBackoffAndAdaptiveWait(t *testing.T) {
	s := newPeerSet(MergeSchedule{MergeMin: 10 * time.Second, MergeMax: 80 * time.Second, BackoffBase: 30 * time.Second, BackoffMax: 100 * time.Second})
	t0 := time.Unix(1_700_000_000, 0)
	s.add("http://a.example/robots.shr", "static", t0)
	s.add("http://b.example/robots.shr", "static", t0.Add(time.Millisecond))
	if _, isNew := s.add("http://a.example/robots.shr", "static", t0); isNew {
		t.Fatal("a known peer was added again")
	}
	// Both due: the one due first, then the other; a busy peer is not given twice.
	a, ok, _ := s.next(t0.Add(time.Second))
	b, ok2, _ := s.next(t0.Add(time.Second))
	if !ok || !ok2 || a.URL == b.URL {
		t.Fatalf("next gave %q and %q", a.URL, b.URL)
	}
	if _, ok, wait := s.next(t0.Add(time.Second)); ok || wait != 0 {
		t.Fatalf("both busy, yet next gave a peer (wait %v)", wait)
	}

	// a fails three times: 30 s, 60 s, then capped at 100 s; never dropped.
	now := t0.Add(time.Second)
	for i, want := range []time.Duration{30 * time.Second, 60 * time.Second, 100 * time.Second} {
		r := s.done(a.URL, mergeOutcome{err: errors.New("refused")}, now)
		if r.Consecutive != i+1 || r.NextDue.Sub(now) != want || r.Healthy() {
			t.Fatalf("failure %d: %+v, wait %v, want %v", i+1, r, r.NextDue.Sub(now), want)
		}
		if _, ok, _ := s.next(now); ok {
			t.Fatal("a failing peer was due at once")
		}
		now = r.NextDue
		if got, ok, _ := s.next(now); !ok || got.URL != a.URL {
			t.Fatalf("after its backoff, next gave %q", got.URL)
		}
	}
	// A success clears the failures; the wait follows what merges bring:
	// halved when they bring 4x MergeTarget or more, doubled when nothing.
	r := s.done(a.URL, mergeOutcome{gained: 4 * MergeTarget, special: []string{"http://a.example/"}}, now)
	if r.Consecutive != 0 || !r.Healthy() || time.Duration(r.Interval) != 10*time.Second || r.Failures != 3 {
		t.Fatalf("after success: %+v", r)
	}
	waits := []time.Duration{}
	for range 6 {
		s.next(r.NextDue)
		r = s.done(a.URL, mergeOutcome{}, r.NextDue)
		waits = append(waits, time.Duration(r.Interval))
	}
	if want := []time.Duration{20e9, 40e9, 80e9, 80e9, 80e9, 80e9}; !reflect.DeepEqual(waits, want) {
		t.Fatalf("waits without gain %v, want %v", waits, want)
	}
	s.next(r.NextDue)
	r = s.done(a.URL, mergeOutcome{gained: 16 * MergeTarget}, r.NextDue)
	if time.Duration(r.Interval) != 40*time.Second {
		t.Fatalf("wait after a large gain %v, want 40s", time.Duration(r.Interval))
	}
	s.next(r.NextDue)
	r = s.done(a.URL, mergeOutcome{gained: MergeTarget}, r.NextDue)
	if time.Duration(r.Interval) != 40*time.Second {
		t.Fatalf("wait after a merge that brought the target %v, want it kept at 40s", time.Duration(r.Interval))
	}
	s.next(r.NextDue)
	r = s.done(a.URL, mergeOutcome{gained: 1}, r.NextDue)
	if time.Duration(r.Interval) != 80*time.Second {
		t.Fatalf("wait after a merge that brought one event %v, want 80s (doubled)", time.Duration(r.Interval))
	}
	if known, healthy := s.counts(); known != 2 || healthy != 1 {
		t.Fatalf("counts %d known, %d healthy", known, healthy)
	}
}

func TestDelegation(t *testing.T) {
	s := newPeerSet(MergeSchedule{MergeMin: time.Second, MergeMax: time.Minute})
	now := time.Unix(1_700_000_000, 0)
	add := func(u string, o mergeOutcome) {
		s.add(u, "static", now)
		s.next(now)
		s.done(u, o, now)
	}
	own := func(u, cid string) []webevents.Event {
		return []webevents.Event{{URL: u, CID: cid, LPD: now.Unix() - 60, Stat: webevents.Update}}
	}
	add("http://good.example/robots.shr", mergeOutcome{gained: 3, crawler: "good:1 G", special: []string{"http://good.example/news/", "http://", "/relative", "ftp://x/"}})
	add("http://stingy.example/robots.shr", mergeOutcome{gained: 0, crawler: "stingy:1 S", special: []string{"http://stingy.example/"}})
	add("http://failing.example/robots.shr", mergeOutcome{err: errors.New("down")})
	add("http://me.example/robots.shr", mergeOutcome{gained: 1, self: true, special: []string{"http://me.example/"}})
	s.backs("http://good.example/robots.shr", own("http://good.example/news/1", "good:1 G"), now)
	s.backs("http://stingy.example/robots.shr", own("http://stingy.example/a", "stingy:1 S"), now)
	if got := s.delegated(now); !reflect.DeepEqual(got, []string{"http://good.example/news/"}) {
		t.Fatalf("delegated %v", got)
	}
	// A peer not merged for long gets its prefixes polled again.
	if got := s.delegated(now.Add(4 * time.Minute)); len(got) != 0 {
		t.Fatalf("delegated to a stale peer: %v", got)
	}
}

// A publisher's IndexNow ping for a host left to it moves its next merge
// forward, not sooner than the gap after its last; a ping for a host left
// to nobody moves nothing.
func TestNudgeMovesTheMergeForward(t *testing.T) {
	s := newPeerSet(MergeSchedule{MergeMin: 30 * time.Second, MergeMax: time.Hour})
	now := time.Unix(1_700_000_000, 0)
	const pub = "http://pub.example/robots.shr"
	s.add(pub, "static", now)
	s.next(now)
	s.learnControl(pub, nil)(&protocol.ShareControl{Crawler: "pub:1 P", Special: []string{"http://site.example/"}})
	s.backs(pub, []webevents.Event{{URL: "http://site.example/a", CID: "pub:1 P", LPD: now.Unix(), Stat: webevents.Create}}, now)
	s.done(pub, mergeOutcome{gained: 1, crawler: "pub:1 P", special: []string{"http://site.example/"}}, now)
	due := func() time.Time { return s.rows[rowKey(pub)].NextDue }
	if !due().After(now.Add(time.Second)) {
		t.Fatalf("next merge %v: want the schedule's wait", due().Sub(now))
	}
	if s.nudge("http://other.example/a", now.Add(5*time.Second), time.Second) {
		t.Fatal("a host left to nobody was nudged")
	}
	if !s.nudge("http://site.example/b", now.Add(500*time.Millisecond), time.Second) || !due().Equal(now.Add(time.Second)) {
		t.Fatalf("nudged at +0.5 s: next merge at %v, want the gap after the last (+1 s)", due().Sub(now))
	}
	if !s.nudge("http://site.example/c", now.Add(5*time.Second), time.Second) || !due().Equal(now.Add(time.Second)) {
		t.Fatalf("a later nudge put the merge off to %v", due().Sub(now))
	}
}

// Issue 18, item 1: a special prefix ends at a host boundary, at most
// MaxSpecial of a peer count, and only for hosts the peer shows by its own
// polls (records with its cid) that it crawls.
func TestHostileSpecialPrefixes(t *testing.T) {
	s := newPeerSet(MergeSchedule{MergeMin: time.Second, MergeMax: 24 * time.Hour})
	now := time.Unix(1_700_000_000, 0)
	const shr, cid = "http://grabby.example/robots.shr", "grabby:1 G"
	many := []string{"http://1", "http://example.com", "HTTP://Crawled.Example:80", "http://unbacked.example/"}
	for i := range 2 * MaxSpecial {
		many = append(many, fmt.Sprintf("http://h%d.example/", i))
	}
	s.add(shr, "static", now)
	s.next(now)
	s.done(shr, mergeOutcome{gained: 5, crawler: cid, special: many}, now)
	var batch []webevents.Event
	for _, u := range []string{"http://1/x", "http://example.com/a", "http://crawled.example/p"} {
		batch = append(batch, webevents.Event{URL: u, CID: cid, LPD: now.Unix()})
	}
	batch = append(batch, webevents.Event{URL: "http://unbacked.example/p", CID: "someone-else:1 X", LPD: now.Unix()})
	for i := range 2 * MaxSpecial {
		batch = append(batch, webevents.Event{URL: fmt.Sprintf("http://h%d.example/p", i), CID: cid, LPD: now.Unix()})
	}
	s.backs(shr, batch, now)
	got := s.delegated(now)
	if len(got) != MaxSpecial-1 { // the first MaxSpecial, less the unbacked one
		t.Errorf("%d prefixes honoured, want %d", len(got), MaxSpecial-1)
	}
	for _, u := range []string{"http://127.0.0.1:8080/a", "http://10.0.0.1/", "http://example.com.evil.net/", "http://unbacked.example/p"} {
		if hasAnyPrefix(u, got) {
			t.Errorf("%s left to a peer: %v", u, got)
		}
	}
	for _, u := range []string{"http://1/x", "http://example.com/a", "http://crawled.example/p"} {
		if !hasAnyPrefix(u, got) {
			t.Errorf("%s not left to the peer that polls it", u)
		}
	}
	if later := s.delegated(now.Add(SpecialBacking + time.Hour)); len(later) != 0 {
		t.Errorf("prefixes honoured without recent polls of their hosts: %v", later)
	}
}

func hasAnyPrefix(s string, prefixes []string) bool {
	for _, p := range prefixes {
		if strings.HasPrefix(s, p) {
			return true
		}
	}
	return false
}

func TestDiscoveredPeersAreBounded(t *testing.T) {
	s := newPeerSet(MergeSchedule{})
	now := time.Unix(1_700_000_000, 0)
	many := make([]string, 40)
	for i := range many {
		many[i] = "/ip4/127.0.0.1/tcp/1"
	}
	for i := range maxPeers + 10 {
		s.addP2P(fmt.Sprintf("libp2p://p%d/robots.shr", i), fmt.Sprint(i), many, "dht", now)
	}
	rows := s.snapshot()
	if len(rows) != maxPeers || len(rows[0].P2PAddrs) != maxAddrs {
		t.Fatalf("%d rows, %d addresses in the first", len(rows), len(rows[0].P2PAddrs))
	}
}

// With a request budget, merges from all healthy peers take at most
// rho.MergeBudgetShare of it, counted in the requests they make: the wait
// between merges from one peer has a floor.
func TestMergesWithinTheBudget(t *testing.T) {
	s := newPeerSet(MergeSchedule{MergeMin: 100 * time.Millisecond, MergeMax: time.Hour, RequestRate: 40})
	now := time.Unix(1_700_000_000, 0)
	for _, u := range []string{"http://a.example/robots.shr", "http://b.example/robots.shr"} {
		s.add(u, "static", now)
		s.next(now)
		s.done(u, mergeOutcome{gained: 1000}, now)
	}
	s.next(now)
	r := s.done("http://a.example/robots.shr", mergeOutcome{gained: 1000}, now)
	// Two healthy peers, 15% of 40 requests a second: three merges a second in all.
	if got, want := time.Duration(r.Interval), time.Second/3; got < want-time.Millisecond || got > want+time.Millisecond {
		t.Fatalf("wait %v, want 333ms (2 peers / (0.15 x 40/s))", got)
	}
	// Merges that make three requests each (a robots.shr and two day
	// files) are three times as far apart: the floor counts requests.
	three := newPeerSet(MergeSchedule{MergeMin: 100 * time.Millisecond, MergeMax: time.Hour, RequestRate: 40})
	for _, u := range []string{"http://a.example/robots.shr", "http://b.example/robots.shr"} {
		three.add(u, "static", now)
		three.next(now)
		three.done(u, mergeOutcome{gained: 1000, requests: 3}, now)
	}
	three.next(now)
	r = three.done("http://a.example/robots.shr", mergeOutcome{gained: 1000, requests: 3}, now)
	if got := time.Duration(r.Interval); got != time.Second {
		t.Fatalf("merges of 3 requests: wait %v, want 1s (2 peers x 3 / (0.15 x 40/s))", got)
	}
	free := newPeerSet(MergeSchedule{MergeMin: 100 * time.Millisecond, MergeMax: time.Hour})
	free.add("http://a.example/robots.shr", "static", now)
	free.next(now)
	if r := free.done("http://a.example/robots.shr", mergeOutcome{gained: 1000}, now); time.Duration(r.Interval) != 100*time.Millisecond {
		t.Fatalf("without a budget the wait is %v, want the 100ms floor", time.Duration(r.Interval))
	}
}
