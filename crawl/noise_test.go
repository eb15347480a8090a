package crawl

import (
	"fmt"
	"strings"
	"testing"
	"time"

	"golang.org/x/net/html/atom"

	"github.com/cocrawl/cocrawl/crawl/fingerprint"
)

// The pages held while hosts learn their noise are bounded in features,
// whatever their size: hostile pages of the most text a fingerprint reads
// cannot make the crawler hold more than maxHeldFeatures, and releasing a
// host gives its share back.
func TestHeldReadsBounded(t *testing.T) {
	var text strings.Builder
	for i := range fingerprint.MaxFeatures + 10 {
		fmt.Fprintf(&text, "w%d ", i%5000)
	}
	page := &fingerprint.Builder{}
	page.Start(atom.P, "", "", false)
	page.Text([]byte(text.String()))
	if page.Size() < fingerprint.MaxFeatures {
		t.Fatalf("a page of %d features", page.Size())
	}
	c := &Crawler{}
	hosts := []*hostNoise{{}, {}}
	start := time.Now()
	for i := range 2 * noiseAfter {
		c.holdRead(hosts[i%2], &URLState{URL: fmt.Sprint(i)}, page, start)
	}
	held := len(hosts[0].held) + len(hosts[1].held)
	if c.noiseHeldFeatures > maxHeldFeatures || held != maxHeldFeatures/page.Size() || c.noiseHeld != held {
		t.Fatalf("%d pages of %d features held, %d features counted (at most %d)", held, page.Size(), c.noiseHeldFeatures, maxHeldFeatures)
	}
	// A third host, once the others have held theirs past the probe's
	// timeout (never learning), takes their room.
	late := &hostNoise{}
	c.holdRead(late, &URLState{URL: "late"}, page, start.Add(noiseProbeTimeout+time.Second))
	if len(late.held) != 1 || len(hosts[0].held)+len(hosts[1].held) != 0 || c.noiseHeld != 1 {
		t.Fatalf("stale holders kept %d and %d pages, the new host %d", len(hosts[0].held), len(hosts[1].held), len(late.held))
	}
	c.releaseHeld(late)
	if c.noiseHeld != 0 || c.noiseHeldFeatures != 0 || len(c.noiseHolders) != 0 {
		t.Fatalf("after release: %d pages, %d features, %d holders still counted", c.noiseHeld, c.noiseHeldFeatures, len(c.noiseHolders))
	}
}
