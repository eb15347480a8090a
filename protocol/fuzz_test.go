package protocol

import (
	"bytes"
	"io"
	"maps"
	"net/url"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/cocrawl/cocrawl/webevents"
)

// FuzzDatReader checks that no input makes the decoder panic, loop, or
// return a record that fails validation or does not survive re-encoding.
func FuzzDatReader(f *testing.F) {
	files, _ := filepath.Glob("../spec/testdata/dat/*.dat")
	files = append(files, "../spec/testdata/thesis-example.dat")
	for _, p := range files {
		b, _ := os.ReadFile(p)
		f.Add(b)
	}
	// Crashers and near-misses kept as rows.
	f.Add([]byte("url:\n\n\n"))
	f.Add([]byte(":\n"))
	f.Add([]byte("url: http://a/\nsize: 0\nlmd: 725846400\nlpd: 725846400\ncid: c\nstat: D"))
	f.Fuzz(func(t *testing.T, data []byte) {
		d := NewDatReader(bytes.NewReader(data), DatOptions{
			Limits: Limits{MaxLineBytes: 256, MaxRecords: 1000},
			Now:    func() time.Time { return vectorNow },
		})
		for i := 0; ; i++ {
			if i > len(data)+1 {
				t.Fatal("decoder returned more results than input bytes")
			}
			e, err := d.Next()
			if err == io.EOF {
				return
			}
			if err != nil {
				if IsRecordError(err) {
					continue
				}
				return
			}
			if verr := e.Validate(); verr != nil {
				t.Fatalf("decoded an invalid event: %v", verr)
			}
			if d.Offset() > int64(len(data)) {
				t.Fatalf("offset %d past input %d", d.Offset(), len(data))
			}
			// Re-encoding and decoding gives the same event.
			again, _, err := decodeAll(t, bytes.NewReader(webevents.AppendRecord(nil, &e)), DatOptions{Now: func() time.Time { return vectorNow }})
			if err != nil || len(again) != 1 || again[0] != e {
				t.Fatalf("re-encode of %+v gave %+v %v", e, again, err)
			}
		}
	})
}

func FuzzShareControl(f *testing.F) {
	files, _ := filepath.Glob("../spec/testdata/shr/*.shr")
	files = append(files, "../spec/testdata/thesis-robots.shr")
	for _, p := range files {
		b, _ := os.ReadFile(p)
		f.Add(b)
	}
	f.Add([]byte("version: 1.0\nrepository: :\ncrawler: a:1 A\n"))
	f.Fuzz(func(t *testing.T, data []byte) {
		sc, err := ParseShareControl(bytes.NewReader(data), Limits{MaxLineBytes: 256})
		if err != nil {
			return
		}
		_ = sc.Check(nil)
		_, _ = sc.RepositoryURL(mustURL("http://peer.example/robots.shr"))
		var b bytes.Buffer
		sc.WriteTo(&b)
		again, err := ParseShareControl(&b, Limits{})
		if err != nil {
			t.Fatalf("what we write does not parse: %v\n%s", err, b.String())
		}
		if again.Version != sc.Version || again.Repository != sc.Repository || len(again.Special) != len(sc.Special) {
			t.Fatalf("round trip changed %+v to %+v", sc, again)
		}
	})
}

// FuzzDayFilter: a filter's query never panics; a filter it accepts
// passes a URL only with its own origin, and passes its own prefix.
func FuzzDayFilter(f *testing.F) {
	for _, s := range []string{"http://a.example/", "HTTPS://A.example:8443/docs/", "http://", "ftp://a/", "http://a?b", "http://a.example/x\x00", "http://[::1]:80/p"} {
		f.Add(s, "http://a.example/docs/1")
	}
	f.Fuzz(func(t *testing.T, prefix, u string) {
		df, err := NewDayFilter(prefix)
		if err != nil {
			return
		}
		if webevents.Origin(prefix) == "" {
			t.Fatalf("accepted %q without an origin", prefix)
		}
		if df.Match(u) && webevents.Origin(u) != webevents.Origin(prefix) {
			t.Fatalf("%q passes %q of another origin", prefix, u)
		}
		if strings.HasPrefix(prefix[len(webevents.Origin(prefix)):], "/") && !df.Match(prefix) {
			t.Fatalf("%q does not pass itself", prefix)
		}
		if back, ok, err := ParseDayFilter(mustQuery(t, df.Query())); !ok || err != nil || back != df {
			t.Fatalf("%q: its query %q reads back as %+v %v %v", prefix, df.Query(), back, ok, err)
		}
	})
}

func mustQuery(t *testing.T, q string) url.Values {
	v, err := url.ParseQuery(q)
	if err != nil {
		t.Fatal(err)
	}
	return v
}

// FuzzStreamCursor: a Last-Event-ID never panics the parser, and a cursor
// it accepts is bounded and reads back the same from its text.
func FuzzStreamCursor(f *testing.F) {
	for _, s := range []string{"20412-0", "20412-18344.20413-9120", "", "1-2-3", "99999999999-1", "20412-0.20412-5", "-1-2", "20412-+5"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		c, err := ParseStreamCursor(s)
		if err != nil {
			return
		}
		if len(c) > 8 {
			t.Fatalf("%q: %d days", s, len(c))
		}
		back, err := ParseStreamCursor(c.String())
		if err != nil || !maps.Equal(back, c) {
			t.Fatalf("%q reads as %v, written %q, read back %v %v", s, c, c.String(), back, err)
		}
	})
}
