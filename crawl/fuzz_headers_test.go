package crawl

import (
	"net/http"
	"testing"
	"time"

	"golang.org/x/net/http/httpguts"

	"github.com/cocrawl/cocrawl/webevents"
)

// FuzzHeadersToEvent: whatever headers a site sends, the event a poll
// makes of them is one the store takes, and the validators kept for the
// next request are ones an HTTP request can carry (issue 18, item 8).
func FuzzHeadersToEvent(f *testing.F) {
	f.Add("\"a\tb\"", "Mon, 02 Jan 2006 15:04:05 GMT", int64(10), true)
	f.Add("\"x\"", "yesterday", int64(1)<<62, false)
	f.Add("", "", int64(-1), true)
	f.Fuzz(func(t *testing.T, etag, lastMod string, length int64, head bool) {
		h := http.Header{}
		h.Set("ETag", etag)
		h.Set("Last-Modified", lastMod)
		h.Set("Content-Type", "text/plain")
		r := Result{Status: 200, End: time.Unix(1_800_000_000, 0)}
		readHeaders(h, &r)
		if head {
			r.Size = headSize(length)
		} else {
			r.Size, r.Digest = min(max(length, 0), webevents.MaxSize), "sha256:00"
		}
		for _, v := range []string{r.ETag, r.LastModRaw} {
			if !httpguts.ValidHeaderFieldValue(v) {
				t.Fatalf("a validator no request can carry: %q", v)
			}
		}
		prev := &webevents.Event{URL: "http://a.example/", CID: "c", Stat: webevents.Create, LMD: 1_700_000_000, LPD: 1_700_000_000, Size: 5, ETag: `"old"`}
		for _, p := range []*webevents.Event{nil, prev} {
			if ev, changed := Detect("http://a.example/", p, &r, r.End, "c:1 C"); changed {
				if err := ev.Validate(); err != nil {
					t.Fatalf("headers %q %q %d made an event the store refuses: %v", etag, lastMod, length, err)
				}
			}
		}
	})
}
