// Package storetest is the conformance suite every webevents.Store passes.
// Run it from a store's own test with a function that opens an empty store.
package storetest

import (
	"errors"
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/cocrawl/cocrawl/webevents"
)

// Day0 is the day the suite's events fall on; any sane day would do.
const Day0 = 20000

// Ev returns a valid event of URL path p on day Day0 plus dayOff.
func Ev(p string, s webevents.Stat, lmd int64, cid string, dayOff int64) webevents.Event {
	lpd := webevents.DayStart(Day0+dayOff) + 3600
	return webevents.Event{URL: "http://site.example/" + p, Size: 100, LMD: lmd, LPD: lpd, CID: cid, Stat: s}
}

// OpenBadger opens a Badger store in a temporary folder for the test and
// closes it when the test ends: the store the other packages' suites
// (frontier, peer table) run their tables on.
func OpenBadger(t testing.TB) *webevents.BadgerStore {
	t.Helper()
	st, err := webevents.OpenBadger(t.TempDir(), webevents.BadgerOptions{})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { st.Close() })
	return st
}

// Run runs every conformance test against stores made by open.
func Run(t *testing.T, open func(t *testing.T) webevents.Store) {
	tests := []struct {
		name string
		fn   func(*testing.T, webevents.Store)
	}{
		{"RecordGet", testRecordGet},
		{"DayLogOffsets", testDayLogOffsets},
		{"ReadDayFrom", testReadDayFrom},
		{"CurrentOrdered", testCurrentOrdered},
		{"MergeRules", testMergeRules},
		{"MergeSameURLInBatch", testMergeSameURLInBatch},
		{"CursorRoundTrip", testCursor},
		{"InvalidWritesNothing", testInvalid},
		{"LargeBatch", testLargeBatch},
		{"ConcurrentReadWrite", testConcurrent},
		{"Attribution", testAttribution},
		{"OwnPollWins", testOwnPollWins},
		{"Expire", testExpire},
		{"OriginDays", testOriginDays},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			s := open(t)
			tt.fn(t, s)
		})
	}
}

func must(t *testing.T, err error) {
	t.Helper()
	if err != nil {
		t.Fatal(err)
	}
}

func testRecordGet(t *testing.T, s webevents.Store) {
	e := Ev("a", webevents.Create, 800000000, "me:1 Me", 0)
	e.TTL, e.Digest, e.ETag = 60, "sha256:00ff", `"v1"`
	must(t, s.Record([]webevents.Event{e}))
	got, ok, err := s.Get(e.URL)
	must(t, err)
	if !ok || got != e {
		t.Fatalf("Get = %+v %v, want %+v", got, ok, e)
	}
	if _, ok, _ := s.Get("http://site.example/none"); ok {
		t.Fatal("Get of unknown URL found something")
	}
	if s.ID() == "" {
		t.Fatal("empty store ID")
	}
}

func testDayLogOffsets(t *testing.T, s webevents.Store) {
	var want []webevents.Event
	for i := range 20 {
		e := Ev(fmt.Sprintf("p%d", i), webevents.Create, 800000000+int64(i), "me:1 Me", int64(i%2))
		want = append(want, e)
	}
	must(t, s.Record(want[:7]))
	must(t, s.Record(want[7:]))
	for _, day := range []int64{Day0, Day0 + 1} {
		var off, n int64
		must(t, s.ReadDay(day, 0, func(o int64, e webevents.Event) error {
			if o != off {
				return fmt.Errorf("entry %d at offset %d, want %d", n, o, off)
			}
			if e.Day() != day {
				return fmt.Errorf("entry of day %d in log of day %d", e.Day(), day)
			}
			off += int64(webevents.RecordLen(&e))
			n++
			return nil
		}))
		info, ok, err := s.DayInfo(day)
		must(t, err)
		if !ok || info.Size != off || info.Records != n || n != 10 || info.Updated.IsZero() {
			t.Fatalf("DayInfo(%d) = %+v %v; log has %d entries, %d bytes", day, info, ok, n, off)
		}
	}
	if _, ok, _ := s.DayInfo(Day0 + 5); ok {
		t.Fatal("DayInfo of an empty day found something")
	}
}

