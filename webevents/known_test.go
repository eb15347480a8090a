package webevents

import (
	"fmt"
	"testing"
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
