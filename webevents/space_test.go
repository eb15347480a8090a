package webevents

import (
	"errors"
	"testing"
	"time"
)

// Issue 18, item 10: on a nearly full disk writes are refused with
// ErrNoSpace before Badger can grow a memory-mapped file the disk cannot
// back (SIGBUS); what is stored stays, and writes resume with space.
func TestWritesRefusedOnAFullDisk(t *testing.T) {
	s, err := OpenBadger(t.TempDir(), BadgerOptions{indexEvery: time.Hour})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	if s.space == nil {
		t.Skip("no free-space guard on this system")
	}
	free := uint64(1 << 40)
	s.space.free = func(string) (uint64, error) { return free, nil }
	e := Event{URL: "http://a.example/", CID: "c", Stat: Create, LMD: 1_700_000_000, LPD: 1_700_000_000}
	if err := s.Record([]Event{e}); err != nil {
		t.Fatal(err)
	}
	free = 10 << 20
	e2 := e
	e2.URL = "http://b.example/"
	if err := s.Record([]Event{e2}); !errors.Is(err, ErrNoSpace) {
		t.Fatalf("a write with 10 MiB free: %v", err)
	}
	if _, err := s.Merge([]Event{e2}, nil); !errors.Is(err, ErrNoSpace) {
		t.Fatalf("a merge with 10 MiB free: %v", err)
	}
	if err := s.Table(TableFrontier).Put(Entry{Key: "k", Value: []byte("v")}, Entry{Key: "l", Value: []byte("w")}); !errors.Is(err, ErrNoSpace) {
		t.Fatalf("a table write with 10 MiB free: %v", err)
	}
	if _, ok, _ := s.Get(e.URL); !ok {
		t.Fatal("what was stored before is gone")
	}
	// The origin index, behind the day log, cannot catch up: a reader
	// is told to filter the whole day, and the failure is counted.
	if _, _, err := s.OriginDayInfo(e.Day(), "http://a.example"); !errors.Is(err, ErrDayNotIndexed) || !errors.Is(err, ErrNoSpace) {
		t.Fatalf("an origin's day with its index behind on a full disk: %v", err)
	}
	if s.IndexFailures() == 0 {
		t.Error("the index's failed pass was not counted")
	}
	free = 1 << 40
	if info, ok, err := s.OriginDayInfo(e.Day(), "http://a.example"); err != nil || !ok || info.Records != 1 {
		t.Fatalf("an origin's day once there is room: %+v %v %v", info, ok, err)
	}
	if err := s.Record([]Event{e2}); err != nil {
		t.Fatalf("writes did not resume with space: %v", err)
	}
}
