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
