package protocol

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"net"
	"net/http"
	"net/http/httptest"
	"net/url"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus/testutil"

	"github.com/cocrawl/cocrawl/webevents"
	"github.com/cocrawl/cocrawl/webevents/storetest"
)

// sse is a test subscriber: the events of one stream, as read.
type sse struct {
	resp   *http.Response
	events chan sseEvent
}

type sseEvent struct {
	id string
	ev StreamEvent
	at time.Time
}

func subscribe(t *testing.T, ctx context.Context, u, lastID string) *sse {
	t.Helper()
	req, _ := http.NewRequestWithContext(ctx, http.MethodGet, u, nil)
	if lastID != "" {
		req.Header.Set("Last-Event-ID", lastID)
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	s := &sse{resp: resp, events: make(chan sseEvent, 10000)}
	if resp.StatusCode != 200 {
		resp.Body.Close()
		close(s.events)
		return s
	}
	go func() {
		defer close(s.events)
		defer resp.Body.Close()
		sc := bufio.NewScanner(resp.Body)
		var id, data string
		for sc.Scan() {
			line := sc.Text()
			switch {
			case strings.HasPrefix(line, "id: "):
				id = line[4:]
			case strings.HasPrefix(line, "data: "):
				data = line[6:]
			case line == "" && data != "":
				var ev StreamEvent
				if err := json.Unmarshal([]byte(data), &ev); err != nil {
					t.Errorf("event data %q: %v", data, err)
					return
				}
				s.events <- sseEvent{id, ev, time.Now()}
				id, data = "", ""
			}
		}
	}()
	return s
}

func (s *sse) next(t *testing.T, n int) []sseEvent {
	t.Helper()
	var out []sseEvent
	deadline := time.After(10 * time.Second)
	for len(out) < n {
		select {
		case e, ok := <-s.events:
			if !ok {
				t.Fatalf("stream ended after %d of %d events", len(out), n)
			}
			out = append(out, e)
		case <-deadline:
			t.Fatalf("%d of %d events in 10 s", len(out), n)
		}
	}
	return out
}

func todayEvents(n, from int, site string) []webevents.Event {
	now := time.Now().Unix()
	evs := make([]webevents.Event, n)
	for i := range evs {
		evs[i] = webevents.Event{URL: fmt.Sprintf("http://%s/p/%d", site, from+i), Size: 100, LMD: now - 60, LPD: now,
			CID: "sharer.example:8080 cocrawl/1.1", Stat: webevents.Update}
	}
	return evs
}

// A live stream sends, within a second, the records recorded after it
// began that pass its filter; a subscriber that comes back with the last
// event's id gets what it missed, once.
func TestStreamLiveFilteredAndResumed(t *testing.T) {
	st := storetest.OpenBadger(t)
	if err := st.Record(todayEvents(5, 0, "a.example")); err != nil { // before: not sent
		t.Fatal(err)
	}
	_, ts := newTestServer(t, st)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	u := ts.URL + StreamPath + "?prefix=" + url.QueryEscape("http://a.example/")
	catchUps := st.IndexCatchUps()
	sub := subscribe(t, ctx, u, "")
	if sub.resp.StatusCode != 200 || !strings.HasPrefix(sub.resp.Header.Get("Content-Type"), "text/event-stream") || sub.resp.Header.Get(FilterHeader) == "" {
		t.Fatalf("stream: %d %q %q", sub.resp.StatusCode, sub.resp.Header.Get("Content-Type"), sub.resp.Header.Get(FilterHeader))
	}
	time.Sleep(200 * time.Millisecond) // the stream took its starting point
	var worst time.Duration
	for i := range 5 {
		at := time.Now()
		if err := st.Record(append(todayEvents(3, 100+10*i, "b.example"), todayEvents(2, 100+10*i, "a.example")...)); err != nil {
			t.Fatal(err)
		}
		got := sub.next(t, 2)
		for _, e := range got {
			if !strings.HasPrefix(e.ev.URL, "http://a.example/") || e.id == "" {
				t.Fatalf("event %+v (id %q) through a filter of a.example", e.ev, e.id)
			}
			worst = max(worst, e.at.Sub(at))
		}
	}
	if worst > time.Second {
		t.Errorf("an event took %v to reach the subscriber", worst)
	}
	// The stream read what its filter's origin index held and the day
	// log past it: it did not make the index catch up, at its start or
	// at each pass.
	if n := st.IndexCatchUps() - catchUps; n != 0 {
		t.Errorf("the live stream ran %d passes of the origin index", n)
	}
	// Gone, then back with the last id: what was recorded meanwhile, once.
	var last string
	select {
	case e := <-sub.events:
		t.Fatalf("an unexpected event %+v", e.ev)
	default:
	}
	cancel()
	for range sub.events {
	}
	last = lastID(t, st, u)
	if err := st.Record(todayEvents(4, 500, "a.example")); err != nil {
		t.Fatal(err)
	}
	ctx2, cancel2 := context.WithCancel(context.Background())
	defer cancel2()
	back := subscribe(t, ctx2, u, last)
	got := back.next(t, 4)
	for i, e := range got {
		if want := fmt.Sprintf("http://a.example/p/%d", 500+i); e.ev.URL != want {
			t.Errorf("resumed event %d: %s, want %s", i, e.ev.URL, want)
		}
	}
	select {
	case e := <-back.events:
		t.Errorf("a resumed stream sent %s again", e.ev.URL)
	case <-time.After(300 * time.Millisecond):
	}
	if r, _ := get(t, ts.URL+StreamPath+"?prefix=ftp://x/"); r.StatusCode != 400 {
		t.Errorf("bad filter: %d", r.StatusCode)
	}
	if r, _ := get(t, ts.URL+StreamPath, "Last-Event-ID", "1-2-3"); r.StatusCode != 400 {
		t.Errorf("bad Last-Event-ID: %d", r.StatusCode)
	}
}

// lastID reads the stream from the start of today for its last event's id,
// as a subscriber would have kept it.
func lastID(t *testing.T, st *webevents.BadgerStore, u string) string {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	today := webevents.DayOf(time.Now().Unix())
	info, _, _ := st.OriginDayInfo(today, "http://a.example")
	s := subscribe(t, ctx, u, fmt.Sprintf("%d-0", today))
	got := s.next(t, int(info.Records))
	return got[len(got)-1].id
}

// Subscriptions are bounded per client; a subscriber that stops reading
// is dropped once a write waits past the write timeout, and holds no
// memory of the server's meanwhile (the stream reads the store).
func TestStreamLimitsAndSlowSubscriber(t *testing.T) {
	st := webevents.NewMemStore()
	srv, err := NewServer(st, ServerOptions{MaxSubscribersPerClient: 2, StreamWriteTimeout: 300 * time.Millisecond, Metrics: NewMetrics()})
	if err != nil {
		t.Fatal(err)
	}
	ts := httpTestServer(t, srv)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	a, b := subscribe(t, ctx, ts+StreamPath, ""), subscribe(t, ctx, ts+StreamPath, "")
	if a.resp.StatusCode != 200 || b.resp.StatusCode != 200 {
		t.Fatalf("two streams: %d %d", a.resp.StatusCode, b.resp.StatusCode)
	}
	if c := subscribe(t, ctx, ts+StreamPath, ""); c.resp.StatusCode != http.StatusServiceUnavailable {
		t.Errorf("a third stream of one client: %d, want 503", c.resp.StatusCode)
	}
	cancel()

	// A raw connection that asks for today's records from the start (about
	// 22 MB of events) and never reads.
	for i := range 20 {
		if err := st.Record(todayEvents(1000, i*1000, "big.example/"+strings.Repeat("x", 1000))); err != nil {
			t.Fatal(err)
		}
	}
	conn, err := net.Dial("tcp", strings.TrimPrefix(ts, "http://"))
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	if tc, ok := conn.(*net.TCPConn); ok {
		_ = tc.SetReadBuffer(4 << 10)
	}
	fmt.Fprintf(conn, "GET %s HTTP/1.1\r\nHost: x\r\nLast-Event-ID: %d-0\r\n\r\n", StreamPath, webevents.Today(time.Now()))
	deadline := time.Now().Add(30 * time.Second)
	for srv.metrics.streamDropsFor("slow") == 0 {
		if time.Now().After(deadline) {
			t.Fatal("a subscriber that does not read was not dropped")
		}
		time.Sleep(50 * time.Millisecond)
	}
}

func httpTestServer(t *testing.T, h http.Handler) string {
	ts := httptest.NewServer(h)
	t.Cleanup(ts.Close)
	return ts.URL
}

func (m *Metrics) streamDropsFor(reason string) float64 {
	return testutil.ToFloat64(m.streamDrops.WithLabelValues(reason))
}

// A filtered stream's reader of a day (what its origin's index holds, then
// the day log past it) gives the records and offsets that a filter of the
// whole day gives, as the day grows and the index catches up between its
// reads, for an origin and for a prefix with a path.
func TestStreamReaderFollowsTheIndexThenTheLog(t *testing.T) {
	type rec struct {
		off int64
		url string
	}
	for _, prefix := range []string{"http://a.example/", "http://a.example/p/1"} {
		st := storetest.OpenBadger(t)
		srv, _ := newTestServer(t, st)
		day := webevents.DayOf(time.Now().Unix())
		f, err := NewDayFilter(prefix)
		if err != nil {
			t.Fatal(err)
		}
		s := &stream{s: srv, filter: &f, readers: map[int64]logReader{}}
		var got []rec
		var cur int64
		for round := range 4 {
			if err := st.Record(append(todayEvents(3, 10*round, "a.example"), todayEvents(2, 10*round, "b.example")...)); err != nil {
				t.Fatal(err)
			}
			if round == 2 {
				if _, _, err := st.OriginDayInfo(day, "http://a.example"); err != nil { // the index catches up
					t.Fatal(err)
				}
			}
			read, ok := s.reader(day)
			if !ok {
				t.Fatal("no reader of today")
			}
			err := read(cur, func(off int64, e webevents.Event) error {
				if off >= cur {
					got = append(got, rec{off, e.URL})
					cur = off + int64(webevents.RecordLen(&e))
				}
				return nil
			})
			if err != nil {
				t.Fatal(err)
			}
		}
		var want []rec
		whole := func(from int64, fn func(int64, webevents.Event) error) error { return st.ReadDay(day, from, fn) }
		err = (&filteredLog{under: whole, match: f.Match}).read(0, func(off int64, e webevents.Event) error {
			want = append(want, rec{off, e.URL})
			return nil
		})
		if err != nil {
			t.Fatal(err)
		}
		if len(want) < 4 || fmt.Sprint(got) != fmt.Sprint(want) {
			t.Errorf("%s: followed\n%v\nwant\n%v", prefix, got, want)
		}
		// A stream that begins now reads the indexed part from its index,
		// from the start or from a record, and the rest from the log.
		for _, from := range []rec{want[0], want[1], want[len(want)-2]} {
			fresh := &stream{s: srv, filter: &f, readers: map[int64]logReader{}}
			read, _ := fresh.reader(day)
			var again []rec
			err := read(from.off, func(off int64, e webevents.Event) error {
				again = append(again, rec{off, e.URL})
				return nil
			})
			if i := slices.Index(want, from); err != nil || fmt.Sprint(again) != fmt.Sprint(want[i:]) {
				t.Errorf("%s from %d: read\n%v (%v)\nwant\n%v", prefix, from.off, again, err, want[i:])
			}
		}
	}
}
