package protocol

import (
	"context"
	"fmt"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/cocrawl/cocrawl/webevents"
)

// Records from a source the peer no longer vouches for are sent as comment
// lines of the same length: the file, its size and its offsets are as
// before, and a merging peer decodes every other record.
func TestServerWithholdsDistrustedSources(t *testing.T) {
	const liar = "http://liar.example/robots.shr"
	st := webevents.NewMemStore()
	evs := dayEvents(testDay, 30, 0)
	st.Record(evs[:10])
	lies := evs[10:20]
	if _, err := st.Merge(lies, &webevents.Cursor{Peer: liar}); err != nil {
		t.Fatal(err)
	}
	st.Record(evs[20:])
	withheld := false
	srv, err := NewServer(st, ServerOptions{Control: ShareControl{Crawler: "sharer.example:8080 cocrawl/1.1"},
		Withhold: func(from string) bool { return withheld && from == liar }})
	if err != nil {
		t.Fatal(err)
	}
	ts := httptest.NewServer(srv)
	defer ts.Close()
	url := fmt.Sprintf("%s/share/%d.dat", ts.URL, testDay)
	_, before := get(t, url)
	withheld = true
	_, after := get(t, url)
	if len(after) != len(before) {
		t.Fatalf("withholding changed the size: %d -> %d bytes", len(before), len(after))
	}
	for _, e := range lies {
		if strings.Contains(string(after), e.URL+"\n") {
			t.Fatalf("withheld record %s still sent", e.URL)
		}
	}
	dec := NewDatReader(strings.NewReader(string(after)), DatOptions{Now: clockAt(testDay)})
	var got []string
	for {
		e, err := dec.Next()
		if err != nil {
			break
		}
		got = append(got, e.URL)
	}
	if len(got) != 20 || got[10] != evs[20].URL {
		t.Fatalf("decoded %d records (%v), want the 20 not withheld", len(got), got)
	}
	// A range that starts after a withheld record still lands on a record.
	off := len(before) - webevents.RecordLen(&evs[29])
	_, tail := get(t, url, "Range", fmt.Sprintf("bytes=%d-", off))
	if !strings.HasPrefix(string(tail), "url: "+evs[29].URL) {
		t.Fatalf("range from %d: %.60q", off, tail)
	}
	for n := 2; n < 300; n++ {
		if b := appendWithheld(nil, n); len(b) != n {
			t.Fatalf("appendWithheld(%d) made %d bytes", n, len(b))
		}
	}
}

// Merged sees every committed batch with the peer's URL and the result.
func TestMergerReportsBatches(t *testing.T) {
	sharer := webevents.NewMemStore()
	sharer.Record(dayEvents(testDay, 150, 0))
	_, ts := newTestServer(t, sharer)
	m := newMerger(webevents.NewMemStore())
	var records, accepted int
	m.Merged = func(peer string, batch []webevents.Event, res webevents.MergeResult) {
		if peer != ts.URL+"/robots.shr" {
			t.Errorf("batch from %q", peer)
		}
		records += len(batch)
		accepted += res.Accepted
	}
	if _, err := m.Merge(context.Background(), ts.URL+"/robots.shr"); err != nil {
		t.Fatal(err)
	}
	if records != 150 || accepted != 150 {
		t.Fatalf("Merged saw %d records, %d accepted; want 150", records, accepted)
	}
}
