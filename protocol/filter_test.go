package protocol

import (
	"bytes"
	"compress/gzip"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"strings"
	"testing"
	"time"

	"github.com/cocrawl/cocrawl/webevents"
	"github.com/cocrawl/cocrawl/webevents/storetest"
)

// wholeDayOnly hides a store's origin index: the server filters by reading
// the whole day, as for a day begun before the index.
type wholeDayOnly struct{ ShareStore }

// filterEvents makes n events on day over four sites, site0 having most,
// with paths under /a/ and /b/, and records of about 200 bytes, so that a
// site's filtered file spans several of the server's read chunks.
func filterEvents(day int64, n, from int) []webevents.Event {
	evs := make([]webevents.Event, n)
	for i := range evs {
		k := from + i
		lpd := webevents.DayStart(day) + int64(k)%80000
		site := k % 7
		if site > 3 {
			site = 0
		}
		dir := "a"
		if k%3 == 0 {
			dir = "b"
		}
		evs[i] = webevents.Event{
			URL: fmt.Sprintf("http://site%d.example/%s/%d?%s", site, dir, k, strings.Repeat("x", 60)), Size: int64(500 + k),
			LMD: lpd - 3600, LPD: lpd, CID: "sharer.example:8080 cocrawl/1.1", Stat: webevents.Create,
		}
	}
	return evs
}

func datOf(evs []webevents.Event, pass func(string) bool) []byte {
	var b bytes.Buffer
	w := NewDatWriter(&b)
	for i := range evs {
		if pass(evs[i].URL) {
			w.Write(&evs[i])
		}
	}
	w.Flush()
	return b.Bytes()
}

// A filtered day file is the day file's records that pass the prefix, with
// offsets, entity tag, ranges and gzip of its own, and the same bytes
// whether the store's origin index serves it, one origin's records are
// read for a path, or the whole day is read.
func TestFilteredDayFile(t *testing.T) {
	const day = 19700
	evs := filterEvents(day, 6000, 0)
	more := filterEvents(day, 300, 6000)
	stores := map[string]func(t *testing.T) ShareStore{
		"badger":         func(t *testing.T) ShareStore { return storetest.OpenBadger(t) },
		"memory":         func(*testing.T) ShareStore { return webevents.NewMemStore() },
		"whole day only": func(*testing.T) ShareStore { return wholeDayOnly{webevents.NewMemStore()} },
	}
	for name, open := range stores {
		t.Run(name, func(t *testing.T) {
			st := open(t)
			type recorder interface{ Record([]webevents.Event) error }
			var rec recorder
			if inner, ok := st.(wholeDayOnly); ok {
				rec = inner.ShareStore.(recorder)
			} else {
				rec = st.(recorder)
			}
			if err := rec.Record(evs); err != nil {
				t.Fatal(err)
			}
			_, ts := newTestServer(t, st)
			base := fmt.Sprintf("%s/share/%d.dat", ts.URL, day)
			_, whole := get(t, base)
			wholeTag := ""
			tags := map[string]string{}
			for _, prefix := range []string{"http://site0.example/", "HTTP://Site0.EXAMPLE", "http://site0.example/b/", "http://site2.example/a/1", "http://site9.example/"} {
				f, err := NewDayFilter(prefix)
				if err != nil {
					t.Fatal(err)
				}
				u := base + "?prefix=" + url.QueryEscape(prefix)
				want := datOf(evs, f.Match)
				resp, body := get(t, u)
				if resp.StatusCode != 200 || !bytes.Equal(body, want) {
					t.Fatalf("%s: %d, %d bytes, want %d", prefix, resp.StatusCode, len(body), len(want))
				}
				if got := resp.Header.Get(FilterHeader); got != f.Query() {
					t.Errorf("%s: %s %q, want %q", prefix, FilterHeader, got, f.Query())
				}
				etag := resp.Header.Get("ETag")
				if wholeTag == "" {
					r, _ := get(t, base)
					wholeTag = r.Header.Get("ETag")
				}
				if etag == wholeTag || tags[etag] != "" {
					t.Errorf("%s: ETag %s is also the whole file's or %q's", prefix, etag, tags[etag])
				}
				tags[etag] = prefix
				if len(want) == 0 {
					continue
				}
				if len(want) >= len(whole) {
					t.Errorf("%s: %d of the day's %d bytes; the test wants a part", prefix, len(want), len(whole))
				}
				if r, _ := get(t, u, "If-None-Match", etag); r.StatusCode != http.StatusNotModified {
					t.Errorf("%s: If-None-Match: %d", prefix, r.StatusCode)
				}
				// A range from a record boundary in the filtered file.
				cut := int64(bytes.Index(want[len(want)/3:], []byte("\n\nurl: ")) + len(want)/3 + 2)
				r, part := get(t, u, "Range", fmt.Sprintf("bytes=%d-", cut))
				if r.StatusCode != http.StatusPartialContent || !bytes.Equal(part, want[cut:]) {
					t.Errorf("%s: Range from %d: %d, %d bytes, want %d", prefix, cut, r.StatusCode, len(part), len(want)-int(cut))
				}
				if r, _ := get(t, u, "Range", fmt.Sprintf("bytes=%d-", len(want))); r.StatusCode != http.StatusRequestedRangeNotSatisfiable {
					t.Errorf("%s: Range at the end: %d", prefix, r.StatusCode)
				}
				r, zipped := get(t, u, "Accept-Encoding", "gzip")
				zr, err := gzip.NewReader(bytes.NewReader(zipped))
				if err != nil || r.Header.Get("Content-Encoding") != "gzip" {
					t.Fatalf("%s: gzip: %v %q", prefix, err, r.Header.Get("Content-Encoding"))
				}
				if plain, _ := io.ReadAll(zr); !bytes.Equal(plain, want) {
					t.Errorf("%s: gzip body differs", prefix)
				}
			}
			// An empty filtered file of a day that exists; no file for a
			// day that does not.
			if r, body := get(t, base+"?prefix="+url.QueryEscape("http://site9.example/")); r.StatusCode != 200 || len(body) != 0 {
				t.Errorf("no record of the prefix: %d, %d bytes", r.StatusCode, len(body))
			}
			if r, _ := get(t, fmt.Sprintf("%s/share/%d.dat?prefix=%s", ts.URL, day+1, url.QueryEscape("http://site0.example/"))); r.StatusCode != 404 {
				t.Errorf("filtered day without a file: %d", r.StatusCode)
			}
			for _, q := range []string{"prefix=site0.example", "prefix=ftp%3A%2F%2Fsite0.example%2F", "prefix=http%3A%2F%2F", "prefix=http%3A%2F%2Fa%2F&prefix=http%3A%2F%2Fb%2F"} {
				if r, _ := get(t, base+"?"+q); r.StatusCode != http.StatusBadRequest {
					t.Errorf("?%s: %d, want 400", q, r.StatusCode)
				}
			}
			// Appending keeps a filtered file's bytes: it only grows.
			u := base + "?prefix=" + url.QueryEscape("http://site0.example/b/")
			_, before := get(t, u)
			if err := rec.Record(more); err != nil {
				t.Fatal(err)
			}
			_, after := get(t, u)
			f, _ := NewDayFilter("http://site0.example/b/")
			if !bytes.HasPrefix(after, before) || !bytes.Equal(after, datOf(append(append([]webevents.Event{}, evs...), more...), f.Match)) {
				t.Errorf("after an append: %d bytes, %d before; not the old bytes and the new records", len(after), len(before))
			}
			bs, ok := st.(*webevents.BadgerStore)
			if !ok {
				return
			}
			// The index caught up with part of the day: a request reads
			// what it holds and the day log past it, with the same bytes,
			// and makes it run no pass.
			if _, _, err := bs.OriginDayInfo(day, "http://site0.example"); err != nil {
				t.Fatal(err)
			}
			last := filterEvents(day, 200, 6300)
			if err := rec.Record(last); err != nil {
				t.Fatal(err)
			}
			all := append(append(append([]webevents.Event{}, evs...), more...), last...)
			catchUps := bs.IndexCatchUps()
			for _, prefix := range []string{"http://site0.example/", "http://site0.example/b/"} {
				f, _ := NewDayFilter(prefix)
				u := base + "?prefix=" + url.QueryEscape(prefix)
				want := datOf(all, f.Match)
				if r, body := get(t, u); r.StatusCode != 200 || !bytes.Equal(body, want) {
					t.Errorf("%s, half indexed: %d, %d bytes, want %d", prefix, r.StatusCode, len(body), len(want))
				}
				cut := int64(bytes.Index(want[len(want)/3:], []byte("\n\nurl: ")) + len(want)/3 + 2)
				if r, part := get(t, u, "Range", fmt.Sprintf("bytes=%d-", cut)); r.StatusCode != http.StatusPartialContent || !bytes.Equal(part, want[cut:]) {
					t.Errorf("%s, half indexed: Range from %d: %d, %d bytes, want %d", prefix, cut, r.StatusCode, len(part), len(want)-int(cut))
				}
			}
			if n := bs.IndexCatchUps() - catchUps; n != 0 {
				t.Errorf("filtered requests ran %d passes of the origin index", n)
			}
		})
	}
}

