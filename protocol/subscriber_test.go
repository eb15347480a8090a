package protocol

import (
	"context"
	"fmt"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/cocrawl/cocrawl/webevents/storetest"
)

// collector is a subscriber's Deliver, for tests.
type collector struct {
	mu   sync.Mutex
	urls []string
}

func (c *collector) deliver(e SubscribedEvent) error {
	c.mu.Lock()
	c.urls = append(c.urls, e.URL)
	c.mu.Unlock()
	return nil
}

func (c *collector) wait(t *testing.T, n int) []string {
	t.Helper()
	deadline := time.Now().Add(15 * time.Second)
	for {
		c.mu.Lock()
		got := append([]string(nil), c.urls...)
		c.mu.Unlock()
		if len(got) >= n {
			return got
		}
		if time.Now().After(deadline) {
			t.Fatalf("%d of %d events delivered: %v", len(got), n, got)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// runSubscriber runs a subscriber until the returned stop is called.
func runSubscriber(t *testing.T, s *Subscriber) (stop func()) {
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- s.Run(ctx) }()
	return func() {
		cancel()
		if err := <-done; err != nil {
			t.Errorf("Run: %v", err)
		}
	}
}

// A subscriber of one site gets that site's events, from the live stream
// or from pulled day files (a peer without a stream), filtered by the
// peer or, where the peer does not filter, by itself; restarted from its
// saved state it gets what came meanwhile, and nothing twice.
func TestSubscriberFollowsOneSite(t *testing.T) {
	noStream := func(h http.Handler) http.Handler {
		return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			if r.URL.Path == StreamPath {
				http.NotFound(w, r)
				return
			}
			h.ServeHTTP(w, r)
		})
	}
	noFilter := func(h http.Handler) http.Handler { // an older peer: the query is not known
		return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			r.URL.RawQuery = ""
			h.ServeHTTP(w, r)
		})
	}
	for name, wrap := range map[string]func(http.Handler) http.Handler{
		"stream":                func(h http.Handler) http.Handler { return h },
		"stream, filtered here": noFilter,
		"pulls":                 noStream,
		"pulls, filtered here":  func(h http.Handler) http.Handler { return noStream(noFilter(h)) },
	} {
		t.Run(name, func(t *testing.T) {
			st := storetest.OpenBadger(t)
			srv, err := NewServer(st, ServerOptions{Control: ShareControl{Crawler: "sharer.example:8080 cocrawl/1.1"}})
			if err != nil {
				t.Fatal(err)
			}
			ts := httptest.NewServer(wrap(srv))
			defer ts.Close()
			f, _ := NewDayFilter("http://a.example/")
			var saved SubscriptionState
			var c collector
			newSub := func() *Subscriber {
				state := saved
				return &Subscriber{Base: ts.URL, Prefix: &f, Client: NewHTTPClient(ClientOptions{AllowPrivate: true}), PullEvery: 100 * time.Millisecond,
					Deliver: c.deliver, State: &state, Save: func(s *SubscriptionState) error { saved = *s; return nil }}
			}
			pulls := strings.HasPrefix(name, "pulls")
			if pulls { // a first pull takes today's file: record before
				if err := st.Record(append(todayEvents(3, 0, "a.example"), todayEvents(3, 0, "b.example")...)); err != nil {
					t.Fatal(err)
				}
			}
			stop := runSubscriber(t, newSub())
			time.Sleep(300 * time.Millisecond)
			if !pulls {
				if err := st.Record(append(todayEvents(3, 0, "a.example"), todayEvents(3, 0, "b.example")...)); err != nil {
					t.Fatal(err)
				}
			}
			c.wait(t, 3)
			stop()
			if err := st.Record(append(todayEvents(2, 10, "b.example"), todayEvents(2, 10, "a.example")...)); err != nil {
				t.Fatal(err)
			}
			stop = runSubscriber(t, newSub())
			got := c.wait(t, 5)
			time.Sleep(400 * time.Millisecond)
			stop()
			c.mu.Lock()
			got = c.urls
			c.mu.Unlock()
			want := []string{"http://a.example/p/0", "http://a.example/p/1", "http://a.example/p/2", "http://a.example/p/10", "http://a.example/p/11"}
			if fmt.Sprint(got) != fmt.Sprint(want) {
				t.Errorf("delivered %v, want %v", got, want)
			}
			if saved.Peer != ts.URL || saved.Prefix != f.Prefix || (saved.Stream == "") == !pulls || (saved.Pull == nil) == pulls {
				t.Errorf("saved state %+v", saved)
			}
		})
	}
}
