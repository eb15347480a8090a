package webevents

import (
	"context"
	"fmt"
	"log/slog"
	"testing"
	"time"
)

// The filters grow with the URLs, not with the writes: writing the same
// URLs again and again takes no room.
func TestKnownURLsGrowWithURLsOnly(t *testing.T) {
	k := newKnownURLs()
	for round := range 20 {
		for i := range 100_000 {
			k.add(fmt.Sprintf("http://a.example/%d", i))
		}
		if round == 0 {
			continue
		}
		if len(k.filters) > 2 {
			t.Fatalf("round %d: %d filters for 100,000 URLs", round, len(k.filters))
		}
	}
	for i := range 100_000 {
		if !k.mayHold(fmt.Sprintf("http://a.example/%d", i)) {
			t.Fatalf("URL %d added but not held", i)
		}
	}
}

// A load's URLs, added without the test, are held as add's are, across
// the filters it grows.
func TestKnownURLsAddNew(t *testing.T) {
	k := newKnownURLs()
	for i := range 200_000 {
		k.addNew(fmt.Appendf(nil, "http://b.example/%d", i))
	}
	if len(k.filters) < 2 {
		t.Fatalf("%d filters for 200,000 URLs: none grown", len(k.filters))
	}
	for i := range 200_000 {
		if !k.mayHold(fmt.Sprintf("http://b.example/%d", i)) {
			t.Fatalf("URL %d added but not held", i)
		}
	}
	missed := 0
	for i := range 10_000 {
		if k.mayHold(fmt.Sprintf("http://c.example/%d", i)) {
			missed++
		}
	}
	if missed > 500 { // about 0.5% a filter, a few filters
		t.Errorf("%d of 10,000 URLs never added may be held", missed)
	}
}

// A store's filter loads in the background from a snapshot: while it
// loads every URL may be held, a URL written meanwhile is held once it
// has loaded, and the stored URLs are held as before.
func TestKnownURLsLoadInBackground(t *testing.T) {
	s := openInMemory(t)
	<-s.knownLoaded
	now := time.Now().Unix()
	var stored []Event
	for i := range 2000 {
		stored = append(stored, Event{URL: fmt.Sprintf("http://a.example/%d", i), Size: 1, LMD: now - 10, LPD: now, CID: "a:1 A/1", Stat: Create})
	}
	if err := s.Record(stored); err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	done := make(chan struct{})
	s.knownMu.Lock() // as a writer's learn holds it: the load cannot end meanwhile
	s.loadKnownInBackground(ctx, slog.Default(), done)
	if !s.known.mayHold("http://never.example/") {
		t.Error("a URL is not held while the filter loads")
	}
	s.known.add("http://b.example/written-while-loading") // as a writer's learn does
	// more than a first filter holds: the pending ones grow
	for i := range 100_000 {
		s.known.add(fmt.Sprintf("http://d.example/%d", i))
	}
	s.knownMu.Unlock()
	<-done
	s.knownMu.Lock()
	defer s.knownMu.Unlock()
	if s.known.loading {
		t.Fatal("the filter is still loading after its load ended")
	}
	for _, e := range stored {
		if !s.known.mayHold(e.URL) {
			t.Fatalf("%s is stored but not held", e.URL)
		}
	}
	if !s.known.mayHold("http://b.example/written-while-loading") {
		t.Error("a URL written while the filter loaded is not held")
	}
	for i := range 100_000 {
		if !s.known.mayHold(fmt.Sprintf("http://d.example/%d", i)) {
			t.Fatalf("URL %d written while the filter loaded is not held", i)
		}
	}
	missed := 0
	for i := range 2000 {
		if s.known.mayHold(fmt.Sprintf("http://c.example/%d", i)) {
			missed++
		}
	}
	if missed > 100 {
		t.Errorf("%d of 2,000 URLs never written may be held", missed)
	}
}

// A load that ends early (the store closing) leaves every URL held, and
// nothing pending grows.
func TestKnownURLsLoadStopped(t *testing.T) {
	s := openInMemory(t)
	<-s.knownLoaded
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	done := make(chan struct{})
	s.knownMu.Lock()
	s.loadKnownInBackground(ctx, slog.Default(), done)
	s.knownMu.Unlock()
	<-done
	s.knownMu.Lock()
	defer s.knownMu.Unlock()
	s.known.add("http://a.example/")
	if !s.known.mayHold("http://never.example/") || s.known.pending != nil {
		t.Errorf("after a stopped load: never-written held %v, pending kept %v", s.known.mayHold("http://never.example/"), s.known.pending != nil)
	}
}

// BenchmarkKnownURLsMayHoldNew tests URLs never added against the chain
// of filters of four million URLs (six filters): what each poll of a URL
// never recorded costs.
func BenchmarkKnownURLsMayHoldNew(b *testing.B) {
	k := newKnownURLs()
	for i := range 4_000_000 {
		k.addNew(fmt.Appendf(nil, "http://h%d.example/page/%d", i%3000, i))
	}
	urls := make([]string, 4096)
	for i := range urls {
		urls[i] = fmt.Sprintf("http://h%d.example/new/%d", i%3000, i)
	}
	held, n := 0, 0
	for ; b.Loop(); n++ {
		if k.mayHold(urls[n%len(urls)]) {
			held++
		}
	}
	b.ReportMetric(float64(len(k.filters)), "filters")
	b.ReportMetric(float64(held)/float64(n), "false-held")
}
