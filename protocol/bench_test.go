package protocol

import (
	"bytes"
	"compress/gzip"
	"context"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"sync"
	"testing"
	"time"

	"github.com/cocrawl/cocrawl/webevents"
)

// benchEvents returns n events of day with realistic field lengths.
func benchEvents(day int64, n int) []webevents.Event {
	evs := make([]webevents.Event, n)
	for i := range evs {
		lpd := webevents.DayStart(day) + int64(i%86400)
		evs[i] = webevents.Event{
			URL:  fmt.Sprintf("http://www.site%d.example.org/section/%d/article-%d.html", i%5000, i%97, i),
			Size: int64(2000 + i%50000), LMD: lpd - int64(i%100000), LPD: lpd,
			CID: "crawler.example.org:8470 cocrawl/1.1", Stat: webevents.Stat("CUD"[i%3]),
		}
	}
	return evs
}

var (
	dayFileOnce sync.Once
	dayFile     []byte
)

// millionRecordFile is a 1,000,000-record day file, built once.
func millionRecordFile() []byte {
	dayFileOnce.Do(func() {
		var buf bytes.Buffer
		w := NewDatWriter(&buf)
		for _, e := range benchEvents(testDay, 1_000_000) {
			w.Write(&e)
		}
		w.Flush()
		dayFile = buf.Bytes()
	})
	return dayFile
}

// BenchmarkDecodeDayFile decodes a 1,000,000-record day file on one core.
func BenchmarkDecodeDayFile(b *testing.B) {
	data := millionRecordFile()
	now := clockAt(testDay)
	b.SetBytes(int64(len(data)))
	b.ResetTimer()
	var n int
	for b.Loop() {
		d := NewDatReader(bytes.NewReader(data), DatOptions{Now: now})
		n = 0
		for {
			_, err := d.Next()
			if err == io.EOF {
				break
			}
			if err != nil {
				b.Fatal(err)
			}
			n++
		}
	}
	if n != 1_000_000 {
		b.Fatalf("decoded %d records", n)
	}
	b.ReportMetric(float64(n)*float64(b.N)/b.Elapsed().Seconds(), "records/s")
}

// BenchmarkEventSize reports bytes per event on the wire, plain and gzip.
func BenchmarkEventSize(b *testing.B) {
	data := millionRecordFile()
	var gz bytes.Buffer
	for b.Loop() {
		gz.Reset()
		zw, _ := gzip.NewWriterLevel(&gz, gzip.BestSpeed)
		zw.Write(data)
		zw.Close()
	}
	b.ReportMetric(float64(len(data))/1e6, "plain-B/event")
	b.ReportMetric(float64(gz.Len())/1e6, "gzip-B/event")
	b.ReportMetric(100*float64(gz.Len())/float64(len(data)), "gzip-%")
}

// BenchmarkMergeOverHTTP merges a day file of n events over loopback HTTP
// into an empty Badger store (fetch, decode, resolve, commit), and, in the
// same run, writes the same events with a plain Badger WriteBatch as the
// baseline. It reports both rates and their ratio. The held case merges
// into a store that already holds a day-older state of every URL: no read
// can be skipped, and most records replace a state.
func BenchmarkMergeOverHTTP(b *testing.B) {
	for _, n := range []int{200_000} {
		for _, enc := range []string{"identity", "gzip"} {
			b.Run(fmt.Sprintf("events=%d/%s", n, enc), func(b *testing.B) { benchMerge(b, n, enc, false) })
		}
		b.Run(fmt.Sprintf("events=%d/gzip/held", n), func(b *testing.B) { benchMerge(b, n, "gzip", true) })
	}
}

func benchMerge(b *testing.B, n int, enc string, held bool) {
	sharer := webevents.NewMemStore()
	if err := sharer.Record(benchEvents(testDay, n)); err != nil {
		b.Fatal(err)
	}
	srv, _ := NewServer(sharer, ServerOptions{})
	ts := httptest.NewServer(srv)
	defer ts.Close()
	client := NewHTTPClient(ClientOptions{AllowPrivate: true})
	if enc == "identity" {
		// The merge client asks for gzip; strip it to measure plain transfer.
		client.Transport = stripEncoding{client.Transport}
	}
	var mergeSec, plainSec float64
	for b.Loop() {
		b.StopTimer()
		st, err := webevents.OpenBadger(b.TempDir(), webevents.BadgerOptions{})
		if err != nil {
			b.Fatal(err)
		}
		if held {
			if err := st.Record(benchEvents(testDay-1, n)); err != nil {
				b.Fatal(err)
			}
		}
		m := &Merger{Store: st, Client: client, Now: clockAt(testDay), BackDays: 1, BatchSize: benchBatch}
		b.StartTimer()
		t0 := time.Now()
		rep, err := m.Merge(context.Background(), ts.URL+"/robots.shr")
		mergeSec += time.Since(t0).Seconds()
		if err != nil || (!held && rep.Result.Accepted != n) || rep.Result.Accepted == 0 {
			b.Fatalf("merge: %v, accepted %d", err, rep.Result.Accepted)
		}
		st.Close()

		b.StopTimer()
		plainSec += plainBadgerWrite(b, n)
		b.StartTimer()
	}
	merged := float64(n) * float64(b.N)
	b.ReportMetric(merged/mergeSec, "merge-events/s")
	b.ReportMetric(merged/plainSec, "plain-batch-events/s")
	b.ReportMetric(plainSec/mergeSec, "merge/plain")
}

// plainBadgerWrite writes n events as values of one table with one write
// batch into a fresh store and returns the seconds it took: Badger's raw
// write speed, without resolution or the day log.
func plainBadgerWrite(b *testing.B, n int) float64 {
	st, err := webevents.OpenBadger(b.TempDir(), webevents.BadgerOptions{})
	if err != nil {
		b.Fatal(err)
	}
	defer st.Close()
	evs := benchEvents(testDay, n)
	entries := make([]webevents.Entry, len(evs))
	for i := range evs {
		entries[i] = webevents.Entry{Key: evs[i].URL, Value: webevents.AppendRecord(nil, &evs[i])} // a value of the same order of size
	}
	t0 := time.Now()
	if err := st.Table(webevents.TableFrontier).Put(entries...); err != nil {
		b.Fatal(err)
	}
	return time.Since(t0).Seconds()
}

// stripEncoding removes Accept-Encoding so the server sends identity.
type stripEncoding struct{ rt http.RoundTripper }

func (s stripEncoding) RoundTrip(r *http.Request) (*http.Response, error) {
	r = r.Clone(r.Context())
	r.Header.Del("Accept-Encoding")
	return s.rt.RoundTrip(r)
}

var benchBatch = 4096
