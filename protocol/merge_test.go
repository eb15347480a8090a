package protocol

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"net/http"
	"net/http/httptest"
	"runtime"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/cocrawl/cocrawl/webevents"
)

const testDay = 19700 // "today" in these tests

func clockAt(day int64) func() time.Time {
	return func() time.Time { return time.Unix(webevents.DayStart(day)+86000, 0) }
}

func newMerger(st MergeStore) *Merger {
	return &Merger{Store: st, Client: NewHTTPClient(ClientOptions{AllowPrivate: true}), Now: clockAt(testDay), BatchSize: 64}
}

func snapshot(t *testing.T, st webevents.Store) map[string]webevents.Event {
	t.Helper()
	m := map[string]webevents.Event{}
	if err := st.Current(func(e webevents.Event) error { m[e.URL] = e; return nil }); err != nil {
		t.Fatal(err)
	}
	return m
}

func TestMergeTwoStores(t *testing.T) {
	sharer := webevents.NewMemStore()
	sharer.Record(dayEvents(testDay-1, 300, 0))
	sharer.Record(dayEvents(testDay, 200, 300))
	sharer.Record(dayEvents(testDay-20, 10, 900)) // beyond the first merge's reach
	_, ts := newTestServer(t, sharer)

	merger := webevents.NewMemStore()
	// The merging peer already knows some URLs: the rules decide.
	mine := dayEvents(testDay-1, 3, 0)
	mine[0].LMD += 600              // a later create than the sharer's: mine is restated as an update
	mine[1].LMD -= 600              // an older create: the sharer's later create becomes an update
	mine[2].Stat = webevents.Update // same lmd as the sharer's create: same version, ignored
	for i := range mine {
		mine[i].CID = "merger.example:1 M/1"
		mine[i].LPD-- // polled before the sharer: the rules decide, not the own-poll rule
	}
	merger.Record(mine)

	m := newMerger(merger)
	rep, err := m.Merge(context.Background(), ts.URL+"/robots.shr")
	if err != nil {
		t.Fatal(err)
	}
	if rep.Records != 500 || rep.BadRecords != 0 || len(rep.Days) != 7 {
		t.Fatalf("report: %d records, %d bad, %d days", rep.Records, rep.BadRecords, len(rep.Days))
	}
	got := snapshot(t, merger)
	if len(got) != 500 {
		t.Fatalf("merger holds %d URLs, want 500", len(got))
	}
	// Expected state: every sharer event as it is, but for the three rows above.
	for _, e := range append(dayEvents(testDay-1, 300, 0), dayEvents(testDay, 200, 300)...) {
		want := e
		want.From = ts.URL + "/robots.shr"
		switch e.URL {
		case mine[0].URL:
			want = mine[0]
			want.Stat = webevents.Update
		case mine[1].URL:
			want.Stat = webevents.Update
		case mine[2].URL:
			want = mine[2]
		}
		if got[e.URL] != want {
			t.Fatalf("%s: got %+v, want %+v", e.URL, got[e.URL], want)
		}
	}
	if rep.Result.Accepted != 498 || rep.Result.Restated != 1 || rep.Result.Ignored != 1 {
		t.Fatalf("result %+v", rep.Result)
	}

	// A second merge moves only what is new on the current day.
	more := dayEvents(testDay, 7, 5000)
	sharer.Record(more)
	rep2, err := m.Merge(context.Background(), ts.URL+"/robots.shr")
	if err != nil {
		t.Fatal(err)
	}
	if rep2.Records != 7 || rep2.Result.Accepted != 7 {
		t.Fatalf("second merge decoded %d records, accepted %d; want 7", rep2.Records, rep2.Result.Accepted)
	}
	statuses := fmt.Sprint(dayStatuses(rep2))
	if statuses != "[304 206]" {
		t.Fatalf("second merge statuses %s, want yesterday 304 and today 206", statuses)
	}
	var newBytes int
	for i := range more {
		newBytes += webevents.RecordLen(&more[i])
	}
	t.Logf("second merge: %d wire bytes for %d new record bytes (first merge %d)", rep2.WireBytes, newBytes, rep.WireBytes)

	// Nothing new: no records move at all.
	rep3, _ := m.Merge(context.Background(), ts.URL+"/robots.shr")
	if rep3.Records != 0 || fmt.Sprint(dayStatuses(rep3)) != "[304 304]" {
		t.Fatalf("third merge: %d records, %v", rep3.Records, dayStatuses(rep3))
	}
}