// A filtered change list index links the filtered pages, whose entries
// are the prefix's alone.
func TestFilteredChangeList(t *testing.T) {
	st := storetest.OpenBadger(t)
	day := webevents.DayOf(time.Now().Unix())
	evs := filterEvents(day, 2000, 0)
	for i := range evs { // today's records: lpds up to now
		evs[i].LPD = min(evs[i].LPD, time.Now().Unix())
		evs[i].LMD = evs[i].LPD - 60
	}
	if err := st.Record(evs); err != nil {
		t.Fatal(err)
	}
	_, ts := newTestServer(t, st)
	q := "?prefix=" + url.QueryEscape("http://site1.example/")
	r, index := get(t, ts.URL+"/resourcesync/changelist.xml"+q)
	if r.StatusCode != 200 || r.Header.Get(FilterHeader) == "" {
		t.Fatalf("filtered index: %d %q", r.StatusCode, r.Header.Get(FilterHeader))
	}
	page := fmt.Sprintf("/resourcesync/changelist/%d-0.xml%s", day, q)
	if !strings.Contains(string(index), escape(ts.URL+page)) {
		t.Fatalf("filtered index does not link %s:\n%s", page, index)
	}
	_, list := get(t, ts.URL+page)
	n := strings.Count(string(list), "<url>")
	want := 0
	for _, e := range evs {
		if strings.HasPrefix(e.URL, "http://site1.example/") {
			want++
		}
	}
	if n != want || strings.Contains(string(list), "site0.example") || !strings.Contains(string(list), escape(ts.URL+"/resourcesync/changelist.xml"+q)) {
		t.Errorf("filtered page: %d entries, want %d; or another site's, or an index link without the query", n, want)
	}
}
