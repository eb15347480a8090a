package crawl

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/cocrawl/cocrawl/internal/testweb"
	"github.com/cocrawl/cocrawl/webevents"
)

// pollUntil polls c until done says stop or 10 s pass, and returns the
// results of the polls that sent a page request.
func pollUntil(t *testing.T, c *Crawler, done func(PollResult) bool) []PollResult {
	t.Helper()
	var out []PollResult
	deadline := time.Now().Add(10 * time.Second)
	for time.Now().Before(deadline) {
		r, ok, wait := c.Poll(context.Background())
		if !ok {
			time.Sleep(min(max(wait, time.Millisecond), 50*time.Millisecond))
			continue
		}
		if r.Robots {
			continue
		}
		out = append(out, r)
		if done(r) {
			return out
		}
	}
	t.Fatalf("gave up after %d polls", len(out))
	return nil
}

// startStepped starts a crawler, polled by the test itself, on a web of
// three unchanging pages that are due again at once; it returns the
// crawler, its store and the seed.
func startStepped(t *testing.T, confirm bool) (*Crawler, *webevents.MemStore, string) {
	t.Helper()
	w, err := testweb.Start(testweb.Config{Hosts: 1, PagesPerHost: 3, Seed: 3})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(w.Close)
	cfg := testConfig(w)
	cfg.Confirm = confirm
	cfg.RevisitMin, cfg.RevisitMax = time.Millisecond, time.Millisecond
	st := webevents.NewMemStore()
	c, err := New(cfg, st, &MemFrontier{})
	if err != nil {
		t.Fatal(err)
	}
	if err := c.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Stop() })
	return c, st, w.Seeds()[0]
}

// A peer's poll counts as a visit: a seen change halves the interval and
// the URL is due an interval (and this crawler's offset) from Seen; a seen
// non-change grows it. A pending Recheck is not put off.
func TestHintCountsAsVisit(t *testing.T) {
	c := startIdle(t, "http://a.test/")
	u := "http://a.test/p"
	c.Hint(Hint{URL: u})
	seen := time.Now().Add(-time.Minute)
	c.Hint(Hint{URL: u, Seen: seen, Changed: seen.Add(-time.Second)})
	st, _ := c.stateOf(u)
	if st.Interval != time.Hour { // RevisitMin
		t.Errorf("after a seen change interval %v, want the minimum 1h", st.Interval)
	}
	if want := c.revisitAt(&st, seen); !st.Due.Equal(want) {
		t.Errorf("due %v, want %v", st.Due, want)
	}
	later := seen.Add(30 * time.Second)
	c.Hint(Hint{URL: u, Seen: later, Changed: seen.Add(-time.Second)})
	st, _ = c.stateOf(u)
	if st.Interval != 90*time.Minute {
		t.Errorf("after a seen non-change interval %v, want 1h30m", st.Interval)
	}
	if c.Stats().Hinted != 2 {
		t.Errorf("Hinted = %d, want 2", c.Stats().Hinted)
	}
	c.Recheck(u)
	c.Hint(Hint{URL: u, Seen: time.Now()})
	if st, _ = c.stateOf(u); st.Due.After(time.Now()) {
		t.Errorf("a hint put a pending check off to %v", st.Due)
	}
}

// Spread gives each crawler its own order: offsets stay within Spread, and
// two crawlers order the same URLs differently.
func TestSpreadOrders(t *testing.T) {
	mk := func() *Crawler {
		c, err := New(Config{CID: testCID, Spread: time.Minute}, nil, &MemFrontier{})
		if err != nil {
			t.Fatal(err)
		}
		return c
	}
	a, b := mk(), mk()
	url := func(i int) string { return fmt.Sprintf("http://a.test/p/%d", i) }
	same := 0
	const n = 400
	for i := range n {
		u, v := url(2*i), url(2*i+1)
		for _, o := range []time.Duration{a.offset(u), b.offset(u)} {
			if o < 0 || o >= time.Minute {
				t.Fatalf("offset %v outside [0, 1m)", o)
			}
		}
		if (a.offset(u) < a.offset(v)) == (b.offset(u) < b.offset(v)) {
			same++
		}
	}
	// Independent orders agree on about half the pairs (n/2 ± 2.5 sigma).
	if same < n/2-50 || same > n/2+50 {
		t.Errorf("two crawlers ordered %d of %d pairs the same way, want about %d", same, n, n/2)
	}
	if c := mk(); c.offset("http://a.test/") != c.offset("http://a.test/") {
		t.Error("a crawler's offset of one URL moved")
	}
}

// Confirm records a poll that saw no change as the held state with the
// poll's lpd; a Recheck poll asks for the page unconditionally and says so.
func TestConfirmAndRecheck(t *testing.T) {
	c, _, seed := startStepped(t, true)
	polls := 0
	pollUntil(t, c, func(r PollResult) bool {
		if r.URL == seed {
			polls++
		}
		return polls == 2
	})
	if c.Stats().Confirmed == 0 || c.Stats().NotModified == 0 {
		t.Fatalf("a second poll of an unchanged page: %+v", c.Stats())
	}
	c.Recheck(seed)
	rs := pollUntil(t, c, func(r PollResult) bool { return r.Checked })
	r := rs[len(rs)-1]
	if r.URL != seed || r.Status != 200 || r.LastModified.IsZero() || r.ETag == "" {
		t.Errorf("check poll %+v: want a 200 of %s with its validators", r, seed)
	}
}