func testReadDayFrom(t *testing.T, s webevents.Store) {
	var evs []webevents.Event
	for i := range 5 {
		evs = append(evs, Ev(fmt.Sprintf("r%d", i), webevents.Update, 800000000, "me:1 Me", 0))
	}
	must(t, s.Record(evs))
	l0 := int64(webevents.RecordLen(&evs[0]))
	info, _, _ := s.DayInfo(Day0)
	for _, tt := range []struct {
		from  int64
		first int64 // offset of the first entry returned, -1 for none
		count int
	}{
		{0, 0, 5}, {1, 0, 5}, {l0 - 1, 0, 5}, {l0, l0, 4}, {l0 + 3, l0, 4}, {info.Size - 1, info.Size - l0, 1}, {info.Size, -1, 0}, {info.Size + 100, -1, 0},
	} {
		first, n := int64(-1), 0
		must(t, s.ReadDay(Day0, tt.from, func(o int64, _ webevents.Event) error {
			if n == 0 {
				first = o
			}
			n++
			return nil
		}))
		if first != tt.first || n != tt.count {
			t.Errorf("ReadDay from %d: first %d count %d, want %d %d", tt.from, first, n, tt.first, tt.count)
		}
	}
}

func testCurrentOrdered(t *testing.T, s webevents.Store) {
	must(t, s.Record([]webevents.Event{
		Ev("b", webevents.Create, 800000000, "me:1 Me", 0),
		Ev("a", webevents.Create, 800000000, "me:1 Me", 0),
		Ev("b", webevents.Update, 800000100, "me:1 Me", 1),
	}))
	var urls []string
	must(t, s.Current(func(e webevents.Event) error {
		urls = append(urls, e.URL+":"+e.Stat.String())
		return nil
	}))
	if fmt.Sprint(urls) != "[http://site.example/a:C http://site.example/b:U]" {
		t.Fatalf("Current = %v", urls)
	}
	stop := errors.New("stop")
	if err := s.Current(func(webevents.Event) error { return stop }); !errors.Is(err, stop) {
		t.Fatalf("Current did not return fn's error: %v", err)
	}
}

func testMergeRules(t *testing.T, s webevents.Store) {
	const me, peer = "me:1 Me", "peer:1 Peer"
	must(t, s.Record([]webevents.Event{
		Ev("u", webevents.Update, 800000100, me, 0),
		Ev("c", webevents.Create, 800000200, me, 0),
		Ev("v", webevents.Create, 800000300, me, 0),
	}))
	before, _, _ := s.DayInfo(Day0)
	res, err := s.Merge([]webevents.Event{
		Ev("new", webevents.Update, 800000000, "third:1 T", 0), // unknown: mirrored, third cid kept
		Ev("u", webevents.Update, 800000050, peer, 0),          // older update: ignored
		Ev("c", webevents.Create, 800000100, peer, 0),          // earlier create: mine restated as U
		Ev("v", webevents.Update, 800000000, peer, 0),          // update before create: violation
	}, nil)
	must(t, err)
	if res.Accepted != 1 || res.Restated != 1 || res.Ignored != 2 || len(res.Polls) != 1 || res.Polls[0] != "http://site.example/v" {
		t.Fatalf("Merge = %+v", res)
	}
	got, _, _ := s.Get("http://site.example/new")
	if got.CID != "third:1 T" {
		t.Fatalf("merged cid = %q, want the first observer's", got.CID)
	}
	got, _, _ = s.Get("http://site.example/c")
	if got.Stat != webevents.Update || got.LMD != 800000200 || got.CID != me {
		t.Fatalf("restated = %+v", got)
	}
	after, _, _ := s.DayInfo(Day0)
	if after.Records != before.Records+1 {
		t.Fatalf("log grew by %d records, want 1 (restate is not logged)", after.Records-before.Records)
	}
}

func testMergeSameURLInBatch(t *testing.T, s webevents.Store) {
	res, err := s.Merge([]webevents.Event{
		Ev("x", webevents.Create, 800000000, "p:1 P", 0),
		Ev("x", webevents.Create, 800000100, "p:1 P", 0),
		Ev("x", webevents.Update, 800000050, "p:1 P", 0),
	}, nil)
	must(t, err)
	got, _, _ := s.Get("http://site.example/x")
	if res.Accepted != 2 || res.Ignored != 1 || got.Stat != webevents.Update || got.LMD != 800000100 ||
		res.ByStat != [3]int{1, 1, 0} {
		t.Fatalf("Merge = %+v, state %+v", res, got)
	}
}

