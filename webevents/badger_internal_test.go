package webevents

import (
	"bytes"
	"errors"
	"expvar"
	"fmt"
	"log/slog"
	"strings"
	"testing"
	"time"

	badger "github.com/dgraph-io/badger/v4"
)

// A store written before blocks holds one event per day-log key; it reads
// on, and new records append blocks after the old entries.
func TestDayLogOfOneEventPerKey(t *testing.T) {
	s, err := OpenBadger(t.TempDir(), BadgerOptions{})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	const day = 20000
	ev := func(p string) Event {
		return Event{URL: "http://old.example/" + p, Size: 1, LMD: 800000000, LPD: DayStart(day) + 60, CID: "c", Stat: Create}
	}
	old := []Event{ev("a"), ev("b")}
	info := DayInfo{Day: day}
	err = s.db.Update(func(txn *badger.Txn) error {
		for i := range old {
			if err := txn.Set(logKey(day, info.Size), appendBinary(nil, &old[i])); err != nil {
				return err
			}
			info.Size += int64(RecordLen(&old[i]))
			info.Records++
		}
		return txn.Set(dayKey(day), encodeDayInfo(&info))
	})
	if err != nil {
		t.Fatal(err)
	}
	if err := s.Record([]Event{ev("c"), ev("d")}); err != nil {
		t.Fatal(err)
	}
	var got []string
	var next int64
	err = s.ReadDay(day, 0, func(off int64, e Event) error {
		if off != next {
			t.Errorf("%s at offset %d, want %d", e.URL, off, next)
		}
		next = off + int64(RecordLen(&e))
		got = append(got, e.URL[len("http://old.example/"):])
		return nil
	})
	if err != nil || len(got) != 4 || got[0] != "a" || got[3] != "d" {
		t.Fatalf("read %v, %v", got, err)
	}
	got = nil
	l := int64(RecordLen(&old[0]))
	if err := s.ReadDay(day, l+1, func(_ int64, e Event) error { got = append(got, e.URL); return nil }); err != nil || len(got) != 3 {
		t.Fatalf("from inside the second old entry: %v, %v", got, err)
	}
}

func TestSizesFor(t *testing.T) {
	for _, c := range []struct {
		free         uint64
		memtable     int64
		fits         bool
		maxNeedShare float64
	}{
		{10 << 30, 32 << 20, true, 0.05},
		{416 << 20, 32 << 20, true, 0.5},
		{300 << 20, 16 << 20, true, 0.4},
		{100 << 20, 4 << 20, true, 0.4},
		{32 << 20, 2 << 20, true, 0.5},
		{14 << 20, 0, true, 0.6},
		{6 << 20, 0, false, 2},
	} {
		sz, fits := sizesFor(c.free)
		if fits != c.fits || c.memtable != 0 && sz.memtable != c.memtable || float64(sz.need()) > c.maxNeedShare*float64(c.free) {
			t.Errorf("%d MiB free: memtable %d MiB, need %d MiB, fits %v", c.free>>20, sz.memtable>>20, sz.need()>>20, fits)
		}
	}
}

// A day an older build began has no origin index: records appended to it
// later are not indexed either (the index would miss the first ones), and
// OriginDayInfo says so, so that a reader filters the whole day instead.
// A day begun now is indexed.
func TestDayBegunBeforeTheOriginIndex(t *testing.T) {
	s, err := OpenBadger(t.TempDir(), BadgerOptions{})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	const day = 20000
	ev := func(p string, d int64) Event {
		return Event{URL: "http://old.example/" + p, Size: 1, LMD: 800000000, LPD: DayStart(d) + 60, CID: "c", Stat: Create}
	}
	first := ev("a", day)
	info := DayInfo{Day: day, Size: int64(RecordLen(&first)), Records: 1}
	err = s.db.Update(func(txn *badger.Txn) error {
		if err := txn.Set(logKey(day, 0), appendToBlock(nil, appendBinary(nil, &first))); err != nil {
			return err
		}
		return txn.Set(dayKey(day), encodeDayInfo(&info))
	})
	if err != nil {
		t.Fatal(err)
	}
	if err := s.Record([]Event{ev("b", day), ev("c", day+1)}); err != nil {
		t.Fatal(err)
	}
	if _, _, err := s.OriginDayInfo(day, "http://old.example"); !errors.Is(err, ErrDayNotIndexed) {
		t.Errorf("OriginDayInfo of a day begun unindexed: %v, want ErrDayNotIndexed", err)
	}
	n := 0
	if err := s.ReadOriginDay(day, "http://old.example", 0, func(int64, Event) error { n++; return nil }); err != nil || n != 0 {
		t.Errorf("ReadOriginDay of a day begun unindexed: %d records, %v", n, err)
	}
	if got, ok, err := s.OriginDayInfo(day+1, "http://old.example"); err != nil || !ok || got.Records != 1 {
		t.Errorf("OriginDayInfo of a day begun now: %+v %v %v", got, ok, err)
	}
	if _, ok, err := s.OriginDayInfo(day+2, "http://old.example"); err != nil || ok {
		t.Errorf("OriginDayInfo of a day without records: %v %v", ok, err)
	}
}

