package crawl

import (
	"math"
	"testing"
	"time"

	"github.com/cocrawl/cocrawl/crawl/revisit"
	"github.com/cocrawl/cocrawl/internal/testweb"
	"github.com/cocrawl/cocrawl/webevents"
)

// The crawler feeds each URL's estimate from its polls: on a web whose
// pages change at a known rate, the mean estimate over its pages comes
// near it.
func TestCrawlEstimatesChangeRates(t *testing.T) {
	const rate = 0.5 // changes per page per second
	w := runWeb(t, testweb.Config{Hosts: 3, PagesPerHost: 20, UpdateRate: rate, Seed: 11})
	cfg := testConfig(w)
	cfg.MinDelay, cfg.RevisitMin, cfg.RevisitMax = 2*time.Millisecond, 400*time.Millisecond, 800*time.Millisecond
	c := startCrawler(t, cfg, webevents.NewMemStore(), &MemFrontier{})
	var mean float64
	waitFor(t, 20*time.Second, "estimates from 8 visits a page", func() bool {
		c.mu.Lock()
		defer c.mu.Unlock()
		sum, n := 0.0, 0
		for _, st := range c.f.all {
			if r, ok := st.Rate.Estimate(); ok && st.Rate.Visits >= 8 {
				sum += r
				n++
			}
		}
		if n < 40 {
			return false
		}
		mean = sum / float64(n)
		return true
	})
	t.Logf("mean estimate %.3f changes/s for a true rate of %.3f", mean, rate)
	if mean < 0.7*rate || mean > 1.3*rate {
		t.Errorf("mean estimate %.3f changes/s, true rate %.3f", mean, rate)
	}
}

// A trusted peer's observation counts as a visit in the estimate; an
// untrusted one only moves the due time.
func TestObservedHintsFeedTheEstimate(t *testing.T) {
	c, err := New(Config{Seeds: []string{"http://a.example/"}, CID: testCID}, webevents.NewMemStore(), &MemFrontier{})
	if err != nil {
		t.Fatal(err)
	}
	if err := c.Start(); err != nil {
		t.Fatal(err)
	}
	defer c.Stop()
	u := "http://a.example/"
	now := time.Now()
	c.mu.Lock()
	st := c.f.get(u)
	st.Seen, st.Polls, st.Due, st.Interval = now.Add(-time.Hour).UnixMilli(), 1, now.Add(time.Hour), 2*time.Hour
	c.mu.Unlock()
	c.Hint(Hint{URL: u, Seen: now.Add(-30 * time.Minute), Changed: now.Add(-40 * time.Minute)})
	c.mu.Lock()
	untrusted := st.Rate.Visits
	c.mu.Unlock()
	c.Hint(Hint{URL: u, Seen: now.Add(-20 * time.Minute), Changed: now.Add(-25 * time.Minute), Observed: true})
	c.mu.Lock()
	defer c.mu.Unlock()
	if untrusted != 0 || st.Rate.Visits != 1 || st.Rate.Changes != 1 {
		t.Fatalf("visits %d after an untrusted hint, then %d visits and %d changes", untrusted, st.Rate.Visits, st.Rate.Changes)
	}
}

func TestRateStats(t *testing.T) {
	c, err := New(Config{Seeds: []string{"http://a.example/"}, CID: testCID}, webevents.NewMemStore(), &MemFrontier{})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := c.Load(); err != nil {
		t.Fatal(err)
	}
	now := time.Now()
	c.mu.Lock()
	c.addURL("http://a.example/", 0, now)
	c.addURL("http://a.example/b", 1, now)
	for _, u := range []string{"http://a.example/", "http://a.example/b"} {
		st := c.f.get(u)
		st.Interval = time.Hour
		for range 10 { // a change every other hour: 12 a day
			st.Rate.Observe(time.Hour, st.Rate.Visits%2 == 0, -1, false)
		}
	}
	c.addURL("http://a.example/c", 1, now)
	c.mu.Unlock()
	s := c.RateStats()
	if s.PerDay["10-100"] != 2 || s.Unknown != 1 {
		t.Fatalf("rate stats %+v", s)
	}
	if s.ExpectedFreshness < 0.6 || s.ExpectedFreshness > 0.8 { // λI ≈ 0.6: (1-e^-0.6)/0.6 ≈ 0.75
		t.Errorf("expected freshness %.3f", s.ExpectedFreshness)
	}

	// The freshness the plan expects is that of the rates it plans with,
	// each estimate pulled toward its host's prior: here one page whose
	// few looks read it four times slower than its host's others.
	c.mu.Lock()
	slow := c.f.get("http://a.example/c")
	slow.Interval = time.Hour
	for range 4 {
		slow.Rate.Observe(4*time.Hour, true, -1, false)
	}
	slow.Rate.Observe(4*time.Hour, false, -1, false)
	h := c.f.lookup(hostKey(slow.URL))
	h.fit.prior = revisit.Prior{Mean: math.Log(0.5 / 3600), Var: 0.01, Fitted: true}
	raw, _ := slow.Rate.Estimate()
	pulled, _ := h.fit.prior.Estimate(slow.Rate)
	c.mu.Unlock()
	s = c.RateStats()
	var want, unpulled float64
	fresh := func(l float64, iv time.Duration) float64 { x := l * iv.Seconds(); return (1 - math.Exp(-x)) / x / 3 }
	for _, u := range []string{"http://a.example/", "http://a.example/b", "http://a.example/c"} {
		c.mu.Lock()
		st := c.f.get(u)
		l, _ := h.fit.prior.Estimate(st.Rate)
		r, _ := st.Rate.Estimate()
		want += fresh(l, st.Interval)
		unpulled += fresh(r, st.Interval)
		c.mu.Unlock()
	}
	if math.Abs(s.ExpectedFreshness-want) > 1e-9 || math.Abs(want-unpulled) < 0.01 {
		t.Errorf("expected freshness %.4f, want %.4f of the pulled estimates (the slow page's %.3g/h raw, %.3g/h pulled)",
			s.ExpectedFreshness, want, raw*3600, pulled*3600)
	}
}
