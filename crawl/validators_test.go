package crawl

import (
	"testing"
	"time"

	"github.com/cocrawl/cocrawl/crawl/fingerprint"
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
