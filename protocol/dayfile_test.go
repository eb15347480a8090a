package protocol

import (
	"bytes"
	"fmt"
	"net/http/httptest"
	"testing"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/cocrawl/cocrawl/webevents"
)

// While every stream slot is taken a body is refused with 503 and
// Retry-After, but answers without a body (HEAD, 304) are still given.
func TestServerDayFileSlots(t *testing.T) {
	st := webevents.NewMemStore()
	const day = 19700
	if err := st.Record(dayEvents(day, 20, 0)); err != nil {
		t.Fatal(err)
	}
	srv, err := NewServer(st, ServerOptions{MaxStreams: 1})
	if err != nil {
		t.Fatal(err)
	}
	ts := httptest.NewServer(srv)
	defer ts.Close()
	url := fmt.Sprintf("%s/share/%d.dat", ts.URL, day)
	resp, _ := get(t, url)
	etag := resp.Header.Get("ETag")

	srv.slots <- struct{}{} // a transfer in flight
	resp, body := get(t, url)
	if resp.StatusCode != 503 || resp.Header.Get("Retry-After") == "" || resp.Header.Get("Content-Length") == "1" {
		t.Errorf("full: %d %v %q, want 503 with Retry-After", resp.StatusCode, resp.Header, body)
	}
	if resp, _ := get(t, url, "If-None-Match", etag); resp.StatusCode != 304 {
		t.Errorf("revalidation while full: %d, want 304", resp.StatusCode)
	}
	req := httptest.NewRequest("HEAD", url, nil)
	w := httptest.NewRecorder()
	srv.ServeHTTP(w, req)
	if w.Code != 200 || w.Body.Len() != 0 {
		t.Errorf("HEAD while full: %d with %d bytes, want 200 and no body", w.Code, w.Body.Len())
	}
	<-srv.slots
	if resp, _ := get(t, url); resp.StatusCode != 200 {
		t.Errorf("after the transfer ended: %d, want 200", resp.StatusCode)
	}
	if len(srv.slots) != 0 {
		t.Errorf("%d slots still held after the requests ended", len(srv.slots))
	}
}

// A day file larger than one read chunk comes out whole and in order,
// from any start.
func TestServerDayFileChunks(t *testing.T) {
	st := webevents.NewMemStore()
	const day = 19700
	evs := dayEvents(day, 5000, 0) // about 3 chunks
	if err := st.Record(evs); err != nil {
		t.Fatal(err)
	}
	var want bytes.Buffer
	w := NewDatWriter(&want)
	for i := range evs {
		w.Write(&evs[i])
	}
	w.Flush()
	if want.Len() < 2*dayChunk {
		t.Fatalf("day file of %d bytes does not span chunks", want.Len())
	}
	_, ts := newTestServer(t, st)
	url := fmt.Sprintf("%s/share/%d.dat", ts.URL, day)
	for _, from := range []int{0, 1, dayChunk - 7, dayChunk, want.Len() - 1} {
		resp, body := get(t, url, "Range", fmt.Sprintf("bytes=%d-", from))
		if resp.StatusCode != 206 || !bytes.Equal(body, want.Bytes()[from:]) {
			t.Errorf("from %d: status %d, %d bytes, want 206 and %d bytes", from, resp.StatusCode, len(body), want.Len()-from)
		}
	}
}

// Each server counts its own requests: two in one process do not share.
func TestMetricsPerInstance(t *testing.T) {
	st := webevents.NewMemStore()
	m1, m2 := NewMetrics(), NewMetrics()
	s1, _ := NewServer(st, ServerOptions{Metrics: m1})
	s2, _ := NewServer(st, ServerOptions{Metrics: m2})
	for range 3 {
		s1.ServeHTTP(httptest.NewRecorder(), httptest.NewRequest("GET", "/robots.shr", nil))
	}
	s2.ServeHTTP(httptest.NewRecorder(), httptest.NewRequest("GET", "/robots.shr", nil))
	if got := requestsCounted(t, m1); got != 3 {
		t.Errorf("first server counted %v requests, want 3", got)
	}
	if got := requestsCounted(t, m2); got != 1 {
		t.Errorf("second server counted %v requests, want 1", got)
	}
	// A server without metrics counts nothing and does not fail.
	s3, _ := NewServer(st, ServerOptions{})
	s3.ServeHTTP(httptest.NewRecorder(), httptest.NewRequest("GET", "/robots.shr", nil))
}

func requestsCounted(t *testing.T, m *Metrics) float64 {
	t.Helper()
	reg := prometheus.NewRegistry()
	reg.MustRegister(m)
	mfs, err := reg.Gather()
	if err != nil {
		t.Fatal(err)
	}
	var n float64
	for _, mf := range mfs {
		if mf.GetName() == "cocrawl_share_requests_total" {
			for _, c := range mf.GetMetric() {
				n += c.GetCounter().GetValue()
			}
		}
	}
	return n
}