func dayStatuses(r *MergeReport) []int {
	var s []int
	for _, d := range r.Days {
		s = append(s, d.Status)
	}
	return s
}

// thesisPeer serves fixed files the way a 2002 peer's plain web server
// would: no gzip, no Range, no conditional requests, no ETag.
type thesisPeer struct {
	mu    sync.Mutex
	files map[string][]byte
}

func (p *thesisPeer) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	p.mu.Lock()
	b, ok := p.files[r.URL.Path]
	p.mu.Unlock()
	if !ok {
		http.NotFound(w, r)
		return
	}
	w.Write(b)
}

func TestMergeFromThesisPeer(t *testing.T) {
	peer := &thesisPeer{files: map[string][]byte{}}
	ts := httptest.NewServer(peer)
	defer ts.Close()
	peer.files["/robots.shr"] = []byte("version: 1.0\ncrawler: old.example:33433 OldCrawler/1.0\nrepository: " + ts.URL + "/share-dir/\n")
	var buf bytes.Buffer
	w := NewDatWriter(&buf)
	evs := dayEvents(testDay, 100, 0)
	for i := range evs {
		w.Write(&evs[i])
	}
	w.Flush()
	peer.files[fmt.Sprintf("/share-dir/%d.dat", testDay)] = buf.Bytes()

	st := webevents.NewMemStore()
	m := newMerger(st)
	rep, err := m.Merge(context.Background(), ts.URL+"/robots.shr")
	if err != nil || rep.Result.Accepted != 100 {
		t.Fatalf("first merge: %+v %v", rep, err)
	}
	// The peer ignores Range: the whole file comes again and resolution
	// leaves the store as it was.
	rep, err = m.Merge(context.Background(), ts.URL+"/robots.shr")
	if err != nil || rep.Records != 100 || rep.Result.Accepted != 0 || rep.Result.Ignored != 100 {
		t.Fatalf("second merge: %+v %v", rep.Result, err)
	}
	got := snapshot(t, st)
	for _, e := range evs {
		e.From = ts.URL + "/robots.shr" // attributed to the peer merged from
		if got[e.URL] != e {
			t.Fatalf("%s: %+v", e.URL, got[e.URL])
		}
	}
}

func TestMergeRefusesPrivateAddresses(t *testing.T) {
	_, ts := newTestServer(t, webevents.NewMemStore())
	m := &Merger{Store: webevents.NewMemStore(), Now: clockAt(testDay)} // default client
	_, err := m.Merge(context.Background(), ts.URL+"/robots.shr")
	if !errors.Is(err, ErrPrivateAddress) {
		t.Fatalf("loopback merge without permission: %v", err)
	}
	// A public-looking peer whose repository points at loopback.
	peer := &thesisPeer{files: map[string][]byte{"/robots.shr": []byte("version: 1.0\ncrawler: a:1 A\nrepository: http://127.0.0.1:9/share/\n")}}
	ps := httptest.NewServer(peer)
	defer ps.Close()
	m = newMerger(webevents.NewMemStore())
	m.Client = NewHTTPClient(ClientOptions{AllowPrivate: false})
	if _, err := m.Merge(context.Background(), ps.URL+"/robots.shr"); !errors.Is(err, ErrPrivateAddress) {
		t.Fatalf("got %v", err)
	}
}

