package crawl

import (
	"testing"
	"time"
)

// startIdle starts a crawler that is never asked to poll: hints only move
// its frontier, so no request is sent.
func startIdle(t *testing.T, seeds ...string) *Crawler {
	t.Helper()
	c, err := New(Config{Seeds: seeds, CID: "me.test:1 cocrawl/1.1", Agent: "cocrawl", RevisitMin: time.Hour, RevisitMax: 24 * time.Hour}, nil, &MemFrontier{})
	if err != nil {
		t.Fatal(err)
	}
	if err := c.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Stop() })
	return c
}

func (c *Crawler) stateOf(u string) (URLState, bool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	st := c.f.get(u)
	if st == nil {
		return URLState{}, false
	}
	return *st, true
}

func TestHint(t *testing.T) {
	c := startIdle(t, "http://a.test/")
	now := time.Now()

	// A URL learnt only from a hint joins the frontier when in scope.
	if !c.Hint(Hint{URL: "http://a.test/new"}) {
		t.Fatal("an in-scope URL was refused")
	}
	if c.Hint(Hint{URL: "http://b.test/x"}) {
		t.Error("an out-of-scope URL joined the frontier")
	}
	if c.Hint(Hint{URL: "ftp://a.test/x"}) {
		t.Error("a URL that is not http(s) joined the frontier")
	}

	// Someone else polled it a minute ago: due an interval from then.
	seen := now.Add(-time.Minute)
	c.Hint(Hint{URL: "http://a.test/new", Seen: seen})
	st, _ := c.stateOf("http://a.test/new")
	if want := seen.Add(st.Interval); !st.Due.Equal(want) {
		t.Errorf("after a Seen hint due %v, want %v", st.Due, want)
	}
	// An older observation changes nothing.
	c.Hint(Hint{URL: "http://a.test/new", Seen: seen.Add(-time.Hour)})
	if st2, _ := c.stateOf("http://a.test/new"); !st2.Due.Equal(st.Due) {
		t.Errorf("an older Seen moved due from %v to %v", st.Due, st2.Due)
	}
	// A change before the last look changes nothing; one after makes it due now.
	c.Hint(Hint{URL: "http://a.test/new", Changed: seen.Add(-time.Second)})
	if st2, _ := c.stateOf("http://a.test/new"); !st2.Due.Equal(st.Due) {
		t.Errorf("a change before the last look moved due to %v", st2.Due)
	}
	c.Hint(Hint{URL: "http://a.test/new", Changed: seen.Add(time.Second)})
	if st2, _ := c.stateOf("http://a.test/new"); st2.Due.After(time.Now()) {
		t.Errorf("a change after the last look left it due at %v", st2.Due)
	}
	// A time in the future counts as now: a hint cannot put a URL off for
	// more than one interval.
	c.Hint(Hint{URL: "http://a.test/new", Seen: now.Add(1000 * time.Hour)})
	if st2, _ := c.stateOf("http://a.test/new"); st2.Due.After(time.Now().Add(st2.Interval)) {
		t.Errorf("a Seen in the future put it off to %v", st2.Due)
	}
}

// A hint moves a URL inside its host's queue: the host's next URL is the
// one now most due.
func TestHintReordersTheQueue(t *testing.T) {
	c := startIdle(t, "http://a.test/")
	for _, u := range []string{"http://a.test/1", "http://a.test/2", "http://a.test/3"} {
		c.Hint(Hint{URL: u})
	}
	now := time.Now()
	for _, u := range []string{"http://a.test/", "http://a.test/1", "http://a.test/2"} {
		c.Hint(Hint{URL: u, Seen: now}) // seen by a peer: not due for an hour
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	h := c.f.hosts["http://a.test"]
	if h.queue.Len() != 3 || h.first.Len() != 1 {
		t.Errorf("%d URLs put off and %d first visits, want 3 and 1", h.queue.Len(), h.first.Len())
	}
	for first, q := range map[bool]urlQueue{false: h.queue, true: h.first} {
		for i, st := range q.items {
			if st.qi != i+1 || st.inFirst != first {
				t.Errorf("%s at %d says it is at %d (first visit: %v)", st.URL, i, st.qi-1, st.inFirst)
			}
		}
	}
	if st := c.f.pop(h, now); st == nil || st.URL != "http://a.test/3" {
		t.Errorf("the host's next URL is %v, want http://a.test/3", st)
	}
}