func testCursor(t *testing.T, s webevents.Store) {
	if _, ok, err := s.Cursor("http://p/robots.shr"); ok || err != nil {
		t.Fatalf("cursor of unknown peer: %v %v", ok, err)
	}
	c := webevents.Cursor{Peer: "http://p/robots.shr", LastDay: Day0}
	c.SetMark(webevents.DayMark{Day: Day0, Offset: 42, ETag: `"x"`})
	_, err := s.Merge([]webevents.Event{Ev("k", webevents.Create, 800000000, "p:1 P", 0)}, &c)
	must(t, err)
	got, ok, err := s.Cursor(c.Peer)
	must(t, err)
	if !ok || got.LastDay != Day0 || got.Mark(Day0).Offset != 42 || got.Mark(Day0).ETag != `"x"` {
		t.Fatalf("cursor = %+v", got)
	}
}

func testInvalid(t *testing.T, s webevents.Store) {
	good := Ev("g", webevents.Create, 800000000, "me:1 Me", 0)
	bad := Ev("b", webevents.Create, 800000000, "me:1 Me", 0)
	bad.URL = "http://x/\nstat: D"
	if err := s.Record([]webevents.Event{good, bad}); err == nil {
		t.Fatal("Record accepted a URL with a line break")
	}
	if _, err := s.Merge([]webevents.Event{good, bad}, nil); err == nil {
		t.Fatal("Merge accepted a URL with a line break")
	}
	if _, ok, _ := s.Get(good.URL); ok {
		t.Fatal("a rejected batch was partly written")
	}
}

func testLargeBatch(t *testing.T, s webevents.Store) {
	const n = 60000 // more than one Badger transaction holds with small memtables
	evs := make([]webevents.Event, n)
	for i := range evs {
		evs[i] = Ev(fmt.Sprintf("big/%07d", i), webevents.Create, 800000000, "p:1 P", 0)
	}
	c := webevents.Cursor{Peer: "big", LastDay: Day0}
	res, err := s.Merge(evs, &c)
	must(t, err)
	info, _, _ := s.DayInfo(Day0)
	if res.Accepted != n || info.Records != n {
		t.Fatalf("accepted %d, logged %d, want %d", res.Accepted, info.Records, n)
	}
	if _, ok, _ := s.Cursor("big"); !ok {
		t.Fatal("cursor of a large batch not written")
	}
}

func testConcurrent(t *testing.T, s webevents.Store) {
	var wg sync.WaitGroup
	for w := range 4 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := range 50 {
				e := Ev(fmt.Sprintf("w%d/%d", w, i), webevents.Create, 800000000, "me:1 Me", 0)
				if w%2 == 0 {
					must(t, s.Record([]webevents.Event{e}))
				} else {
					_, err := s.Merge([]webevents.Event{e}, nil)
					must(t, err)
				}
				must(t, s.ReadDay(Day0, 0, func(int64, webevents.Event) error { return nil }))
			}
		}()
	}
	wg.Wait()
	info, _, _ := s.DayInfo(Day0)
	if info.Records != 200 {
		t.Fatalf("records = %d, want 200", info.Records)
	}
}

// testAttribution: a merge with a cursor attributes every record to the
// cursor's peer, in the current state and in the day log; Record clears
// any From, since what a peer polls itself is its own.
func testAttribution(t *testing.T, s webevents.Store) {
	const peer = "http://peer.example/robots.shr"
	own := Ev("own", webevents.Create, 100, "me", 0)
	own.From = "forged"
	must(t, s.Record([]webevents.Event{own}))
	merged := Ev("merged", webevents.Create, 100, "them", 0)
	if _, err := s.Merge([]webevents.Event{merged}, &webevents.Cursor{Peer: peer, LastDay: Day0}); err != nil {
		t.Fatal(err)
	}
	for url, want := range map[string]string{own.URL: "", merged.URL: peer} {
		e, ok, err := s.Get(url)
		if err != nil || !ok || e.From != want {
			t.Errorf("Get(%s).From = %q (ok %v, err %v), want %q", url, e.From, ok, err, want)
		}
	}
	var logged []string
	must(t, s.ReadDay(Day0, 0, func(_ int64, e webevents.Event) error {
		logged = append(logged, e.From)
		return nil
	}))
	if fmt.Sprint(logged) != fmt.Sprint([]string{"", peer}) {
		t.Errorf("day log From = %q, want own then %q", logged, peer)
	}
}

