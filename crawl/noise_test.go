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

// noisePage is a page of two paragraphs: a long one that stays, and one
// whose text is the given words.
func noisePage(words string) *Result {
	page := &fingerprint.Builder{}
	page.Start(atom.P, "", "body", false)
	var stay strings.Builder
	for i := range 300 {
		fmt.Fprintf(&stay, "steady%d ", i)
	}
	page.Text([]byte(stay.String()))
	page.End(atom.P)
	page.Start(atom.P, "", "meta", false)
	page.Text([]byte(words))
	page.End(atom.P)
	fp, ok := page.Sum()
	return &Result{Status: 200, page: page, Fingerprint: fp, HasFingerprint: ok}
}

// A page read twice for the host's noise that changed between the reads,
// as its trusted validators say, teaches nothing of the noise: its
// changed place would be masked, and its changes go unseen on every page
// of the host (the regime sweep's cooperating peers, whose records were
// then compared allowing for it, fell from 2.21x to 1.47x the lone
// crawlers' freshness). Two reads of one version that differ do.
func TestNoiseProbeLearnsNothingFromARealChange(t *testing.T) {
	for _, c := range []struct {
		name         string
		etag1, etag2 string
		learns       bool
	}{{"a new version", `"v1"`, `"v2"`, false}, {"one version", `"v1"`, `"v1"`, true}, {"no validators", "", "", true}} {
		t.Run(c.name, func(t *testing.T) {
			cr := &Crawler{}
			h := &host{}
			st := &URLState{URL: "http://a.test/p", Polls: 1}
			first := noisePage("generated at 10:00:01 for visitor 17 once upon a time")
			first.ETag = c.etag1
			if again := cr.readNoise(h, st, first); !again {
				t.Fatal("the first read asked for no second")
			}
			second := noisePage("generated at 10:00:02 for visitor 18 twice upon a time")
			second.ETag = c.etag2
			cr.readNoise(h, st, second)
			learnt := len(h.noise.mask) > 0 || h.noise.wire > 0
			if learnt != c.learns {
				t.Errorf("learnt noise %v (mask %d places, wire %d bits), want %v", learnt, len(h.noise.mask), h.noise.wire, c.learns)
			}
		})
	}
}
