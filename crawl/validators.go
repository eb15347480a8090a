package crawl

import (
	"time"

	"github.com/cocrawl/cocrawl/crawl/fingerprint"
	"github.com/cocrawl/cocrawl/webevents"
)

// hostValidators learns whether a host's validators say anything. Many
// dynamic sites send the time of the response as Last-Modified, or an
// ETag that differs on every response while the page does not: read as
// they are, the first makes every poll an UPDATE dated now and every page
// look to the change-rate estimator as if it changed just before each
// look; the second makes every conditional request a full download and
// every record's etag useless to a peer's spot-check. While a host is
// seen doing so (in three looks, and most of the looks that tell; counted
// for this run) it is not trusted there: its pages are judged by their
// fingerprint, its records carry no such validator, and its change rates
// learn from the changes the fingerprints see.
type hostValidators struct {
	lmSeen, lmNow         int // looks at the version held with a Last-Modified; of them, dated at the response
	etagCompared, etagLie int // ETags compared with the version held; of them, changed with the text the same
}

// minValidatorVerdict is how many looks decide that a validator lies.
const minValidatorVerdict = 3

func (v *hostValidators) trustLM() bool {
	return !(v.lmNow >= minValidatorVerdict && 2*v.lmNow > v.lmSeen)
}

func (v *hostValidators) trustETag() bool {
	return !(v.etagLie >= minValidatorVerdict && 2*v.etagLie > v.etagCompared)
}

// observe notes what one 200 or 304 showed of the host's validators;
// near is how far two records' fingerprints may be on this host and be
// one version.
//
// A 304 is the version held, by the server's own word (it matched the
// ETag or date sent), so a Last-Modified it carries at the response's
// time is the lie too. Counting only 200s, a host that answers
// If-None-Match but dates every response now was never caught where its
// pages change faster than they are looked at: every 200 is another
// version, and the looks that find the same one are all 304s. Read as
// true, its dates made every change look a moment old and the
// change-rate estimates 13 times too high (docs/performance.md).
func (v *hostValidators) observe(res *Result, prev *webevents.Event, near int) {
	if prev == nil {
		return
	}
	var sameText bool
	switch {
	case res.Status == 304:
		sameText = true
	case res.Status == 200 && res.HasFingerprint:
		held, ok := fingerprint.Parse(prev.Fingerprint)
		if !ok {
			return
		}
		sameText = fingerprint.Distance(held, res.Fingerprint) <= near
	default:
		return
	}
	if !res.LastModified.IsZero() && sameText {
		// Only a look that found the version held tells: a page that
		// changed a second ago has a Last-Modified a second old, truly (on
		// a page that changes every few seconds, half the looks), and a
		// host distrusted for it has its events dated by each peer's own
		// clock, which other peers' spot-checks refute against the true
		// date.
		v.lmSeen++
		// HTTP dates have whole seconds: a date within the second before
		// the request or later is the response's own time.
		if !res.LastModified.Before(res.Start.Truncate(time.Second).Add(-time.Second)) {
			v.lmNow++
		}
	}
	if res.Status != 200 || prev.ETag == "" || res.ETag == "" {
		return // a 304's ETag matched the one sent
	}
	v.etagCompared++
	if res.ETag != prev.ETag && sameText {
		v.etagLie++
	}
}

// trusted is res without the validators the host is not trusted for.
func (v *hostValidators) trusted(res *Result) *Result {
	lm, etag := v.trustLM(), v.trustETag()
	if lm && etag {
		return res
	}
	r := *res
	if !lm {
		r.LastModified, r.LastModRaw = time.Time{}, ""
	}
	if !etag {
		r.ETag = ""
	}
	return &r
}

// trustTurned is what a change of trust, from before to after, adds to a
// count of hosts distrusted.
func trustTurned(before, after bool) int64 {
	switch {
	case before && !after:
		return 1
	case !before && after:
		return -1 // a majority of honest looks since
	}
	return 0
}
