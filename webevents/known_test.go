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