func TestMergeSkipsBadRecords(t *testing.T) {
	peer := &thesisPeer{files: map[string][]byte{}}
	ts := httptest.NewServer(peer)
	defer ts.Close()
	peer.files["/robots.shr"] = []byte("version: 1.0\ncrawler: a:1 A\nrepository: /s/\n")
	good := dayEvents(testDay, 2, 0)
	body := string(webevents.AppendRecord(nil, &good[0])) + "url: http://x/\nstat: Q\n\n" + string(webevents.AppendRecord(nil, &good[1]))
	peer.files[fmt.Sprintf("/s/%d.dat", testDay)] = []byte(body)
	peer.files[fmt.Sprintf("/s/%d.dat", testDay-1)] = []byte("<html>500 oops</html>")
	rep, err := newMerger(webevents.NewMemStore()).Merge(context.Background(), ts.URL+"/robots.shr")
	if err != nil || rep.Records != 2 || rep.BadRecords != 2 || rep.Result.Accepted != 2 {
		t.Fatalf("%+v %v", rep, err)
	}
}

func TestMergeRangeResetAfterRebuild(t *testing.T) {
	st1 := webevents.NewMemStore()
	st1.Record(dayEvents(testDay, 50, 0))
	srv, _ := NewServer(st1, ServerOptions{})
	var h http.Handler = srv
	var mu sync.Mutex
	ts := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		mu.Lock()
		hh := h
		mu.Unlock()
		hh.ServeHTTP(w, r)
	}))
	defer ts.Close()
	m := newMerger(webevents.NewMemStore())
	if _, err := m.Merge(context.Background(), ts.URL+"/robots.shr"); err != nil {
		t.Fatal(err)
	}
	// The sharer loses its store and starts again with fewer records.
	st2 := webevents.NewMemStore()
	st2.Record(dayEvents(testDay, 3, 100))
	srv2, _ := NewServer(st2, ServerOptions{})
	mu.Lock()
	h = srv2
	mu.Unlock()
	rep, err := m.Merge(context.Background(), ts.URL+"/robots.shr")
	if err != nil || rep.Result.Accepted != 3 {
		t.Fatalf("after rebuild: %+v %v", rep, err)
	}
}

func TestMergeFirstReachBack(t *testing.T) {
	sharer := webevents.NewMemStore()
	for d := int64(0); d < 12; d++ {
		sharer.Record(dayEvents(testDay-d, 1, int(d)*10))
	}
	_, ts := newTestServer(t, sharer)
	m := newMerger(webevents.NewMemStore())
	m.BackDays = 3
	rep, err := m.Merge(context.Background(), ts.URL+"/robots.shr")
	if err != nil || rep.Records != 3 || len(rep.Days) != 3 {
		t.Fatalf("%d records over %d days, %v", rep.Records, len(rep.Days), err)
	}
}

// endless serves a robots.shr and a day file that never ends.
func endless(t testing.TB) *httptest.Server {
	rec := dayEvents(testDay, 1, 0)[0]
	ts := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path == "/robots.shr" {
			fmt.Fprintf(w, "version: 1.0\ncrawler: a:1 A\nrepository: /s/\n")
			return
		}
		if r.URL.Path != fmt.Sprintf("/s/%d.dat", testDay) {
			http.NotFound(w, r)
			return
		}
		chunk := bytes.Repeat(webevents.AppendRecord(nil, &rec), 256)
		for r.Context().Err() == nil {
			if _, err := w.Write(chunk); err != nil {
				return
			}
		}
	}))
	t.Cleanup(ts.Close)
	return ts
}

func TestMergeBoundedByByteLimit(t *testing.T) {
	if testing.Short() {
		t.Skip("moves 40 MB")
	}
	ts := endless(t)
	const limit = 4 << 20
	m := newMerger(webevents.NewMemStore())
	m.Limits = Limits{MaxBytes: limit}
	runtime.GC()
	var before, after runtime.MemStats
	runtime.ReadMemStats(&before)
	var peak uint64
	done := make(chan struct{})
	go func() {
		for {
			select {
			case <-done:
				return
			case <-time.After(5 * time.Millisecond):
				var ms runtime.MemStats
				runtime.ReadMemStats(&ms)
				peak = max(peak, ms.HeapInuse)
			}
		}
	}()
	for range 10 { // ten merges: ten times the limit offered
		rep, err := m.Merge(context.Background(), ts.URL+"/robots.shr")
		if err != nil {
			t.Fatal(err)
		}
		last := rep.Days[len(rep.Days)-1]
		if !errors.Is(last.Err, ErrTooLarge) || last.WireBytes > limit+1 {
			t.Fatalf("day: %v after %d bytes", last.Err, last.WireBytes)
		}
	}
	close(done)
	runtime.ReadMemStats(&after)
	t.Logf("heap in use: %d MB before, peak %d MB, while reading 10 x %d MB", before.HeapInuse>>20, peak>>20, limit>>20)
	if peak > before.HeapInuse+64<<20 {
		t.Fatalf("heap grew to %d MB reading a file over the limit", peak>>20)
	}
}

