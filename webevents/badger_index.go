package webevents

import (
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"log/slog"
	"maps"
	"slices"
	"sync"
	"sync/atomic"
	"time"

	"github.com/dgraph-io/badger/v4"
)

// The origin index serves a day file filtered to one site (spec 7.7): each
// origin's records of a day, as blocks under o/, and its info under i/. It
// is written behind the day log rather than with it. A crawl's commit of a
// few hundred records touches most of its thousands of origins once, so an
// index written with each commit was a block and an info per record or
// two, and those small keys were most of what Badger's compactions
// rewrote (BenchmarkCrawlLoadOriginIndex: 977 against 581 bytes compacted
// a poll without the index). Behind the log, an origin's block gathers
// what some seconds of commits wrote of it.
//
// A pass reads the day log from the day's mark (indexMarkKey: every record
// below it is indexed), appends each record to its origin's log, and moves
// the mark to where it stopped. It runs every indexEvery, sooner when the
// writers got indexWake bytes ahead, at the close, and before every read
// of the index that finds the mark behind the day's size: a reader never
// sees the lag. A pass writes in as many transactions as Badger needs,
// each origin's blocks before its info and every info before the mark;
// an info carries the offset the pass ran through, so that a pass that
// stopped between them (a crash) is run again from the mark without
// indexing a record twice.
type originIndex struct {
	mu sync.Mutex // one pass at a time; an expiry holds it too
	// cache holds the origins' infos as the passes left them, under mu,
	// so a pass reads none back; emptied when a pass fails to write.
	cache map[originDay]originInfo
	// pending holds the days written since their last pass, each with a
	// count bumped at every write call: a pass forgets a day only when
	// no write came while it ran. Under pendMu.
	pendMu  sync.Mutex
	pending map[int64]uint64
	behind  int64 // bytes written since the last pass began
	wake    chan struct{}
	done    chan struct{}
	failed  atomic.Int64 // passes that failed, for the store's metrics
	// catchUps counts the passes a reader ran (catchUp) because it found
	// the index behind its log.
	catchUps atomic.Int64
	lg       *slog.Logger
}

type originDay struct {
	day    int64
	origin string
}

// originInfo is an origin's day info, with the day-log offset its index
// runs through.
type originInfo struct {
	DayInfo
	through int64
}

const (
	// indexEvery is how long a record may wait for its origin's block:
	// at 4,000 polls a second over 6,000 hosts, an origin's block of ten
	// seconds holds about seven records.
	indexEvery = 10 * time.Second
	// indexWake is how far the writers may get ahead of the index before
	// a pass starts early.
	indexWake = 16 << 20
	// maxIndexStep bounds the day log a pass holds in memory at once.
	maxIndexStep = 32 << 20
	// maxCachedOrigins bounds the infos cached (about 150 bytes each):
	// past it the cache starts again empty, and a pass reads what it
	// needs from the store.
	maxCachedOrigins = 1 << 17
)

// wrote notes the days a write call touched; the call's commits are done,
// applied or failed.
func (ix *originIndex) wrote(w *writer) {
	if len(w.days) == 0 {
		return
	}
	ix.pendMu.Lock()
	if ix.pending == nil {
		ix.pending = map[int64]uint64{}
	}
	for day := range w.days {
		ix.pending[day]++
	}
	ix.behind += w.written
	wake := ix.behind >= indexWake
	ix.pendMu.Unlock()
	if wake {
		select {
		case ix.wake <- struct{}{}:
		default:
		}
	}
}

// indexLoop runs the passes, every every, until ctx ends.
func (s *BadgerStore) indexLoop(ctx context.Context, every time.Duration) {
	defer close(s.index.done)
	t := time.NewTicker(every)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		case <-s.index.wake:
		}
		s.indexPending() // a failure is logged and counted; the day stays pending
	}
}

// indexPending brings every day written since its last pass up to date.
func (s *BadgerStore) indexPending() error {
	ix := &s.index
	ix.pendMu.Lock()
	days := maps.Clone(ix.pending)
	ix.behind = 0
	ix.pendMu.Unlock()
	ix.mu.Lock()
	defer ix.mu.Unlock()
	var errs []error
	for _, day := range slices.Sorted(maps.Keys(days)) {
		if err := s.indexDay(day); err != nil {
			ix.failed.Add(1)
			ix.lg.Warn("the origin index of a day is behind its log; readers will retry", "day", day, "err", err)
			errs = append(errs, err)
			continue
		}
		ix.pendMu.Lock()
		if ix.pending[day] == days[day] {
			delete(ix.pending, day)
		}
		ix.pendMu.Unlock()
	}
	return errors.Join(errs...)
}

