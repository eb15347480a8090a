package crawl

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/cocrawl/cocrawl/internal/testweb"
	"github.com/cocrawl/cocrawl/webevents"
)

// A caller that schedules polls itself: Poll sends one request or says how
// long until a host is due, and a delegated prefix is never requested.
func TestPollStepsAndDelegation(t *testing.T) {
	w, err := testweb.Start(testweb.Config{Hosts: 2, PagesPerHost: 10, Seed: 7})
	if err != nil {
		t.Fatal(err)
	}
	defer w.Close()
	cfg := testConfig(w)
	cfg.MinDelay = 300 * time.Millisecond
	st := webevents.NewMemStore()
	c, err := New(cfg, st, &MemFrontier{})
	if err != nil {
		t.Fatal(err)
	}
	delegated := w.Hosts()[1].URL + "/"
	c.Delegate([]string{delegated})
	if err := c.Start(); err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	var requests, changed int
	deadline := time.Now().Add(10 * time.Second)
	for requests < 20 && time.Now().Before(deadline) {
		r, ok, wait := c.Poll(ctx)
		if !ok {
			if wait < 0 || wait > time.Second {
				t.Fatalf("nothing ready and wait %v", wait)
			}
			time.Sleep(wait)
			continue
		}
		requests++
		if r.Changed {
			changed++
			if r.Event.URL != r.URL || r.Event.Stat != webevents.Create {
				t.Fatalf("poll of %s reported %+v", r.URL, r.Event)
			}
		}
		if strings.HasPrefix(r.URL, delegated) && !r.Robots {
			t.Fatalf("polled %s inside the delegated prefix", r.URL)
		}
		if r.Cost <= 0 {
			t.Fatalf("poll of %s cost %v", r.URL, r.Cost)
		}
	}
	if err := c.Stop(); err != nil {
		t.Fatal(err)
	}
	if changed == 0 || c.Stats().Delegated == 0 {
		t.Fatalf("%d requests, %d changed, stats %+v", requests, changed, c.Stats())
	}
	for _, e := range w.Hosts()[1].Log() {
		if e.Path != "/robots.txt" {
			t.Fatalf("delegated host got %s", e.Path)
		}
	}
}
