package webevents

import (
	"cmp"
	"errors"
	"fmt"

	"github.com/dgraph-io/badger/v4"
)

// writer batches the writes of one Record or Merge call into transactions
// small enough for Badger, keeping each touched day's info in memory and
// writing it with every commit.
type writer struct {
	s      *BadgerStore
	txn    *badger.Txn
	days   map[int64]*DayInfo  // every day this writer touched, as it now is
	dirty  map[int64]bool      // the days to write with the next commit
	blocks map[int64]*logBlock // each day's block not yet set in txn
	count  int64
	size   int64
	buf    []byte
	urls   []string // URLs given a current state, not yet in the store's known filter
	// written is the bytes the writer appended to day logs, for the
	// origin index to know how far behind it falls (badger_index.go).
	written int64
}

// logBlock is consecutive records of one day, or of one origin's records
// of a day, stored under the offset of its first.
type logBlock struct {
	day, start int64
	origin     string // "" for the day's own log
	buf        []byte
}

// maxBlock bounds a block's bytes: a read from an offset inside a block
// decodes the records before it, and Badger keeps values this large in its
// value log rather than the LSM tree.
const maxBlock = 32 << 10

func (s *BadgerStore) newWriter() *writer {
	return &writer{s: s, txn: s.db.NewTransaction(true), days: make(map[int64]*DayInfo), dirty: make(map[int64]bool), blocks: make(map[int64]*logBlock)}
}

func (w *writer) dayInfo(day int64) (*DayInfo, error) {
	if d := w.days[day]; d != nil {
		return d, nil
	}
	if c, ok := w.s.infos.day(day); ok {
		w.days[day] = &c
		return &c, nil
	}
	d := &DayInfo{Day: day}
	it, err := w.txn.Get(dayKey(day))
	switch {
	case err == nil:
		err = it.Value(func(v []byte) error { return decodeDayInfo(v, d) })
		if err != nil {
			return nil, err
		}
		if err := w.moveOldIndexMark(d); err != nil {
			return nil, err
		}
	case errors.Is(err, badger.ErrKeyNotFound):
		// A day this store begins is indexed by origin from its first
		// record, behind the mark that goes with the day's first commit.
		// (Not in a store opened to measure what the index costs.)
		if !w.s.noOriginIndex {
			if err := w.set(indexMarkKey(day), encodeOffset(0)); err != nil {
				return nil, err
			}
		}
	default:
		return nil, err
	}
	w.days[day] = d
	return d, nil
}

// moveOldIndexMark turns the mark of a day an older build indexed as it
// wrote (every record so far) into this build's, at the day's size: its
// index goes on behind the log from there. The old mark goes, so that an
// older build writing to the store takes the day for one not indexed and
// writes no origin block of its own at offsets this build's passes would
// write again. (Its reads of the day's origins are not made safe: it would
// read their infos as it finds them.)
func (w *writer) moveOldIndexMark(d *DayInfo) error {
	_, err := w.txn.Get(originDayKey(d.Day, ""))
	if errors.Is(err, badger.ErrKeyNotFound) {
		return nil
	}
	if err != nil {
		return err
	}
	if err := w.set(indexMarkKey(d.Day), encodeOffset(d.Size)); err != nil {
		return err
	}
	w.count++
	return w.txn.Delete(originDayKey(d.Day, ""))
}

func (w *writer) set(k, v []byte) error {
	if err := w.txn.Set(k, v); err != nil {
		return err
	}
	w.count++
	w.size += int64(len(k)+min(len(v), 1<<10)) + 24
	return nil
}

// full reports whether the transaction should be committed before more
// writes: half of Badger's limits, leaving room for the day infos.
func (w *writer) full() bool {
	db := w.s.db
	return w.count*2 >= db.MaxBatchCount() || w.size*2 >= db.MaxBatchSize()
}

func (w *writer) current(e *Event) error {
	w.urls = append(w.urls, e.URL)
	w.buf = appendBinary(w.buf[:0], e)
	return w.set(urlKey(e.URL), append([]byte{}, w.buf...))
}