func TestMergeBadControl(t *testing.T) {
	for _, body := range []string{"version: 2.0\ncrawler: a:1 A\nrepository: /s/\n", "<html>", strings.Repeat("x", 2<<20)} {
		ts := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { fmt.Fprint(w, body) }))
		_, err := newMerger(webevents.NewMemStore()).Merge(context.Background(), ts.URL+"/robots.shr")
		ts.Close()
		if err == nil {
			t.Errorf("robots.shr %.20q accepted", body)
		}
	}
}

// A peer that trickles its day file cannot hold a merge past the client's
// time limit; what arrived in whole records is kept.
func TestMergeSlowPeer(t *testing.T) {
	good := dayEvents(testDay, 1, 0)[0]
	ts := trickler(t, func(w http.ResponseWriter, r *http.Request) {
		for r.Context().Err() == nil { // one byte every 50 ms, for ever
			w.Write([]byte("u"))
			w.(http.Flusher).Flush()
			time.Sleep(50 * time.Millisecond)
		}
	})
	st := webevents.NewMemStore()
	m := newMerger(st)
	m.Client = NewHTTPClient(ClientOptions{AllowPrivate: true, Timeout: 500 * time.Millisecond})
	start := time.Now()
	rep, err := m.Merge(context.Background(), ts.URL+"/robots.shr")
	if err != nil {
		t.Fatal(err)
	}
	last := rep.Days[len(rep.Days)-1]
	if last.Err == nil || rep.Result.Accepted != 1 {
		t.Fatalf("slow day: err %v, accepted %d", last.Err, rep.Result.Accepted)
	}
	if _, ok, _ := st.Get(good.URL); !ok {
		t.Fatal("the whole record before the trickle was lost")
	}
	t.Logf("gave up after %v: %v", time.Since(start).Round(10*time.Millisecond), last.Err)
}

// Issue 18, item 12: a day that failed (here a 503) is fetched again at the
// next merge, however old, instead of being passed for ever.
func TestMergeRetriesFailedDays(t *testing.T) {
	sharer := webevents.NewMemStore()
	sharer.Record(dayEvents(testDay-3, 5, 0))
	sharer.Record(dayEvents(testDay, 5, 10))
	srv, err := NewServer(sharer, ServerOptions{Control: ShareControl{Crawler: "sharer.example:8080 cocrawl/1.1"}})
	if err != nil {
		t.Fatal(err)
	}
	failing := fmt.Sprintf("/%d.dat", testDay-3)
	down := true
	ts := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if down && strings.HasSuffix(r.URL.Path, failing) {
			http.Error(w, "busy", http.StatusServiceUnavailable)
			return
		}
		srv.ServeHTTP(w, r)
	}))
	defer ts.Close()
	st := webevents.NewMemStore()
	m := newMerger(st)
	if rep, err := m.Merge(context.Background(), ts.URL+"/robots.shr"); err != nil || rep.Records != 5 {
		t.Fatalf("first merge: %d records, %v", rep.Records, err)
	}
	down = false
	for _, now := range []int64{testDay, testDay + 1} { // the same day, and the next
		m.Now = clockAt(now)
		if _, err := m.Merge(context.Background(), ts.URL+"/robots.shr"); err != nil {
			t.Fatal(err)
		}
	}
	if got := snapshot(t, st); len(got) != 10 {
		t.Fatalf("after the failed day came back: %d URLs, want 10", len(got))
	}
	if c, _, _ := st.Cursor(ts.URL + "/robots.shr"); c.LastDay != testDay+1 {
		t.Errorf("cursor at day %d once every day finished, want %d", c.LastDay, testDay+1)
	}
}