// catchUp brings day's origin index up to the day log when a reader finds
// it behind.
func (s *BadgerStore) catchUp(day int64) error {
	behind := false
	err := s.db.View(func(txn *badger.Txn) error {
		mark, ok, err := getIndexMark(txn, day)
		if err != nil || !ok {
			return err
		}
		var d DayInfo
		ok, err = getDayInfo(txn, day, &d)
		behind = ok && mark < d.Size
		return err
	})
	if err != nil || !behind {
		return err
	}
	s.index.mu.Lock()
	defer s.index.mu.Unlock()
	s.index.catchUps.Add(1)
	if err := s.indexDay(day); err != nil {
		s.index.failed.Add(1)
		return err
	}
	return nil
}

// indexDay brings day's origin index up to its log as it is now, in steps
// of at most maxIndexStep bytes. The caller holds index.mu.
func (s *BadgerStore) indexDay(day int64) error {
	for {
		done, err := s.indexStep(day)
		if err != nil {
			return fmt.Errorf("webevents: index day %d by origin: %w", day, err)
		}
		if done {
			return nil
		}
	}
}

var errStepFull = errors.New("index step full")

// indexStep indexes what one step of the day log holds past the mark, and
// says whether it reached the day's end.
func (s *BadgerStore) indexStep(day int64) (bool, error) {
	ix := &s.index
	snap := s.db.NewTransaction(false)
	defer snap.Discard()
	mark, ok, err := getIndexMark(snap, day)
	if err != nil || !ok {
		return true, err
	}
	var d DayInfo
	if ok, err := getDayInfo(snap, day, &d); err != nil || !ok {
		return true, err
	}
	if mark >= d.Size {
		return true, nil
	}
	if len(ix.cache) > maxCachedOrigins || ix.cache == nil {
		ix.cache = map[originDay]originInfo{}
	}
	type originStep struct {
		info   originInfo
		blocks []*logBlock
	}
	step := map[string]*originStep{}
	end := mark
	err = readLogRecords(snap, logKey(day, 0)[:len(prefixLog)+4], mark, func(off int64, rec []byte, e Event) error {
		if off-mark >= maxIndexStep {
			return errStepFull
		}
		n := int64(RecordLen(&e))
		end = off + n
		o := Origin(e.URL)
		if o == "" {
			return nil
		}
		st := step[o]
		if st == nil {
			info, err := ix.info(snap, originDay{day, o})
			if err != nil {
				return err
			}
			st = &originStep{info: info}
			step[o] = st
		}
		if off < st.info.through {
			return nil // indexed by a pass a crash stopped before the mark moved
		}
		if len(st.blocks) == 0 || len(st.blocks[len(st.blocks)-1].buf) >= maxBlock {
			st.blocks = append(st.blocks, &logBlock{day: day, origin: o, start: st.info.Size})
		}
		b := st.blocks[len(st.blocks)-1]
		b.buf = appendToBlock(b.buf, rec)
		st.info.Size += n
		st.info.Records++
		return nil
	})
	if err != nil && !errors.Is(err, errStepFull) {
		return false, err
	}
	if end == mark {
		return false, fmt.Errorf("the day log ends at %d, its info says %d: %w", end, d.Size, errCorrupt)
	}
	// A nearly full disk takes no writes, these neither (space.go): the
	// day stays behind until there is room, and its readers get the error.
	if err := s.space.check(); err != nil {
		return false, err
	}
	// The origins in key order: the transactions' keys then come in
	// runs, as Badger's tree holds them.
	origins := make([]string, 0, len(step))
	for o := range step {
		origins = append(origins, o)
	}
	slices.Sort(origins)
	wb := s.newIndexWrite()
	defer wb.discard()
	for _, o := range origins {
		st := step[o]
		for _, b := range st.blocks {
			if err := wb.set(originLogKey(day, o, b.start), b.buf); err != nil {
				ix.cache = nil
				return false, err
			}
		}
		st.info.Updated = d.Updated // no later than the day's last append
		// Never back: a pass a crash stopped may have run further.
		st.info.through = max(st.info.through, end)
		if err := wb.set(originDayKey(day, o), encodeOriginInfo(&st.info)); err != nil {
			ix.cache = nil
			return false, err
		}
	}
	if err := wb.set(indexMarkKey(day), encodeOffset(end)); err != nil {
		ix.cache = nil
		return false, err
	}
	if err := wb.commit(); err != nil {
		ix.cache = nil
		return false, err
	}
	for o, st := range step {
		ix.cache[originDay{day, o}] = st.info
	}
	return end >= d.Size, nil
}