func (w *writer) appendLog(e *Event) error {
	if err := w.current(e); err != nil {
		return err
	}
	d, err := w.dayInfo(e.Day())
	if err != nil {
		return err
	}
	b := w.blocks[d.Day]
	if b == nil {
		b = &logBlock{day: d.Day, start: d.Size}
		w.blocks[d.Day] = b
	}
	b.buf = appendToBlock(b.buf, w.buf)
	n := int64(RecordLen(e))
	d.Size += n
	d.Records++
	d.Updated = w.s.now()
	w.dirty[d.Day] = true
	w.written += n
	if len(b.buf) >= maxBlock {
		return w.flushBlock(b)
	}
	return nil
}

// learn adds the URLs written so far to the store's known filter. seal
// calls it before each commit, so no read finds a state the filter does
// not admit (a commit that fails leaves a URL admitted: a wasted read);
// within one Merge the resolver's pending map covers what its reads,
// made at the state before it, cannot see.
func (w *writer) learn() {
	if len(w.urls) == 0 {
		return
	}
	w.s.knownMu.Lock()
	defer w.s.knownMu.Unlock()
	for _, u := range w.urls {
		w.s.known.add(u)
	}
	w.urls = w.urls[:0]
}

func (w *writer) flushBlock(b *logBlock) error {
	delete(w.blocks, b.day)
	return w.set(logKey(b.day, b.start), b.buf)
}

// seal sets the open blocks and the changed day infos in the transaction.
// The writer keeps its day infos across commits: a later transaction of
// the same call may start before an earlier one is applied, and would read
// stale ones.
func (w *writer) seal() error {
	w.learn()
	for _, b := range w.blocks {
		if err := w.flushBlock(b); err != nil {
			return err
		}
	}
	for day := range w.dirty {
		if err := w.txn.Set(dayKey(day), encodeDayInfo(w.days[day])); err != nil {
			return err
		}
	}
	clear(w.dirty)
	return nil
}

// commit seals and commits; with more it starts a new transaction for the
// rest of the batch.
func (w *writer) commit(more bool) error {
	if err := w.seal(); err != nil {
		return err
	}
	if err := w.txn.Commit(); err != nil {
		return err
	}
	w.next(more)
	return nil
}

// commitAsync seals and sends the transaction to Badger without waiting,
// and starts a new one; g collects the outcome. The new transaction is
// opened before the commit is sent: Badger makes a new transaction wait
// until every commit sent before it is applied, which would undo the
// overlap. It reads nothing this call wrote (the writer keeps its day
// infos, the resolver its states).
func (w *writer) commitAsync(g *commitGroup) error {
	if err := w.seal(); err != nil {
		return err
	}
	txn := w.txn
	w.next(true)
	g.wg.Add(1)
	txn.CommitWith(func(err error) {
		if err != nil {
			g.mu.Lock()
			g.err = cmp.Or(g.err, err)
			g.mu.Unlock()
		}
		g.wg.Done()
	})
	return nil
}

func (w *writer) next(more bool) {
	w.count, w.size = 0, 0
	if more {
		w.txn = w.s.db.NewTransaction(true)
	}
}

func (s *BadgerStore) Record(events []Event) error {
	if err := validate(events); err != nil {
		return err
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if err := s.space.check(); err != nil {
		return err
	}
	w := s.newWriter()
	defer func() { w.txn.Discard() }()
	committed := false
	defer func() { s.infos.keep(w, committed); s.index.wrote(w) }()
	for i := range events {
		if w.full() {
			if err := w.commit(true); err != nil {
				return fmt.Errorf("webevents: record: %w", err)
			}
		}
		e := events[i]
		e.From = ""
		if err := w.appendLog(&e); err != nil {
			return fmt.Errorf("webevents: record: %w", err)
		}
	}
	if err := w.commit(false); err != nil {
		return fmt.Errorf("webevents: record: %w", err)
	}
	committed = true
	s.appended.signal()
	return nil
}