// trickler serves a robots.shr and, for today's day file, one record and
// then body as it pleases.
func trickler(t *testing.T, body func(w http.ResponseWriter, r *http.Request)) *httptest.Server {
	good := dayEvents(testDay, 1, 0)[0]
	ts := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path == "/robots.shr" {
			fmt.Fprintf(w, "version: 1.0\ncrawler: a:1 A\nrepository: /s/\n")
			return
		}
		if r.URL.Path != fmt.Sprintf("/s/%d.dat", testDay) {
			http.NotFound(w, r)
			return
		}
		w.Write(webevents.AppendRecord(nil, &good))
		w.(http.Flusher).Flush()
		body(w, r)
	}))
	t.Cleanup(ts.Close)
	return ts
}

// mergeWithin runs a merge and fails the test if it is still running
// after limit.
func mergeWithin(t *testing.T, m *Merger, u string, limit time.Duration) (*MergeReport, error) {
	t.Helper()
	type result struct {
		rep *MergeReport
		err error
	}
	done := make(chan result, 1)
	go func() {
		rep, err := m.Merge(context.Background(), u)
		done <- result{rep, err}
	}()
	select {
	case r := <-done:
		return r.rep, r.err
	case <-time.After(limit):
		t.Fatalf("the merge was still waiting after %v", limit)
		return nil, nil
	}
}

// Issue 18, item 2: a day file that drips is given up by the minimum
// speed, with the client's own time limit far away; a peer that sends
// nothing at all, by the merge's deadline.
func TestMergeGivesUpOnSlowPeers(t *testing.T) {
	drip := trickler(t, func(w http.ResponseWriter, r *http.Request) {
		for r.Context().Err() == nil {
			w.Write([]byte("u"))
			w.(http.Flusher).Flush()
			time.Sleep(20 * time.Millisecond)
		}
	})
	m := newMerger(webevents.NewMemStore())
	m.MinSpeedAfter = 300 * time.Millisecond
	rep, err := mergeWithin(t, m, drip.URL+"/robots.shr", 10*time.Second)
	if !errors.Is(err, ErrTooSlow) || rep.Result.Accepted != 1 {
		t.Errorf("dripping peer: %v, %d accepted", err, rep.Result.Accepted)
	}

	stall := trickler(t, func(w http.ResponseWriter, r *http.Request) { <-r.Context().Done() })
	m = newMerger(webevents.NewMemStore())
	m.MaxDuration = 500 * time.Millisecond
	rep, err = mergeWithin(t, m, stall.URL+"/robots.shr", 10*time.Second)
	if !errors.Is(err, ErrMergeTooLong) || rep.Result.Accepted != 1 {
		t.Errorf("stalled peer: %v, %d accepted", err, rep.Result.Accepted)
	}
}

// Issue 18, item 4: one peer's file of one day brings at most the quota,
// at this merge and every later one, and the day still counts as merged;
// a filter keeps out what the merging peer does not want.
func TestMergeDayQuotaAndFilter(t *testing.T) {
	sharer := webevents.NewMemStore()
	sharer.Record(dayEvents(testDay, 100, 0))
	_, ts := newTestServer(t, sharer)
	st := webevents.NewMemStore()
	m := newMerger(st)
	m.DayQuota = 30
	m.BatchSize = 8
	rep, err := m.Merge(context.Background(), ts.URL+"/robots.shr")
	if err != nil {
		t.Fatal(err)
	}
	last := rep.Days[len(rep.Days)-1]
	if !last.OverQuota || last.Err != nil || len(snapshot(t, st)) != 30 {
		t.Fatalf("quota 30: over %v, err %v, %d stored", last.OverQuota, last.Err, len(snapshot(t, st)))
	}
	sharer.Record(dayEvents(testDay, 10, 500))
	if _, err := m.Merge(context.Background(), ts.URL+"/robots.shr"); err != nil || len(snapshot(t, st)) != 30 {
		t.Fatalf("after more records of the same day: %d stored, %v", len(snapshot(t, st)), err)
	}

	st = webevents.NewMemStore()
	m = newMerger(st)
	m.Filter = func(e *webevents.Event) bool { return strings.HasSuffix(e.URL, "0") }
	rep, err = m.Merge(context.Background(), ts.URL+"/robots.shr")
	if err != nil {
		t.Fatal(err)
	}
	var filtered int64
	for _, d := range rep.Days {
		filtered += d.Filtered
	}
	if got := len(snapshot(t, st)); got == 0 || int64(got)+filtered != 110 {
		t.Fatalf("filter: %d stored, %d filtered, want 110 in all", got, filtered)
	}
}

