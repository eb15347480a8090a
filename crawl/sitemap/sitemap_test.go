package sitemap

import (
	"bytes"
	"compress/gzip"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

func readAll(t *testing.T, doc []byte, lim Limits) (Kind, []Entry, error) {
	t.Helper()
	var got []Entry
	k, err := Read(bytes.NewReader(doc), lim, func(e Entry) error { got = append(got, e); return nil })
	return k, got, err
}

const urlset = `<?xml version="1.0" encoding="UTF-8"?>
<urlset xmlns="http://www.sitemaps.org/schemas/sitemap/0.9" xmlns:image="http://www.google.com/schemas/sitemap-image/1.1"
        xmlns:rs="http://www.openarchives.org/rs/terms/">
  <url><loc> https://example.org/a </loc><lastmod>2026-11-20</lastmod><changefreq>daily</changefreq></url>
  <url><loc>https://example.org/b?x=1&amp;y=2</loc><lastmod>2026-11-21T10:30:00+02:00</lastmod>
       <image:image><image:loc>https://example.org/img.png</image:loc></image:image></url>
  <url><loc>https://example.org/c</loc><lastmod>yesterday</lastmod><rs:md change="updated"/></url>
  <url><lastmod>2026-01-01</lastmod></url>
</urlset>`

func TestReadURLSet(t *testing.T) {
	k, got, err := readAll(t, []byte(urlset), Limits{})
	if err != nil || k != URLSet {
		t.Fatalf("kind %v, err %v", k, err)
	}
	want := []Entry{
		{Loc: "https://example.org/a", LastMod: time.Date(2026, 11, 20, 0, 0, 0, 0, time.UTC), Precision: 24 * time.Hour},
		{Loc: "https://example.org/b?x=1&y=2", LastMod: time.Date(2026, 11, 21, 8, 30, 0, 0, time.UTC), Precision: time.Second},
		{Loc: "https://example.org/c", Change: "updated"},
	}
	if len(got) != len(want) {
		t.Fatalf("got %+v", got)
	}
	for i := range want {
		if got[i].Loc != want[i].Loc || !got[i].LastMod.Equal(want[i].LastMod) || got[i].Precision != want[i].Precision || got[i].Change != want[i].Change {
			t.Errorf("entry %d: %+v, want %+v", i, got[i], want[i])
		}
	}
}

func TestReadIndexAndGzip(t *testing.T) {
	index := `<sitemapindex xmlns="http://www.sitemaps.org/schemas/sitemap/0.9">
<sitemap><loc>https://example.org/s1.xml.gz</loc><lastmod>2026-11-22T00:00:00Z</lastmod></sitemap>
<sitemap><loc>https://example.org/s2.xml</loc></sitemap></sitemapindex>`
	var gz bytes.Buffer
	zw := gzip.NewWriter(&gz)
	zw.Write([]byte(index))
	zw.Close()
	k, got, err := readAll(t, gz.Bytes(), Limits{})
	if err != nil || k != SitemapIndex || len(got) != 2 || got[1].Loc != "https://example.org/s2.xml" {
		t.Fatalf("kind %v, %+v, err %v", k, got, err)
	}
}

// Limits: entries, bytes (after gzip: a bomb stops at the limit), a <loc>
// too long, and what is no sitemap at all.
func TestReadLimits(t *testing.T) {
	var b strings.Builder
	b.WriteString(`<urlset xmlns="http://www.sitemaps.org/schemas/sitemap/0.9">`)
	for i := range 100 {
		fmt.Fprintf(&b, "<url><loc>https://example.org/%d</loc></url>", i)
	}
	b.WriteString("</urlset>")
	if _, got, err := readAll(t, []byte(b.String()), Limits{MaxEntries: 10}); !errors.Is(err, ErrTooMany) || len(got) != 10 {
		t.Errorf("entry limit: %d entries, %v", len(got), err)
	}
	var gz bytes.Buffer
	zw := gzip.NewWriter(&gz)
	zw.Write([]byte(`<urlset><url><loc>https://example.org/</loc></url>` + strings.Repeat("<!-- padding -->", 1<<20)))
	zw.Close()
	if gz.Len() > 200<<10 {
		t.Fatalf("the bomb is %d bytes compressed", gz.Len())
	}
	if _, got, err := readAll(t, gz.Bytes(), Limits{MaxBytes: 1 << 20}); !errors.Is(err, ErrTooLarge) || len(got) != 1 {
		t.Errorf("byte limit after gzip: %d entries, %v", len(got), err)
	}
	long := `<urlset><url><loc>https://example.org/` + strings.Repeat("x", 9000) + `</loc></url><url><loc>https://example.org/ok</loc></url></urlset>`
	if _, got, err := readAll(t, []byte(long), Limits{}); err != nil || len(got) != 1 || got[0].Loc != "https://example.org/ok" {
		t.Errorf("a long <loc>: %+v, %v", got, err)
	}
	for _, doc := range []string{"<html><body>not found</body></html>", "", "just text"} {
		if _, _, err := readAll(t, []byte(doc), Limits{}); !errors.Is(err, ErrNotSitemap) {
			t.Errorf("%q: %v, want ErrNotSitemap", doc, err)
		}
	}
	if _, _, err := readAll(t, []byte("<urlset><url><loc>x</url>"), Limits{}); !errors.Is(err, ErrSitemap) {
		t.Errorf("broken XML: %v", err)
	}
}

func TestParseW3CDate(t *testing.T) {
	for in, want := range map[string]time.Time{
		"2026":                        time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC),
		"2026-11":                     time.Date(2026, 11, 1, 0, 0, 0, 0, time.UTC),
		"2026-11-23T01:02Z":           time.Date(2026, 11, 23, 1, 2, 0, 0, time.UTC),
		"2026-11-23T01:02:03.5-01:00": time.Date(2026, 11, 23, 2, 2, 3, 5e8, time.UTC),
	} {
		if got, err := ParseW3CDate(in); err != nil || !got.Equal(want) {
			t.Errorf("%s: %v %v", in, got, err)
		}
	}
	if _, err := ParseW3CDate("23/11/2026"); err == nil {
		t.Error("a date in another format was read")
	}
}

