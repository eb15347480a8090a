package protocol

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"net/url"
	"strings"
	"testing"
	"time"

	"github.com/cocrawl/cocrawl/webevents"
)

func mustURL(s string) *url.URL {
	u, err := url.Parse(s)
	if err != nil {
		panic(err)
	}
	return u
}

func testEvent(i int) webevents.Event {
	return webevents.Event{
		URL: fmt.Sprintf("http://host%d.example/page/%d.html", i%50, i), Size: int64(1000 + i),
		LMD: 1700000000 + int64(i), LPD: 1700000100 + int64(i), CID: "peer.example:8080 cocrawl/1.1",
		Stat: webevents.Stat("CUD"[i%3]), TTL: int64(i % 2 * 3600),
	}
}

func TestDatRoundTrip(t *testing.T) {
	var buf bytes.Buffer
	w := NewDatWriter(&buf)
	var want []webevents.Event
	for i := range 100 {
		e := testEvent(i)
		if i%7 == 0 {
			e.Digest, e.ETag = "sha256:abcd", `W/"x"`
		}
		want = append(want, e)
		if err := w.Write(&e); err != nil {
			t.Fatal(err)
		}
	}
	w.Flush()
	if w.Written() != int64(buf.Len()) {
		t.Fatalf("Written %d, buffer %d", w.Written(), buf.Len())
	}
	got, bad, err := decodeAll(t, &buf, DatOptions{Now: func() time.Time { return vectorNow }})
	if err != nil || len(bad) > 0 || len(got) != len(want) {
		t.Fatalf("decode: %d records, %v, %v", len(got), bad, err)
	}
	for i := range got {
		if got[i] != want[i] {
			t.Fatalf("record %d: %+v != %+v", i, got[i], want[i])
		}
	}
}

func TestDatWriterRejectsInjection(t *testing.T) {
	e := testEvent(1)
	e.CID = "x:1 X\nstat: D"
	if err := NewDatWriter(io.Discard).Write(&e); err == nil {
		t.Fatal("a cid with a line break was written")
	}
}

func TestDatLimits(t *testing.T) {
	rec := string(webevents.AppendRecord(nil, ptrEvent(testEvent(1))))
	long := "url: http://a.example/" + strings.Repeat("a", 20000) + "\n"
	manyFields := "url: http://a.example/\n" + strings.Repeat("x-f: 1\n", 40) + "size: 1\n\n"
	tests := []struct {
		name     string
		in       string
		lim      Limits
		good     int
		bad      int
		fatal    error
		wantLine int
	}{
		{"long line skips its record only", rec + long + "size: 1\n\n" + rec, Limits{}, 2, 1, nil, 0},
		{"too many fields", rec + manyFields + rec, Limits{}, 2, 1, nil, 0},
		{"byte limit is fatal", strings.Repeat(rec, 10), Limits{MaxBytes: int64(len(rec)) * 3}, 3, 0, ErrTooLarge, 0},
		{"record limit is fatal", strings.Repeat(rec, 10), Limits{MaxRecords: 4}, 4, 0, ErrTooManyRecords, 0},
		{"NUL byte", "url: http://a\x00/\n\n" + rec, Limits{}, 1, 1, nil, 0},
		{"blank lines and no final separator", "\n\n" + rec + "\n\n\n" + strings.TrimSuffix(rec, "\n"), Limits{}, 2, 0, nil, 0},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			evs, bad, err := decodeAll(t, strings.NewReader(tt.in), DatOptions{Limits: tt.lim, Now: func() time.Time { return vectorNow }})
			if len(evs) != tt.good || len(bad) != tt.bad || !errors.Is(err, tt.fatal) && !(err == nil && tt.fatal == nil) {
				t.Fatalf("good %d bad %d (%v) fatal %v; want %d %d %v", len(evs), len(bad), bad, err, tt.good, tt.bad, tt.fatal)
			}
		})
	}
}

func TestDatOffset(t *testing.T) {
	rec := string(webevents.AppendRecord(nil, ptrEvent(testEvent(1))))
	// The last record has no blank line: it is returned but not covered,
	// so a cursor re-reads it if it was cut short.
	in := rec + rec + strings.TrimSuffix(rec, "\n")
	d := NewDatReader(strings.NewReader(in), DatOptions{Now: func() time.Time { return vectorNow }})
	var offs []int64
	for {
		_, err := d.Next()
		if err != nil {
			break
		}
		offs = append(offs, d.Offset())
	}
	n := int64(len(rec))
	if fmt.Sprint(offs) != fmt.Sprint([]int64{n, 2 * n, 2 * n}) {
		t.Fatalf("offsets %v, record length %d", offs, n)
	}
}

func ptrEvent(e webevents.Event) *webevents.Event { return &e }

func TestShareControlLimits(t *testing.T) {
	for _, tt := range []struct {
		name string
		in   string
		err  error
	}{
		{"long line", "version: 1.0\ncrawler: " + strings.Repeat("a", 20000) + "\n", ErrLineTooLong},
		{"too many lines", "version: 1.0\n" + strings.Repeat("special: http://a/\n", 1001), ErrTooManyFields},
		{"control byte", "version: 1.0\ncrawler: a:1 A\x01\nrepository: /s/\n", ErrBinary},
		{"empty crawler", "version: 1.0\ncrawler:\nrepository: /s/\n", ErrMissingField},
		{"bad version text", "version: one\ncrawler: a:1 A\nrepository: /s/\n", ErrUnsupportedVersion},
	} {
		t.Run(tt.name, func(t *testing.T) {
			_, err := ParseShareControl(strings.NewReader(tt.in), Limits{})
			if !errors.Is(err, tt.err) {
				t.Fatalf("got %v, want %v", err, tt.err)
			}
		})
	}
}

func TestShareControlCheck(t *testing.T) {
	sc := &ShareControl{Version: "1.1", Crawler: "nohost", Repository: "/share/", Special: []string{"ftp://x/"}, Contact: "nobody", Rho: "2", Probe: "period=60 k=3"}
	noCentre := func(v string) error {
		if !strings.Contains(v, "centre=") {
			return errors.New("no centre")
		}
		return nil
	}
	if got := sc.Check(noCentre); len(got) != 6 {
		t.Fatalf("Check found %d problems, want 6: %v", len(got), got)
	}
	if got := sc.Check(nil); len(got) != 5 {
		t.Fatalf("Check without a probe validator found %d problems, want 5: %v", len(got), got)
	}
}