// A state merged from a peer is checked by the next poll: a claimed update
// with a forged lmd that the page does not show is corrected, also when
// the server answers 304 to this crawler's own validators.
func TestPollCorrectsMergedClaim(t *testing.T) {
	c, st, seed := startStepped(t, false)
	pollUntil(t, c, func(r PollResult) bool { return r.URL == seed })
	waitFor(t, 5*time.Second, "the first poll recorded", func() bool { _, ok := stat(st, seed); return ok })
	real, _ := stat(st, seed)
	lie := real
	// A claim one second after the own poll: later than anything the page
	// shows (the store does not check dates against the clock).
	lie.Stat, lie.LMD, lie.LPD, lie.CID = webevents.Update, real.LPD+1, real.LPD+1, "liar.test:1 x"
	if _, err := st.Merge([]webevents.Event{lie}, &webevents.Cursor{Peer: "http://liar.test/robots.shr"}); err != nil {
		t.Fatal(err)
	}
	if e, _ := stat(st, seed); e.LMD != lie.LMD {
		t.Fatalf("the lie was not merged: %+v", e)
	}
	rs := pollUntil(t, c, func(r PollResult) bool { return r.URL == seed })
	if r := rs[len(rs)-1]; !r.Changed {
		t.Fatalf("the poll after the lie (status %d) recorded nothing", r.Status)
	}
	waitFor(t, 5*time.Second, "the correction recorded", func() bool {
		e, _ := stat(st, seed)
		return e.LMD == real.LMD && e.From == ""
	})
}

// The rendezvous split: peers that poll a host rank its URLs the same way,
// each URL has exactly one owner, who revisits it on time, the owners are
// spread evenly, a host no peer shares keeps the crawler's own order, and
// a peer that drops out hands its URLs to the next in rank.
func TestRendezvousSplit(t *testing.T) {
	names := []string{"a.test:1 cocrawl", "b.test:1 cocrawl", "c.test:1 cocrawl"}
	mk := func(self string, others []string) *Crawler {
		c, err := New(Config{CID: self, Spread: 10 * time.Second}, nil, &MemFrontier{})
		if err != nil {
			t.Fatal(err)
		}
		var ps []SplitPeer
		for _, o := range others {
			ps = append(ps, SplitPeer{Name: o, Gap: time.Second}) // below Spread: Spread counts
		}
		c.Rendezvous(self, map[string][]SplitPeer{"http://shared.test": ps})
		return c
	}
	all := make([]*Crawler, len(names))
	for i, n := range names {
		all[i] = mk(n, names) // itself in the list is left out
	}
	owned := make([]int, len(names))
	const n = 3000
	for i := range n {
		u := fmt.Sprintf("http://shared.test/p/%d", i)
		seen := map[time.Duration]bool{}
		for j, c := range all {
			o := c.revisitOffset(u, time.Second)
			if o%(10*time.Second) != 0 || o > 20*time.Second || seen[o] {
				t.Fatalf("%s: offset %v of %s: want a distinct rank times the spread", names[j], o, u)
			}
			seen[o] = true
			if o == 0 {
				owned[j]++
			}
		}
	}
	for j, k := range owned {
		if k < n/3-150 || k > n/3+150 { // about 5 sigma
			t.Errorf("%s owns %d of %d URLs, want about %d", names[j], k, n, n/3)
		}
	}
	// A host nobody shares: the crawler's own order, within half the interval.
	if o := all[0].revisitOffset("http://alone.test/x", 4*time.Second); o >= 2*time.Second {
		t.Errorf("offset %v on a host not shared", o)
	}
	// A peer ranked above whose records come late (a long gap) is waited
	// for that much.
	slow := mk(names[0], nil)
	slow.Rendezvous(names[0], map[string][]SplitPeer{"http://shared.test": {{Name: names[1], Gap: time.Minute}}})
	for i := range 50 {
		u := fmt.Sprintf("http://shared.test/p/%d", i)
		if o := slow.revisitOffset(u, time.Second); o != 0 && o != time.Minute {
			t.Fatalf("%s: offset %v behind a peer whose records come a minute apart", u, o)
		}
	}
	// b leaves: what it owned goes to a or c, and a and c agree on it.
	a2, c2 := mk(names[0], []string{names[2]}), mk(names[2], []string{names[0]})
	for i := range 200 {
		u := fmt.Sprintf("http://shared.test/p/%d", i)
		if (a2.revisitOffset(u, time.Second) == 0) == (c2.revisitOffset(u, time.Second) == 0) {
			t.Fatalf("%s: a and c disagree on its owner once b left", u)
		}
		if all[0].revisitOffset(u, time.Second) == 0 && a2.revisitOffset(u, time.Second) != 0 {
			t.Fatalf("%s: a owned it with b in the split and lost it when b left", u)
		}
	}
}
