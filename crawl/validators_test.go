package crawl

import (
	"testing"
	"time"

	"github.com/cocrawl/cocrawl/crawl/fingerprint"
	"github.com/cocrawl/cocrawl/internal/testweb"
	"github.com/cocrawl/cocrawl/webevents"
)

// A Last-Modified a second old on a page that has just changed is true:
// on a host whose pages change every few seconds half the looks find one,
// and distrusting it would date the host's events by this crawler's own
// clock, which other peers' spot-checks refute. A Last-Modified at the
// response's time on a page whose text has not changed is the lie.
func TestLastModifiedDistrustedOnlyWhenTheTextStays(t *testing.T) {
	at := time.Date(2026, 11, 25, 10, 0, 0, 500_000_000, time.UTC)
	held := webevents.Event{Fingerprint: fingerprint.Format(0xf0f0)}
	look := func(fp uint64) *Result {
		return &Result{Status: 200, Start: at, LastModified: at.Truncate(time.Second), Fingerprint: fp, HasFingerprint: true}
	}
	var changing, lying hostValidators
	for range 10 {
		changing.observe(look(0x0f0f_0000), &held, fingerprint.Near) // another version each time
		lying.observe(look(0xf0f0), &held, fingerprint.Near)         // the version held
	}
	if !changing.trustLM() {
		t.Error("a host whose pages changed just before each look was distrusted for its Last-Modified")
	}
	if lying.trustLM() {
		t.Error("a host that dates an unchanged page at each response is still trusted")
	}
}

// A 304 is the version held by the server's own word: one that carries a
// Last-Modified at the response's time lies as a 200 of the same text
// would. On a host whose pages change faster than they are looked at,
// every 200 is another version, so its 304s are the only looks that tell.
func TestLastModifiedDistrustedOnANotModified(t *testing.T) {
	at := time.Date(2026, 11, 29, 10, 0, 0, 500_000_000, time.UTC)
	held := webevents.Event{Fingerprint: fingerprint.Format(0xf0f0), ETag: `"v1"`}
	changed := &Result{Status: 200, Start: at, LastModified: at.Truncate(time.Second), Fingerprint: 0x0f0f_0000, HasFingerprint: true, ETag: `"v2"`}
	var lying, honest, silent hostValidators
	for range 10 {
		lying.observe(changed, &held, fingerprint.Near)
		lying.observe(&Result{Status: 304, Start: at, LastModified: at.Truncate(time.Second), ETag: `"v1"`}, &held, fingerprint.Near)
		honest.observe(changed, &held, fingerprint.Near)
		honest.observe(&Result{Status: 304, Start: at, LastModified: at.Add(-time.Hour), ETag: `"v1"`}, &held, fingerprint.Near)
		silent.observe(&Result{Status: 304, Start: at}, &held, fingerprint.Near) // RFC 9110 lets a 304 leave the date out
	}
	if lying.trustLM() {
		t.Error("a host whose 304s are dated at the response is still trusted for its Last-Modified")
	}
	if !honest.trustLM() || !silent.trustLM() {
		t.Error("a host whose 304s carry an older date, or none, was distrusted")
	}
	if !lying.trustETag() || !honest.trustETag() {
		t.Error("a 304 counted against the host's ETags")
	}
}

// End to end, the crawler counts the hosts it distrusts (Stats): on a web
// of one host per kind, the host dating every response now and the host
// whose weak ETag changes at every response; and, on a second web, hosts
// dating every response now that answer If-None-Match with 304s, whose
// only looks at an unchanged page are those 304s: they are found out in
// about 24 polls (200 to 280 when only 200s counted, the second reads of
// noise learning).
func TestCrawlerCountsHostsDistrustedForValidators(t *testing.T) {
	kinds := runWeb(t, testweb.Config{Hosts: 3, PagesPerHost: 5, CrossLinks: -1, Seed: 3,
		Kinds: []testweb.PageKind{testweb.Static, testweb.LastModifiedNow, testweb.WeakETagPerResponse}})
	notModified := runWeb(t, testweb.Config{Hosts: 2, PagesPerHost: 5, CrossLinks: -1, Seed: 4, LastModifiedNow: true})
	const within = 100 // polls
	for _, tc := range []struct {
		name     string
		w        *testweb.Web
		lm, etag int64
	}{{"kinds", kinds, 1, 1}, {"304s", notModified, 2, 0}} {
		c := startCrawler(t, testConfig(tc.w), webevents.NewMemStore(), &MemFrontier{})
		deadline := time.Now().Add(20 * time.Second)
		var s Stats
		for time.Now().Before(deadline) {
			time.Sleep(20 * time.Millisecond)
			if s = c.Stats(); s.DistrustedLM == tc.lm && s.DistrustedETag == tc.etag || s.Polls > within {
				break
			}
		}
		if s.DistrustedLM != tc.lm || s.DistrustedETag != tc.etag {
			t.Errorf("%s: %d hosts distrusted for Last-Modified and %d for ETags after %d polls, want %d and %d within %d",
				tc.name, s.DistrustedLM, s.DistrustedETag, s.Polls, tc.lm, tc.etag, within)
		}
	}
}
