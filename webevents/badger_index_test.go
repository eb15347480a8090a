package webevents

import (
	"errors"
	"fmt"
	"testing"
	"time"

	"github.com/dgraph-io/badger/v4"
)

const indexTestDay = 20000

// The tests open their stores with passes an hour apart, so that only
// their own calls (a read, indexPending, a close) index.

func indexTestEvent(origin string, i int) Event {
	return Event{URL: fmt.Sprintf("http://%s.example/%d", origin, i), Size: int64(i), LMD: 800000000,
		LPD: DayStart(indexTestDay) + int64(i), CID: "c.example:1 C/1", Stat: Create}
}

// keysUnder counts the store's keys under prefix.
func keysUnder(t *testing.T, s *BadgerStore, prefix []byte) int {
	t.Helper()
	n := 0
	err := s.db.View(func(txn *badger.Txn) error {
		it := txn.NewIterator(badger.IteratorOptions{Prefix: prefix})
		defer it.Close()
		for it.Rewind(); it.Valid(); it.Next() {
			n++
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	return n
}

// checkOriginLog reads origin's log of the index test's day and compares
// it with want, records and offsets.
func checkOriginLog(t *testing.T, s *BadgerStore, origin string, want []Event) {
	t.Helper()
	info, ok, err := s.OriginDayInfo(indexTestDay, origin)
	var size int64
	for i := range want {
		size += int64(RecordLen(&want[i]))
	}
	if err != nil || ok != (len(want) > 0) || info.Records != int64(len(want)) || info.Size != size {
		t.Fatalf("%s: info %+v %v %v, want %d records of %d bytes", origin, info, ok, err, len(want), size)
	}
	var got []Event
	var next int64
	err = s.ReadOriginDay(indexTestDay, origin, 0, func(off int64, e Event) error {
		if off != next {
			t.Errorf("%s: record %d at %d, want %d", origin, len(got), off, next)
		}
		next += int64(RecordLen(&e))
		got = append(got, e)
		return nil
	})
	if err != nil || len(got) != len(want) {
		t.Fatalf("%s: read %d records (%v), want %d", origin, len(got), err, len(want))
	}
	for i := range got {
		if got[i] != want[i] {
			t.Fatalf("%s: record %d is %+v, want %+v", origin, i, got[i], want[i])
		}
	}
}

// followOrigin reads origin's records of the test day as a live stream
// does, the indexed ones (ReadOriginDayIndexed) and then the day log's
// past them, checks them against want, records and offsets, and checks
// that the read did not make the index catch up.
func followOrigin(t *testing.T, s *BadgerStore, origin string, want []Event) {
	t.Helper()
	before := s.IndexCatchUps()
	var got []Event
	var next int64
	add := func(off int64, e Event) error {
		if off != next {
			t.Errorf("%s followed: record %d at %d, want %d", origin, len(got), off, next)
		}
		next += int64(RecordLen(&e))
		got = append(got, e)
		return nil
	}
	info, through, err := s.ReadOriginDayIndexed(indexTestDay, origin, 0, add)
	if err != nil || next != info.Size || info.Records != int64(len(got)) {
		t.Fatalf("%s: indexed records end at %d, info %+v (%v)", origin, next, info, err)
	}
	indexed := len(got)
	err = s.ReadDay(indexTestDay, through, func(off int64, e Event) error {
		if off < through || Origin(e.URL) != origin {
			return nil
		}
		return add(next, e)
	})
	if err != nil || len(got) != len(want) {
		t.Fatalf("%s followed: %d records (%d indexed, %v), want %d", origin, len(got), indexed, err, len(want))
	}
	for i := range got {
		if got[i] != want[i] {
			t.Fatalf("%s followed: record %d is %+v, want %+v", origin, i, got[i], want[i])
		}
	}
	if n := s.IndexCatchUps() - before; n != 0 {
		t.Errorf("%s: following the day ran %d passes of the index", origin, n)
	}
	if indexed > 0 { // fn's error comes back as it is (a reader stops with its own)
		stop := errors.New("stop")
		if _, _, err := s.ReadOriginDayIndexed(indexTestDay, origin, 0, func(int64, Event) error { return stop }); err != stop {
			t.Errorf("%s: a read that fn stopped returned %v", origin, err)
		}
	}
	// From a record inside the indexed part: that record on.
	if indexed > 1 {
		from := int64(RecordLen(&want[0]))
		var first Event
		n := 0
		if _, _, err := s.ReadOriginDayIndexed(indexTestDay, origin, from, func(_ int64, e Event) error {
			if n++; n == 1 {
				first = e
			}
			return nil
		}); err != nil || n != indexed-1 || first != want[1] {
			t.Errorf("%s: from its second record, %d indexed records (%v), the first %+v", origin, n, err, first)
		}
	}
}

// The index runs behind the day log: writes leave it alone, and a pass
// (here a reader's) writes each origin's records of many commits as one
// block.
func TestOriginIndexGathersCommits(t *testing.T) {
	s, err := OpenBadger(t.TempDir(), BadgerOptions{indexEvery: time.Hour})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	var a, b []Event
	for i := range 20 {
		a = append(a, indexTestEvent("a", i))
		b = append(b, indexTestEvent("b", i))
		if err := s.Record([]Event{a[i], b[i]}); err != nil {
			t.Fatal(err)
		}
	}
	if n := keysUnder(t, s, prefixOrigin); n != 0 {
		t.Fatalf("%d origin blocks written with the commits, want none before a pass", n)
	}
	followOrigin(t, s, "http://a.example", a) // all of it from the day log
	checkOriginLog(t, s, "http://a.example", a)
	if n := keysUnder(t, s, prefixOrigin); n != 2 {
		t.Errorf("%d origin blocks after one pass over 20 commits, want 2 (one an origin)", n)
	}
	checkOriginLog(t, s, "http://b.example", b)
	// More writes, and the background pass that a close runs.
	for i := 20; i < 25; i++ {
		a = append(a, indexTestEvent("a", i))
		if err := s.Record(a[i:]); err != nil {
			t.Fatal(err)
		}
	}
	followOrigin(t, s, "http://a.example", a) // its index, then the day log
	followOrigin(t, s, "http://c.example", nil)
	if err := s.indexPending(); err != nil {
		t.Fatal(err)
	}
	if n := keysUnder(t, s, prefixOrigin); n != 3 {
		t.Errorf("%d origin blocks after a second pass, want 3", n)
	}
	if len(s.index.pending) != 0 {
		t.Errorf("days still pending after a pass: %v", s.index.pending)
	}
	checkOriginLog(t, s, "http://a.example", a)
}

// A pass stopped after some origins' infos were written, but before the
// mark moved (a crash), is run again from the mark without indexing any
// record twice, and indexes the origins it had not reached.
func TestOriginIndexPassStoppedBeforeTheMark(t *testing.T) {
	dir := t.TempDir()
	s, err := OpenBadger(dir, BadgerOptions{indexEvery: time.Hour})
	if err != nil {
		t.Fatal(err)
	}
	var a, b []Event
	for i := range 10 {
		a = append(a, indexTestEvent("a", i))
		b = append(b, indexTestEvent("b", i))
	}
	if err := s.Record(append(append([]Event{}, a[:5]...), b[:5]...)); err != nil {
		t.Fatal(err)
	}
	if err := s.indexPending(); err != nil {
		t.Fatal(err)
	}
	var mark []byte
	err = s.db.View(func(txn *badger.Txn) error {
		it, err := txn.Get(indexMarkKey(indexTestDay))
		if err == nil {
			mark, err = it.ValueCopy(nil)
		}
		return err
	})
	if err != nil {
		t.Fatal(err)
	}
	if err := s.Record(append(append([]Event{}, a[5:]...), b[5:]...)); err != nil {
		t.Fatal(err)
	}
	var bInfo []byte // b's info before the second pass
	err = s.db.View(func(txn *badger.Txn) error {
		it, err := txn.Get(originDayKey(indexTestDay, "http://b.example"))
		if err == nil {
			bInfo, err = it.ValueCopy(nil)
		}
		return err
	})
	if err != nil {
		t.Fatal(err)
	}
	if err := s.indexPending(); err != nil {
		t.Fatal(err)
	}
	var bi originInfo
	if err := decodeOriginInfo(bInfo, &bi); err != nil {
		t.Fatal(err)
	}
	// What a crash could leave: a's second block and info written, b's
	// not, and the mark where the second pass began.
	err = s.db.Update(func(txn *badger.Txn) error {
		if err := txn.Set(indexMarkKey(indexTestDay), mark); err != nil {
			return err
		}
		if err := txn.Set(originDayKey(indexTestDay, "http://b.example"), bInfo); err != nil {
			return err
		}
		return txn.Delete(originLogKey(indexTestDay, "http://b.example", bi.Size))
	})
	if err != nil {
		t.Fatal(err)
	}
	s.index.cache = nil // the process that crashed took its cache along
	// A follower takes a's records through its info's offset from the
	// index, and b's from the mark, each record once.
	followOrigin(t, s, "http://a.example", a)
	followOrigin(t, s, "http://b.example", b)
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	s, err = OpenBadger(dir, BadgerOptions{indexEvery: time.Hour})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	checkOriginLog(t, s, "http://a.example", a)
	checkOriginLog(t, s, "http://b.example", b)
}

// A day an older build indexed with each commit (its empty mark, its
// origins' 24-byte infos) goes on behind the log from its size, and loses
// the old mark, which an older build would take for an index up to date.
func TestOriginIndexGoesOnFromAnOlderBuildsDay(t *testing.T) {
	s, err := OpenBadger(t.TempDir(), BadgerOptions{indexEvery: time.Hour})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	first := indexTestEvent("a", 0)
	rec := appendBinary(nil, &first)
	n := int64(RecordLen(&first))
	info := DayInfo{Day: indexTestDay, Size: n, Records: 1}
	err = s.db.Update(func(txn *badger.Txn) error {
		for k, v := range map[string][]byte{
			string(logKey(indexTestDay, 0)):                           appendToBlock(nil, rec),
			string(dayKey(indexTestDay)):                              encodeDayInfo(&info),
			string(originDayKey(indexTestDay, "")):                    {},
			string(originLogKey(indexTestDay, "http://a.example", 0)): appendToBlock(nil, rec),
			string(originDayKey(indexTestDay, "http://a.example")):    encodeDayInfo(&info),
		} {
			if err := txn.Set([]byte(k), v); err != nil {
				return err
			}
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	followOrigin(t, s, "http://a.example", []Event{first}) // the old index holds all the day
	more := []Event{indexTestEvent("a", 1), indexTestEvent("b", 2)}
	if err := s.Record(more); err != nil {
		t.Fatal(err)
	}
	followOrigin(t, s, "http://a.example", []Event{first, more[0]})
	checkOriginLog(t, s, "http://a.example", []Event{first, more[0]})
	checkOriginLog(t, s, "http://b.example", more[1:])
	if n := keysUnder(t, s, originDayKey(indexTestDay, "")); n != 3 {
		t.Errorf("%d keys under the day's i/, want 3 (two infos and the new mark)", n)
	}
}

// A day not indexed by origin is said to be so to a follower, which then
// filters the whole day; a day that does not exist is empty.
func TestReadOriginDayIndexedOfADayNotIndexed(t *testing.T) {
	s, err := OpenBadger(t.TempDir(), BadgerOptions{noOriginIndex: true})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	if err := s.Record([]Event{indexTestEvent("a", 0)}); err != nil {
		t.Fatal(err)
	}
	if _, _, err := s.ReadOriginDayIndexed(indexTestDay, "http://a.example", 0, func(int64, Event) error { return nil }); !errors.Is(err, ErrDayNotIndexed) {
		t.Errorf("a day not indexed: %v, want ErrDayNotIndexed", err)
	}
	if info, through, err := s.ReadOriginDayIndexed(indexTestDay+1, "http://a.example", 0, nil); info.Size != 0 || through != 0 || err != nil {
		t.Errorf("a day that does not exist: %+v %d %v", info, through, err)
	}
}