// testOwnPollWins: a merged record never replaces a state this peer's own
// poll saw at the same time or later, whatever lmd it claims; a merged
// record of a later poll still does.
func testOwnPollWins(t *testing.T, s webevents.Store) {
	own := Ev("p", webevents.Update, 100, "me", 0)
	must(t, s.Record([]webevents.Event{own}))
	lie := own
	lie.LMD, lie.LPD, lie.CID = own.LPD, own.LPD-1, "liar"
	del := lie
	del.Stat = webevents.Delete
	cur := &webevents.Cursor{Peer: "http://liar.example/robots.shr", LastDay: Day0}
	res, err := s.Merge([]webevents.Event{lie, del}, cur)
	if err != nil {
		t.Fatal(err)
	}
	if res.Accepted != 0 {
		t.Fatalf("merged records older than the own poll accepted: %+v", res)
	}
	later := own
	later.LMD, later.LPD, later.CID = own.LPD+10, own.LPD+20, "honest"
	if res, err = s.Merge([]webevents.Event{later}, cur); err != nil || res.Accepted != 1 {
		t.Fatalf("a later poll's record: %+v, %v; want accepted", res, err)
	}
	e, _, _ := s.Get(own.URL)
	if e.LMD != later.LMD || e.From != cur.Peer {
		t.Errorf("current = %+v, want the later record from %s", e, cur.Peer)
	}
}

// testExpire: retention drops the logs of days before the cut and the
// current states of URLs deleted before it, and nothing else.
func testExpire(t *testing.T, s webevents.Store) {
	for d := int64(0); d < 4; d++ {
		must(t, s.Record([]webevents.Event{
			Ev(fmt.Sprintf("live%d", d), webevents.Create, 800000000, "me:1 Me", d),
			Ev(fmt.Sprintf("gone%d", d), webevents.Delete, 800000000, "me:1 Me", d),
		}))
	}
	old := webevents.Cursor{Peer: "http://gone.example/robots.shr", LastDay: Day0, Updated: time.Unix(webevents.DayStart(Day0)+60, 0)}
	recent := webevents.Cursor{Peer: "http://here.example/robots.shr", LastDay: Day0 + 3, Updated: time.Unix(webevents.DayStart(Day0+3)+60, 0)}
	for _, c := range []webevents.Cursor{old, recent} {
		_, err := s.Merge(nil, &c)
		must(t, err)
	}
	x, err := s.Expire(Day0 + 2)
	must(t, err)
	if x.Days != 2 || x.Records != 4 || x.URLs != 2 || x.Cursors != 1 {
		t.Fatalf("expired %+v, want 2 days, 4 records, 2 URLs, 1 cursor", x)
	}
	if _, ok, _ := s.Cursor(old.Peer); ok {
		t.Error("the cursor of a peer not merged from since the cut was kept")
	}
	if _, ok, _ := s.Cursor(recent.Peer); !ok {
		t.Error("a recent cursor was dropped")
	}
	for d := int64(0); d < 4; d++ {
		_, ok, err := s.DayInfo(Day0 + d)
		must(t, err)
		n := 0
		must(t, s.ReadDay(Day0+d, 0, func(int64, webevents.Event) error { n++; return nil }))
		if kept := d >= 2; ok != kept || (n == 2) != kept {
			t.Errorf("day +%d: info %v, %d entries after expiring before day +2", d, ok, n)
		}
		_, live, _ := s.Get(Ev(fmt.Sprintf("live%d", d), webevents.Create, 0, "", d).URL)
		_, gone, _ := s.Get(Ev(fmt.Sprintf("gone%d", d), webevents.Delete, 0, "", d).URL)
		if !live || gone != (d >= 2) {
			t.Errorf("day +%d: live URL kept %v, deleted URL kept %v", d, live, gone)
		}
	}
	// Appending after an expiry still works, on kept and new days.
	must(t, s.Record([]webevents.Event{Ev("later", webevents.Create, 800000000, "me:1 Me", 3)}))
	if info, ok, _ := s.DayInfo(Day0 + 3); !ok || info.Records != 3 {
		t.Errorf("day +3 after an append: %+v", info)
	}
}

