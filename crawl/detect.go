package crawl

import (
	"net/http"
	"time"

	"github.com/cocrawl/cocrawl/crawl/fingerprint"
	"github.com/cocrawl/cocrawl/webevents"
)

// Detect turns one poll into a web-event, given the current state of the
// URL in the store (nil if unknown). It follows algorithm 5.2 of the thesis
// with the crawler-practice rules of the issue:
//
//   - CREATE on the first successful fetch (or the first after a DELETE);
//   - UPDATE when the sane Last-Modified advances; without a usable
//     Last-Modified, when the content digest changes (or, for a HEAD, the
//     ETag or the size); a 304 is no change;
//   - DELETE on 404 or 410 of a URL held as live; a transient error, a
//     timeout, a 5xx or a 429 is not a delete.
//
// Dates pass Castillo's sanity rules (webevents.SaneDate): a Last-Modified
// before 1993 or more than a day ahead is ignored, a small skew is clamped.
func Detect(rawURL string, prev *webevents.Event, r *Result, now time.Time, cid string) (webevents.Event, bool) {
	n := now.Unix()
	e := webevents.Event{URL: rawURL, Size: max(r.Size, 0), LPD: n, CID: cid, Digest: r.Digest, ETag: r.ETag}
	if r.HasFingerprint {
		e.Fingerprint = fingerprint.Format(r.Fingerprint)
	}
	if r.Err != nil {
		return e, false
	}
	lm, lmOK := int64(0), false
	if !r.LastModified.IsZero() {
		if t, err := webevents.SaneDate(r.LastModified.Unix(), n); err == nil {
			lm, lmOK = t, true
		}
	}
	switch r.Status {
	case http.StatusOK:
	case http.StatusNotFound, http.StatusGone:
		if prev == nil || prev.Stat == webevents.Delete {
			return e, false
		}
		e.Stat, e.LMD, e.Size, e.Digest, e.ETag = webevents.Delete, n, prev.Size, "", ""
		return e, true
	default:
		return e, false
	}
	e.LMD = n
	if lmOK {
		e.LMD = lm
	}
	if prev == nil || prev.Stat == webevents.Delete {
		e.Stat = webevents.Create
		return e, true
	}
	e.Stat = webevents.Update
	if held, ok := fingerprint.Parse(prev.Fingerprint); ok && r.HasFingerprint {
		// Both sides have the page's text: that decides, not its bytes or
		// its validators, which change with template noise (a time, a
		// token, a rotating box; a Last-Modified or an ETag per response).
		// This crawler's own looks compare without the host's noise
		// (noise.go); a record another peer gave, or a look made before
		// the noise was learnt, allows for it.
		same := fingerprint.Distance(held, r.Fingerprint) <= max(fingerprint.Near, r.WireNear)
		if r.HasLocal && r.HasHeldLocal {
			same = fingerprint.Distance(r.HeldLocal, r.Local) <= max(fingerprint.Near, r.LocalNear)
		}
		if same {
			return e, false
		}
		if !lmOK || lm <= prev.LMD {
			e.LMD = n
		}
		return e, true
	}
	if prev.From != "" {
		// The state held was merged from a peer: this poll is the truth
		// to check it against, and a page that differs from the claim is
		// an event even when the claim's lmd is later.
		switch {
		case lmOK && lm != prev.LMD:
			return e, true
		case r.ETag != "" && prev.ETag != "" && r.ETag != prev.ETag:
			return e, true
		}
	}
	if lmOK {
		return e, lm > prev.LMD
	}
	// No usable Last-Modified: compare what the poll could see. The
	// detection time is the best date of the change we can give.
	switch {
	case r.Digest != "" && prev.Digest != "":
		return e, r.Digest != prev.Digest
	case r.ETag != "" && prev.ETag != "":
		return e, r.ETag != prev.ETag
	}
	return e, r.Size != prev.Size
}