// Real sitemaps, as generators write them (testdata: Hugo's and MkDocs's
// output for small sites, see testdata/README).
func TestReadRealSitemaps(t *testing.T) {
	files, _ := filepath.Glob("testdata/real/*")
	n := 0
	for _, f := range files {
		if strings.HasSuffix(f, "README") {
			continue
		}
		doc, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		k, got, err := readAll(t, doc, Limits{})
		if err != nil || len(got) == 0 {
			t.Errorf("%s: kind %v, %d entries, %v", f, k, len(got), err)
			continue
		}
		dated := 0
		for _, e := range got {
			if !strings.HasPrefix(e.Loc, "http") {
				t.Errorf("%s: loc %q", f, e.Loc)
			}
			if !e.LastMod.IsZero() {
				dated++
			}
		}
		t.Logf("%s: kind %v, %d entries, %d with lastmod", filepath.Base(f), k, len(got), dated)
		n++
	}
	if n < 2 {
		t.Fatalf("%d real sitemaps in testdata/real", n)
	}
}

func FuzzRead(f *testing.F) {
	f.Add([]byte(urlset))
	f.Add([]byte(`<sitemapindex><sitemap><loc>https://a/</loc></sitemap></sitemapindex>`))
	f.Add([]byte{0x1f, 0x8b, 0, 0})
	f.Fuzz(func(t *testing.T, doc []byte) {
		n := 0
		_, err := Read(bytes.NewReader(doc), Limits{MaxEntries: 100, MaxBytes: 1 << 16, MaxLoc: 256}, func(e Entry) error {
			if e.Loc == "" || len(e.Loc) > 256 {
				t.Fatalf("entry %+v", e)
			}
			n++
			return nil
		})
		if n > 100 {
			t.Fatalf("%d entries past the limit", n)
		}
		if err != nil && !errors.Is(err, ErrSitemap) {
			t.Fatalf("an error that is not ErrSitemap: %v", err)
		}
	})
}

// ResourceSync documents are sitemaps: the document's capability, each
// entry's capability or change, and rs:md datetime as the date.
func TestReadResourceSync(t *testing.T) {
	cl := `<urlset xmlns="http://www.sitemaps.org/schemas/sitemap/0.9" xmlns:rs="http://www.openarchives.org/rs/terms/">
  <rs:ln rel="up" href="https://example.org/capabilitylist.xml"/>
  <rs:md capability="changelist" from="2026-11-22T00:00:00Z"/>
  <url><loc>https://example.org/a</loc><rs:md change="created" datetime="2026-11-22T10:00:00Z" length="12" hash="sha-256:9f86d081884c7d659a2feaa0c55ad015a3bf4f1b2b0b822cd15d6c15b0f00a08"/></url>
  <url><loc>https://example.org/b</loc><rs:md change="deleted" datetime="2026-11-22T11:00:00Z"/></url>
</urlset>`
	var got []Entry
	doc, err := ReadDoc(strings.NewReader(cl), Limits{}, func(e Entry) error { got = append(got, e); return nil })
	if err != nil || doc.Kind != URLSet || doc.Capability != "changelist" || len(got) != 2 {
		t.Fatalf("doc %+v, %+v, %v", doc, got, err)
	}
	if got[0].Change != "created" || !got[0].LastMod.Equal(time.Date(2026, 11, 22, 10, 0, 0, 0, time.UTC)) || got[1].Change != "deleted" ||
		got[0].Length != 12 || got[0].Hash != "sha-256:9f86d081884c7d659a2feaa0c55ad015a3bf4f1b2b0b822cd15d6c15b0f00a08" || got[1].Length != 0 {
		t.Errorf("entries %+v", got)
	}
	caps := `<urlset xmlns="http://www.sitemaps.org/schemas/sitemap/0.9" xmlns:rs="http://www.openarchives.org/rs/terms/">
  <rs:md capability="description"/><url><loc>https://example.org/caps.xml</loc><rs:md capability="capabilitylist"/></url></urlset>`
	got = nil
	doc, err = ReadDoc(strings.NewReader(caps), Limits{}, func(e Entry) error { got = append(got, e); return nil })
	if err != nil || doc.Capability != "description" || len(got) != 1 || got[0].Capability != "capabilitylist" {
		t.Fatalf("description %+v, %+v, %v", doc, got, err)
	}
}
