package crawl

import (
	"fmt"
	"net/url"
	"testing"
	"time"
)

func TestFrontierOrder(t *testing.T) {
	f := newFrontier()
	now := time.Now()
	// Host b has the most unpolled URLs: it goes first (larger sites first).
	for i := range 2 {
		f.add(URLState{URL: fmt.Sprintf("http://a.example/%d", i), Due: now})
	}
	for i := range 5 {
		f.add(URLState{URL: fmt.Sprintf("http://b.example/%d", i), Due: now, Depth: 5 - i})
	}
	f.add(URLState{URL: "http://c.example/later", Due: now.Add(time.Minute)})

	h, _ := f.next(now)
	if h == nil || h.key != "http://b.example" {
		t.Fatalf("first host %v, want b (most unpolled)", h)
	}
	if st := f.pop(h, now); st.URL != "http://b.example/4" { // shallowest first among equals
		t.Fatalf("first URL of b: %s", st.URL)
	}
	// b is busy: one request per host at a time.
	h2, _ := f.next(now)
	if h2 == nil || h2.key != "http://a.example" {
		t.Fatalf("second host %v, want a", h2)
	}
	if h3, wait := f.next(now); h3 != nil || wait != time.Minute {
		t.Fatalf("c is not due yet, got %v wait %v", h3, wait)
	}
	// b released with a delay: not ready until it passes.
	f.release(h, now.Add(2*time.Second))
	if h4, _ := f.next(now.Add(time.Second)); h4 != nil {
		t.Fatalf("b was handed out before its delay ended")
	}
	if h5, _ := f.next(now.Add(2 * time.Second)); h5 == nil || h5.key != "http://b.example" {
		t.Fatalf("b not ready after its delay: %v", h5)
	}
	if _, isNew := f.add(URLState{URL: "http://a.example/0"}); isNew {
		t.Fatal("a known URL was added twice")
	}
}

func TestHostKeyWithoutParsing(t *testing.T) {
	for u, want := range map[string]string{
		"http://a.test/x": "http://a.test", "https://a.test:8443/p?q=1": "https://a.test:8443", "http://a.test?q": "http://a.test",
		"http://[::1]:80/": "http://[::1]:80", "http://a.test": "http://a.test", "HTTP://a.test/": "http://a.test",
		"http://u@a.test/": "http://a.test", "http://a.test#f": "http://a.test",
	} {
		if got := hostKey(u); got != want {
			t.Errorf("hostKey(%q) = %q, want %q", u, got, want)
		}
	}
}

// The shortcut agrees with url.Parse wherever url.Parse takes the URL.
func FuzzHostKey(f *testing.F) {
	for _, u := range []string{"http://a.test/x", "http://a.test:1?x", "http://[::1]/", "https://A.test/%41", "http:///x", "http://a b/"} {
		f.Add(u)
	}
	f.Fuzz(func(t *testing.T, u string) {
		if _, err := url.Parse(u); err != nil {
			return
		}
		if fast, slow := hostKey(u), parsedHostKey(u); fast != slow {
			t.Errorf("hostKey(%q) = %q, url.Parse says %q", u, fast, slow)
		}
	})
}

func TestFrontierFindsWhatStaysAfterDrops(t *testing.T) {
	f := newFrontier()
	now := time.Now()
	var urls []string
	for i := range 20 {
		u := fmt.Sprintf("http://a.example/%d", i)
		urls = append(urls, u)
		f.add(URLState{URL: u, Due: now, Polls: 1, Gone: true}) // in no heap: drop takes it as it is
	}
	// Drop every third as it is yielded, the way ForgetGone does: each
	// URL is yielded once, and the last one's place changes under it.
	seen := map[string]int{}
	for st := range f.states() {
		seen[st.URL]++
		if n := len(st.URL); st.URL[n-1]%3 == 0 {
			f.drop(st)
		}
	}
	for _, u := range urls {
		if seen[u] != 1 {
			t.Errorf("%s yielded %d times", u, seen[u])
		}
		dropped := u[len(u)-1]%3 == 0
		if st := f.get(u); dropped != (st == nil) || st != nil && st.URL != u {
			t.Errorf("get(%s) = %v after the drops (dropped %v)", u, st, dropped)
		}
	}
	if got := len(f.all); got != f.residentFP.Len() {
		t.Errorf("%d URLs in memory, %d found by fingerprint", got, f.residentFP.Len())
	}
}