// Issue 18, item 13: a server whose store came back under a new generation
// (rebuilt, or reopened after a crash that lost the tail of a day log) may
// write new records at offsets it served before; a client resuming there
// would start mid-record and miss the first ones. It reads the day again.
func TestMergeRestartsOnNewGeneration(t *testing.T) {
	before := webevents.NewMemStore()
	before.Record(dayEvents(testDay, 10, 0))
	after := webevents.NewMemStore() // another ID: another generation
	after.Record(dayEvents(testDay, 25, 100))
	serving := before
	ts := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		srv, err := NewServer(serving, ServerOptions{Control: ShareControl{Crawler: "sharer.example:8080 cocrawl/1.1"}})
		if err != nil {
			t.Fatal(err)
		}
		srv.ServeHTTP(w, r)
	}))
	defer ts.Close()
	st := webevents.NewMemStore()
	m := newMerger(st)
	if _, err := m.Merge(context.Background(), ts.URL+"/robots.shr"); err != nil {
		t.Fatal(err)
	}
	serving = after
	rep, err := m.Merge(context.Background(), ts.URL+"/robots.shr")
	if err != nil {
		t.Fatal(err)
	}
	for _, e := range dayEvents(testDay, 25, 100) {
		if _, ok, _ := st.Get(e.URL); !ok {
			t.Fatalf("%s of the new generation was not merged (%d bad records)", e.URL, rep.BadRecords)
		}
	}
}

// failAfter is a store whose merges fail after n succeeded.
type failAfter struct {
	*webevents.MemStore
	n int
}

func (f *failAfter) Merge(evs []webevents.Event, c *webevents.Cursor) (webevents.MergeResult, error) {
	if f.n--; f.n < 0 {
		return webevents.MergeResult{}, errors.New("disk full")
	}
	return f.MemStore.Merge(evs, c)
}

// Issue 18, item 13 (in part): a store failure in the middle of a day
// file ends the merge with a store error, and the decoder, still reading
// the gzip stream, is gone before its reader closes (the race detector
// watches this test in make test).
func TestMergeStoreFailureMidDay(t *testing.T) {
	// Three batches' worth of records at once, then a byte at a time: when
	// the store fails on the second batch, the decoder is in a Read.
	evs := dayEvents(testDay, 200, 0)
	ts := trickler(t, func(w http.ResponseWriter, r *http.Request) {
		for i := 1; i < len(evs); i++ {
			w.Write(webevents.AppendRecord(nil, &evs[i]))
		}
		w.(http.Flusher).Flush()
		for r.Context().Err() == nil {
			w.Write([]byte("u"))
			w.(http.Flusher).Flush()
			time.Sleep(10 * time.Millisecond)
		}
	})
	st := &failAfter{webevents.NewMemStore(), 1}
	m := newMerger(st)
	m.BatchSize = 64
	_, err := mergeWithin(t, m, ts.URL+"/robots.shr", 10*time.Second)
	if !IsStoreError(err) {
		t.Fatalf("merge with a failing store: %v", err)
	}
	if c, ok, _ := st.Cursor(ts.URL + "/robots.shr"); ok && c.Mark(testDay).Offset == 0 {
		t.Errorf("the cursor lost the records merged before the failure: %+v", c)
	}
}

// What a peer's headers put in the cursor is bounded.
func TestGenerationBounded(t *testing.T) {
	resp := &http.Response{Header: http.Header{}}
	resp.Header.Set(GenerationHeader, "abc.2")
	if generation(resp) != "abc.2" {
		t.Fatal("a store ID generation was not read")
	}
	resp.Header.Set(GenerationHeader, strings.Repeat("g", 10_000))
	if generation(resp) != "" {
		t.Fatal("a 10,000-byte generation was kept")
	}
}
