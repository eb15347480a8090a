package crawl

import (
	"errors"
	"testing"
	"time"

	"github.com/cocrawl/cocrawl/webevents"
)

func TestDetect(t *testing.T) {
	now := time.Unix(1_700_000_000, 0)
	lm := now.Add(-time.Hour)
	prev := &webevents.Event{URL: "http://a.example/", Size: 10, LMD: lm.Add(-time.Hour).Unix(), LPD: 1, CID: "x", Stat: webevents.Create, Digest: "sha256:aa", ETag: `"1"`}
	deleted := *prev
	deleted.Stat = webevents.Delete
	for _, tt := range []struct {
		name  string
		prev  *webevents.Event
		res   Result
		event bool
		stat  webevents.Stat
		lmd   int64
	}{
		{"first fetch is a create", nil, Result{Status: 200, LastModified: lm}, true, webevents.Create, lm.Unix()},
		{"create without Last-Modified dates now", nil, Result{Status: 200}, true, webevents.Create, now.Unix()},
		{"fetch after a delete is a create", &deleted, Result{Status: 200, LastModified: lm}, true, webevents.Create, lm.Unix()},
		{"advancing Last-Modified is an update", prev, Result{Status: 200, LastModified: lm}, true, webevents.Update, lm.Unix()},
		{"same Last-Modified is no change", prev, Result{Status: 200, LastModified: time.Unix(prev.LMD, 0), Digest: "sha256:bb"}, false, 0, 0},
		{"no Last-Modified, new digest", prev, Result{Status: 200, Digest: "sha256:bb"}, true, webevents.Update, now.Unix()},
		{"no Last-Modified, same digest", prev, Result{Status: 200, Digest: "sha256:aa"}, false, 0, 0},
		{"Last-Modified before 1993 is ignored: digest decides", prev, Result{Status: 200, LastModified: time.Unix(100, 0), Digest: "sha256:aa"}, false, 0, 0},
		{"Last-Modified far ahead is ignored", prev, Result{Status: 200, LastModified: now.Add(48 * time.Hour), Digest: "sha256:cc"}, true, webevents.Update, now.Unix()},
		{"small skew is clamped to now", prev, Result{Status: 200, LastModified: now.Add(time.Hour)}, true, webevents.Update, now.Unix()},
		{"HEAD: new ETag", prev, Result{Status: 200, ETag: `"2"`}, true, webevents.Update, now.Unix()},
		{"304 is no change", prev, Result{Status: 304}, false, 0, 0},
		{"404 deletes", prev, Result{Status: 404}, true, webevents.Delete, now.Unix()},
		{"410 deletes", prev, Result{Status: 410}, true, webevents.Delete, now.Unix()},
		{"404 of an unknown URL is nothing", nil, Result{Status: 404}, false, 0, 0},
		{"404 of a deleted URL is nothing", &deleted, Result{Status: 404}, false, 0, 0},
		{"5xx is not a delete", prev, Result{Status: 503}, false, 0, 0},
		{"429 is not a delete", prev, Result{Status: 429}, false, 0, 0},
		{"timeout is not a delete", prev, Result{Err: errors.New("timeout")}, false, 0, 0},
	} {
		t.Run(tt.name, func(t *testing.T) {
			e, ok := Detect("http://a.example/", tt.prev, &tt.res, now, "me:0 M")
			if ok != tt.event || ok && (e.URL != "http://a.example/" || e.Stat != tt.stat || e.LMD != tt.lmd || e.LPD != now.Unix() || e.CID != "me:0 M") {
				t.Fatalf("got %v %+v; want event=%v %v lmd %d", ok, e, tt.event, tt.stat, tt.lmd)
			}
		})
	}
}