// info is an origin's info as the last pass left it.
func (ix *originIndex) info(snap *badger.Txn, k originDay) (originInfo, error) {
	if i, ok := ix.cache[k]; ok {
		return i, nil
	}
	i := originInfo{DayInfo: DayInfo{Day: k.day}}
	it, err := snap.Get(originDayKey(k.day, k.origin))
	switch {
	case err == nil:
		err = it.Value(func(v []byte) error { return decodeOriginInfo(v, &i) })
	case errors.Is(err, badger.ErrKeyNotFound):
		err = nil
	}
	return i, err
}

// indexWrite is a pass's writes, committed in order in as many
// transactions as Badger's limits take.
type indexWrite struct {
	db  *badger.DB
	txn *badger.Txn
}

func (s *BadgerStore) newIndexWrite() *indexWrite {
	return &indexWrite{db: s.db, txn: s.db.NewTransaction(true)}
}

func (w *indexWrite) set(k, v []byte) error {
	err := w.txn.Set(k, v)
	if !errors.Is(err, badger.ErrTxnTooBig) {
		return err
	}
	if err := w.txn.Commit(); err != nil {
		return err
	}
	w.txn = w.db.NewTransaction(true)
	return w.txn.Set(k, v)
}

func (w *indexWrite) commit() error { return w.txn.Commit() }

func (w *indexWrite) discard() { w.txn.Discard() }

// forget drops what the index holds of days (expired), under mu.
func (ix *originIndex) forget(days []int64) {
	ix.cache = nil
	ix.pendMu.Lock()
	for _, day := range days {
		delete(ix.pending, day)
	}
	ix.pendMu.Unlock()
}

// pendAll makes every day of the store pending, at open: a crash may have
// left any of them behind its log.
func (s *BadgerStore) pendAll() error {
	return s.db.View(func(txn *badger.Txn) error {
		it := txn.NewIterator(badger.IteratorOptions{Prefix: prefixDay})
		defer it.Close()
		s.index.pending = map[int64]uint64{}
		for it.Rewind(); it.Valid(); it.Next() {
			if k := it.Item().Key(); len(k) == len(prefixDay)+4 {
				s.index.pending[int64(binary.BigEndian.Uint32(k[len(prefixDay):]))] = 1
			}
		}
		return nil
	})
}

// getIndexMark is the day's index mark; ok is false for a day not indexed
// by origin, or indexed record by record by an older build (nothing to
// catch up).
func getIndexMark(txn *badger.Txn, day int64) (int64, bool, error) {
	it, err := txn.Get(indexMarkKey(day))
	if errors.Is(err, badger.ErrKeyNotFound) {
		return 0, false, nil
	}
	if err != nil {
		return 0, false, err
	}
	var mark int64
	err = it.Value(func(v []byte) error {
		if len(v) != 8 {
			return errCorrupt
		}
		mark = int64(binary.BigEndian.Uint64(v))
		return nil
	})
	return mark, err == nil, err
}

func getDayInfo(txn *badger.Txn, day int64, d *DayInfo) (bool, error) {
	it, err := txn.Get(dayKey(day))
	if errors.Is(err, badger.ErrKeyNotFound) {
		return false, nil
	}
	if err != nil {
		return false, err
	}
	return true, it.Value(func(v []byte) error { return decodeDayInfo(v, d) })
}

func encodeOffset(off int64) []byte { return binary.BigEndian.AppendUint64(nil, uint64(off)) }

// encodeOriginInfo is an origin's day info: the day info's 24 bytes, then
// the offset its index runs through. Older builds wrote the 24 alone.
func encodeOriginInfo(i *originInfo) []byte {
	return binary.BigEndian.AppendUint64(encodeDayInfo(&i.DayInfo), uint64(i.through))
}

func decodeOriginInfo(v []byte, i *originInfo) error {
	switch len(v) {
	case 24:
		i.through = 0
		return decodeDayInfo(v, &i.DayInfo)
	case 32:
		i.through = int64(binary.BigEndian.Uint64(v[24:]))
		return decodeDayInfo(v[:24], &i.DayInfo)
	}
	return errCorrupt
}

// IndexFailures counts the origin index's passes that failed to write (a
// full disk): the day's index stays behind its log, and its readers filter
// the whole day, until a later pass, or a reader's, succeeds.
func (s *BadgerStore) IndexFailures() int64 { return s.index.failed.Load() }

// IndexCatchUps counts the passes of the origin index that a reader ran
// because it found a day's index behind its log (OriginDayInfo and
// ReadOriginDay catch it up; ReadOriginDayIndexed does not).
func (s *BadgerStore) IndexCatchUps() int64 { return s.index.catchUps.Load() }