// testOriginDays: a day's records of one origin, read alone, are the day
// file filtered to that origin, with offsets of their own; records
// recorded and merged, in batches of many transactions, on two days.
func testOriginDays(t *testing.T, s webevents.Store) {
	origins := []string{"http://a.example", "https://A.example:8443", "http://b.example"}
	var own, merged []webevents.Event
	for i := range 3000 {
		e := Ev(fmt.Sprintf("p%d", i), webevents.Create, 800000000, "me:1 Me", int64(i%2))
		e.URL = origins[i%3] + fmt.Sprintf("/p%d?i=%d", i/3, i)
		if i%5 == 0 {
			e.CID = "peer:1 Other"
			merged = append(merged, e)
			continue
		}
		own = append(own, e)
	}
	must(t, s.Record(own[:1000]))
	_, err := s.Merge(merged, &webevents.Cursor{Peer: "http://peer.example/robots.shr"})
	must(t, err)
	must(t, s.Record(own[1000:]))
	for _, day := range []int64{Day0, Day0 + 1} {
		type entry struct {
			off int64
			e   webevents.Event
		}
		want := map[string][]entry{}
		size := map[string]int64{}
		must(t, s.ReadDay(day, 0, func(_ int64, e webevents.Event) error {
			o := webevents.Origin(e.URL)
			want[o] = append(want[o], entry{size[o], e})
			size[o] += int64(webevents.RecordLen(&e))
			return nil
		}))
		if len(want) != len(origins) {
			t.Fatalf("day %d: %d origins, want %d", day, len(want), len(origins))
		}
		for o, entries := range want {
			info, ok, err := s.OriginDayInfo(day, o)
			must(t, err)
			if !ok || info.Size != size[o] || info.Records != int64(len(entries)) || info.Updated.IsZero() {
				t.Errorf("OriginDayInfo(%d, %s) = %+v %v; the day has %d records of it, %d bytes", day, o, info, ok, len(entries), size[o])
			}
			for _, from := range []int64{0, entries[len(entries)/2].off + 1, size[o] - 1, size[o]} {
				var got []entry
				must(t, s.ReadOriginDay(day, o, from, func(off int64, e webevents.Event) error {
					got = append(got, entry{off, e})
					return nil
				}))
				i := 0
				for i < len(entries) && entries[i].off+int64(webevents.RecordLen(&entries[i].e)) <= from {
					i++
				}
				if len(got) != len(entries)-i {
					t.Fatalf("ReadOriginDay(%d, %s, %d): %d records, want %d", day, o, from, len(got), len(entries)-i)
				}
				for j := range got {
					if got[j] != entries[i+j] {
						t.Fatalf("ReadOriginDay(%d, %s, %d): record %d is %+v, want %+v", day, o, from, j, got[j], entries[i+j])
					}
				}
			}
		}
		if _, ok, err := s.OriginDayInfo(day, "http://c.example"); ok || err != nil {
			t.Errorf("OriginDayInfo of an origin without records: %v %v", ok, err)
		}
	}
	if got := webevents.Origin("HTTPS://A.example:8443/x"); got != "https://a.example:8443" {
		t.Errorf("Origin = %q", got)
	}
	x, err := s.Expire(Day0 + 1)
	must(t, err)
	if x.Days != 1 {
		t.Fatalf("expired %+v", x)
	}
	if _, ok, err := s.OriginDayInfo(Day0, "http://a.example"); ok || err != nil {
		t.Errorf("an expired day's origin: %v %v", ok, err)
	}
	n := 0
	must(t, s.ReadOriginDay(Day0, "http://a.example", 0, func(int64, webevents.Event) error { n++; return nil }))
	if n != 0 {
		t.Errorf("an expired day's origin: %d records", n)
	}
}
