package webevents

import (
	"fmt"
	"testing"
	"time"
)

// The day infos a write keeps for the next (dayInfos) are what the store
// holds: across Records and Merges, and after an expiry drops their day.
func TestDayInfosAcrossWritesAreTheStores(t *testing.T) {
	s, err := OpenBadger(t.TempDir(), BadgerOptions{indexEvery: time.Hour}) // the test reads the index's cache
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	const day = 20000
	n := 0
	ev := func(origin string, d int64) Event {
		n++
		return Event{URL: fmt.Sprintf("http://%s.example/%d", origin, n), Size: 1, LMD: DayStart(d), LPD: DayStart(d) + 60,
			CID: "c.example:1 C/1", Stat: Create}
	}
	check := func(when string, d int64, records, a, b int64) {
		t.Helper()
		if got, _, err := s.DayInfo(d); err != nil || got.Records != records {
			t.Errorf("%s: day %d holds %d records (%v), want %d", when, d, got.Records, err, records)
		}
		for origin, want := range map[string]int64{"http://a.example": a, "http://b.example": b} {
			if got, _, err := s.OriginDayInfo(d, origin); err != nil || got.Records != want {
				t.Errorf("%s: %s's day %d holds %d records (%v), want %d", when, origin, d, got.Records, err, want)
			}
		}
	}
	for range 3 {
		if err := s.Record([]Event{ev("a", day), ev("b", day), ev("a", day)}); err != nil {
			t.Fatal(err)
		}
	}
	check("three records", day, 9, 6, 3)
	if _, err := s.Merge([]Event{ev("b", day), ev("b", day+1)}, nil); err != nil {
		t.Fatal(err)
	}
	check("a merge", day, 10, 6, 4)
	check("a merge", day+1, 1, 0, 1)
	if _, err := s.Expire(day + 1); err != nil {
		t.Fatal(err)
	}
	if err := s.Record([]Event{ev("a", day), ev("b", day+1)}); err != nil {
		t.Fatal(err)
	}
	check("after the day's expiry", day, 1, 1, 0)
	check("after the day's expiry", day+1, 2, 0, 2)
	if len(s.infos.days) != 2 || len(s.index.cache) != 2 {
		t.Errorf("kept %d days and %d origins' days, want 2 and 2 (an expiry forgets the rest)", len(s.infos.days), len(s.index.cache))
	}
	// A call whose commits did not all succeed leaves nothing kept.
	s.infos.keep(s.newWriter(), false)
	if s.infos.days != nil {
		t.Errorf("a failed write kept %d days", len(s.infos.days))
	}
	if err := s.Record([]Event{ev("a", day)}); err != nil {
		t.Fatal(err)
	}
	check("read again", day, 2, 2, 0)
}