// Of Badger's info messages the store keeps its write stalls (a warning
// when one lasted over a second, the total at the close when not zero)
// and drops the rest.
func TestBadgerLoggerKeepsWriteStalls(t *testing.T) {
	var buf bytes.Buffer
	lg := badgerLogger{slog.New(slog.NewTextHandler(&buf, &slog.HandlerOptions{Level: slog.LevelInfo}))}
	lg.Infof("L0 was stalled for %s\n", 1500*time.Millisecond)
	lg.Infof("Lifetime L0 stalled for: %s\n", 2*time.Second)
	lg.Infof("Lifetime L0 stalled for: %s\n", time.Duration(0))
	lg.Infof("[Compactor: %d] Compaction for level: %d DONE", 0, 1)
	lg.Debugf("flushed a table")
	out := buf.String()
	if !strings.Contains(out, "level=WARN") || !strings.Contains(out, "L0 was stalled for 1.5s") ||
		!strings.Contains(out, "Lifetime L0 stalled for: 2s") || strings.Contains(out, "for: 0s") || strings.Contains(out, "Compaction") {
		t.Errorf("logged:\n%s", out)
	}
}

// The compaction counter is Badger's own expvar map: a Badger that renamed
// it would leave `measure scale`'s samples and BenchmarkCrawlLoadLevelZero
// at 0 without this.
func TestCompactionCounterIsBadgers(t *testing.T) {
	s, err := OpenBadger(t.TempDir(), BadgerOptions{})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	if _, ok := expvar.Get(badgerCompactionWritten).(*expvar.Map); !ok {
		t.Fatalf("Badger registers no expvar map %q", badgerCompactionWritten)
	}
}

// A store opened without the origin index (to measure what it costs)
// writes no o/ or i/ key, and says its days are not indexed, so that a
// reader filters the whole day as for a day an older build began.
func TestStoreWithoutOriginIndex(t *testing.T) {
	s, err := OpenBadger(t.TempDir(), BadgerOptions{noOriginIndex: true})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	const day = 20000
	var events []Event
	for _, p := range []string{"a", "b", "c"} {
		events = append(events, Event{URL: "http://site.example/" + p, Size: 1, LMD: 800000000, LPD: DayStart(day) + 60, CID: "c", Stat: Create})
	}
	if err := s.Record(events); err != nil {
		t.Fatal(err)
	}
	if _, _, err := s.OriginDayInfo(day, "http://site.example"); !errors.Is(err, ErrDayNotIndexed) {
		t.Errorf("OriginDayInfo: %v, want ErrDayNotIndexed", err)
	}
	for _, prefix := range [][]byte{prefixOrigin, prefixOrgDay} {
		if n := keysUnder(t, s, prefix); n != 0 {
			t.Errorf("%d keys under %s, want none", n, prefix)
		}
	}
	n := 0
	if err := s.ReadDay(day, 0, func(int64, Event) error { n++; return nil }); err != nil || n != 3 {
		t.Errorf("the day itself: %d records (%v), want 3", n, err)
	}
}

// What a store's writes put in its tree grows, and its compactions'
// bytes by level add up to their total: a store of 1 MiB memtables
// written 24 MB of small values flushes tables to level 0 and compacts
// them into a level below.
func TestCompactedBytesByLevel(t *testing.T) {
	before, putBefore := CompactedBytesByLevel(), TreeWrittenBytes()
	s, err := OpenBadger(t.TempDir(), BadgerOptions{MemTableSize: 1 << 20})
	if err != nil {
		t.Fatal(err)
	}
	closed := false
	defer func() {
		if !closed {
			s.Close()
		}
	}()
	table := s.Table(TableFrontier)
	value := []byte(strings.Repeat("v", 40)) // under the value threshold: in the tree
	var after [TreeLevels]int64
	for round := 0; round < 60; round++ {
		if err := table.Batch(func(b *TableBatch) error {
			for i := range 5000 {
				if err := b.Set(fmt.Sprintf("k%08d", (round*5000+i)*7919%300000), value); err != nil {
					return err
				}
			}
			return nil
		}); err != nil {
			t.Fatal(err)
		}
		if after = CompactedBytesByLevel(); sumBelowZero(after) > sumBelowZero(before) && round >= 20 {
			break
		}
	}
	if put := TreeWrittenBytes() - putBefore; put < 20*5000*40 {
		t.Errorf("the writes put %d bytes in the tree, want at least their values' %d", put, 20*5000*40)
	}
	if sumBelowZero(after) <= sumBelowZero(before) {
		t.Fatalf("no compaction wrote to a level below 0 (%v, %v before)", after, before)
	}
	closed = true
	if err := s.Close(); err != nil { // its compactions done, the counts stay
		t.Fatal(err)
	}
	// Every counter of Badger's is a level the split knows.
	var all int64
	expvar.Get(badgerCompactionWritten).(*expvar.Map).Do(func(kv expvar.KeyValue) {
		all += kv.Value.(*expvar.Int).Value()
	})
	if got := CompactedBytes(); got != all {
		t.Errorf("the levels' compactions wrote %d bytes, Badger's counters %d", got, all)
	}
}

func sumBelowZero(by [TreeLevels]int64) (n int64) {
	for _, b := range by[1:] {
		n += b
	}
	return n
}
