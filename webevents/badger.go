package webevents

import (
	"bytes"
	"cmp"
	"context"
	"encoding/binary"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"os"
	"path/filepath"
	"strconv"
	"sync"
	"time"

	"github.com/dgraph-io/badger/v4"
)

// BadgerOptions tunes OpenBadger. The zero value is a durable on-disk store
// sized for a small machine.
type BadgerOptions struct {
	// Logger receives Badger's own messages (warnings and errors only).
	Logger *slog.Logger
	// SyncWrites fsyncs every commit. Without it a commit survives the
	// process being killed (the write-ahead log is a memory map), but not a
	// power loss.
	SyncWrites bool
	// InMemory keeps everything in memory (tests).
	InMemory bool
	// GCInterval is how often value-log garbage collection runs; 0 means
	// 10 minutes.
	GCInterval time.Duration
	// MemTableSize is the size of each of Badger's two memtables; 0 means
	// 32 MiB where the disk has room (the value logs then take 64 MiB
	// files), and less on a small disk (storeSizes). 16 MiB halves that
	// memory but merges about 25% slower (docs/performance.md).
	MemTableSize int64
	// MinFreeBytes is the free disk space below which writes are refused
	// with ErrNoSpace; 0 means room for a new value log and memtable log
	// as Badger maps them, and some slack (208 MiB with the full sizes);
	// negative means never.
	MinFreeBytes int64
}

// ErrInUse is wrapped by OpenBadger's error when another process has the
// store open.
var ErrInUse = errors.New("webevents: store in use by another process")

type nopCloser struct{}

func (nopCloser) Close() error { return nil }

// BadgerStore is the Store on Badger v4.
type BadgerStore struct {
	db   *badger.DB
	lock io.Closer // the store's directory lock
	id   string
	gen  uint64 // generation (ID)
	// created: this open made the store (its ID); a new store is clean
	created bool
	mu      sync.Mutex // serialises writers: every write touches its day's info key
	// known holds every URL with a current state; writers add to it under
	// mu, and only Merge's prefetch reads it, between their adds.
	known *knownURLs
	now   func() time.Time
	stop  context.CancelFunc
	done  chan struct{}
	space *spaceGuard // refuses writes on a nearly full disk (space.go)
}

// OpenBadger opens or creates a store in dir.
func OpenBadger(dir string, o BadgerOptions) (*BadgerStore, error) {
	lg := o.Logger
	if lg == nil {
		lg = slog.Default()
	}
	var lock io.Closer = nopCloser{}
	if !o.InMemory {
		var err error
		if lock, err = lockDir(dir); err != nil {
			return nil, err
		}
	}
	sz := fullSizes
	if o.MemTableSize > 0 {
		sz.memtable = o.MemTableSize
	} else if g := newSpaceGuard(dir, 0); !o.InMemory && g.free != nil {
		if free, err := g.free(dir); err == nil {
			var fits bool
			if sz, fits = sizesFor(free); !fits && !hasManifest(dir) {
				lock.Close()
				return nil, fmt.Errorf("%w: %s has %d MiB free; a new store needs at least %d MiB (Badger maps its write-ahead and value logs at twice their size, and the events need room of their own)",
					ErrNoSpace, dir, free>>20, minStoreFree>>20)
			}
			if sz != fullSizes {
				lg.Info("a small disk: the store's logs made smaller to fit", "free_mib", free>>20,
					"memtable_mib", sz.memtable>>20, "vlog_file_mib", sz.vlog>>20)
			}
		}
	}
	mt := sz.memtable
	// Options that keep memory small on a 2-core machine: with Badger's
	// defaults a probe writing 900k values of 1 KB peaked above 2 GB
	// (docs/architecture.md, "Store").
	opts := badger.DefaultOptions(dir).
		WithLogger(badgerLogger{lg}).
		WithSyncWrites(o.SyncWrites).
		WithMemTableSize(mt).
		WithNumMemtables(2).
		WithNumLevelZeroTables(2).
		WithNumLevelZeroTablesStall(4).
		WithBlockCacheSize(8 << 20).
		WithIndexCacheSize(8 << 20).
		WithValueLogFileSize(sz.vlog).
		WithValueThreshold(1 << 10).
		WithDetectConflicts(false) // writers are serialised by BadgerStore.mu
	if o.InMemory {
		opts = opts.WithDir("").WithValueDir("").WithInMemory(true)
	}
	db, err := badger.Open(opts)
	if err != nil {
		lock.Close()
		return nil, fmt.Errorf("webevents: open store %s: %w", dir, err)
	}
	s := &BadgerStore{db: db, lock: lock, now: time.Now, done: make(chan struct{})}
	if need := o.MinFreeBytes; !o.InMemory && need >= 0 {
		if need == 0 {
			// Badger maps a value log at twice its file size and a
			// memtable's log at twice the memtable.
			need = sz.need()
		}
		s.space = newSpaceGuard(dir, uint64(need))
		if err := s.space.check(); err != nil && !errors.Is(err, ErrNoSpace) {
			lg.Warn("cannot back the store's mapped files", "err", err)
		}
	}
	if s.id, err = s.loadID(); err == nil {
		err = s.openGeneration()
	}
	if err == nil {
		s.known, err = loadKnownURLs(db)
	}
	if err != nil {
		db.Close()
		lock.Close()
		return nil, err
	}
	ctx, cancel := context.WithCancel(context.Background())
	s.stop = cancel
	interval := o.GCInterval
	if interval <= 0 {
		interval = 10 * time.Minute
	}
	go s.gcLoop(ctx, interval, o.InMemory)
	return s, nil
}

func (s *BadgerStore) loadID() (string, error) {
	var id string
	err := s.db.Update(func(txn *badger.Txn) error {
		it, err := txn.Get(keyID)
		if err == nil {
			v, err := it.ValueCopy(nil)
			id = string(v)
			return err
		}
		if !errors.Is(err, badger.ErrKeyNotFound) {
			return err
		}
		id = newStoreID()
		s.created = true
		return txn.Set(keyID, []byte(id))
	})
	if err != nil {
		return "", fmt.Errorf("webevents: store id: %w", err)
	}
	return id, nil
}

func (s *BadgerStore) gcLoop(ctx context.Context, every time.Duration, inMemory bool) {
	defer close(s.done)
	if inMemory {
		<-ctx.Done()
		return
	}
	t := time.NewTicker(every)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-t.C:
			for s.db.RunValueLogGC(0.5) == nil {
			}
		}
	}
}

// ID is the store's random identifier, followed by its generation once an
// unclean open has bumped it: without SyncWrites, the tail of a day log a
// crash lost may be written again at the same offsets, so what a server
// serves under an ID never changes.
func (s *BadgerStore) ID() string {
	if s.gen == 0 {
		return s.id
	}
	return s.id + "." + strconv.FormatUint(s.gen, 10)
}

// openGeneration reads the generation, bumps it when the last close was
// not clean (the clean mark is missing from a store that has an ID
// already), and removes the mark while the store is open; both durably,
// before anything is written or served.
func (s *BadgerStore) openGeneration() error {
	err := s.db.Update(func(txn *badger.Txn) error {
		if it, err := txn.Get(keyGen); err == nil {
			v, err := it.ValueCopy(nil)
			if err != nil {
				return err
			}
			if s.gen, err = strconv.ParseUint(string(v), 10, 64); err != nil {
				return fmt.Errorf("generation %q: %w", v, err)
			}
		} else if !errors.Is(err, badger.ErrKeyNotFound) {
			return err
		}
		_, err := txn.Get(keyClean)
		switch {
		case errors.Is(err, badger.ErrKeyNotFound) && !s.created:
			s.gen++
			if err := txn.Set(keyGen, []byte(strconv.FormatUint(s.gen, 10))); err != nil {
				return err
			}
		case err != nil && !errors.Is(err, badger.ErrKeyNotFound):
			return err
		}
		return txn.Delete(keyClean)
	})
	if err == nil {
		err = s.db.Sync()
	}
	if err != nil {
		return fmt.Errorf("webevents: store generation: %w", err)
	}
	return nil
}

func (s *BadgerStore) Get(url string) (Event, bool, error) {
	var e Event
	var ok bool
	err := s.db.View(func(txn *badger.Txn) error {
		var err error
		e, ok, err = getEvent(txn, url)
		return err
	})
	return e, ok, err
}

func getEvent(txn *badger.Txn, url string) (Event, bool, error) {
	it, err := txn.Get(urlKey(url))
	if errors.Is(err, badger.ErrKeyNotFound) {
		return Event{}, false, nil
	}
	if err != nil {
		return Event{}, false, err
	}
	var e Event
	err = it.Value(func(v []byte) error {
		var err error
		e, err = decodeBinary(v)
		return err
	})
	return e, err == nil, err
}

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
}

// logBlock is consecutive records of one day, stored under the offset of
// its first.
type logBlock struct {
	day, start int64
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
	d := &DayInfo{Day: day}
	it, err := w.txn.Get(dayKey(day))
	switch {
	case err == nil:
		err = it.Value(func(v []byte) error { return decodeDayInfo(v, d) })
		if err != nil {
			return nil, err
		}
	case !errors.Is(err, badger.ErrKeyNotFound):
		return nil, err
	}
	w.days[day] = d
	return d, nil
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
	d.Size += int64(RecordLen(e))
	d.Records++
	d.Updated = w.s.now()
	w.dirty[d.Day] = true
	if len(b.buf) >= maxBlock {
		return w.flushBlock(b)
	}
	return nil
}

// learn adds the URLs written so far to the store's known filter, while no
// prefetch runs. Every write call learns before it returns, so the next
// call's prefetch finds every URL with a state; within one Merge the
// resolver's pending map covers what is not learnt yet.
func (w *writer) learn() {
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
	for i := range events {
		if w.full() {
			w.learn()
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
	w.learn()
	if err := w.commit(false); err != nil {
		return fmt.Errorf("webevents: record: %w", err)
	}
	return nil
}

// mergePart is how many events of a Merge are resolved per transaction:
// while one part commits (Badger writes on its own goroutine), the current
// states of the next part are read, so the two overlap.
const mergePart = 1024

func (s *BadgerStore) Merge(events []Event, c *Cursor) (MergeResult, error) {
	if err := validateParallel(events); err != nil {
		return MergeResult{}, err
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if err := s.space.check(); err != nil {
		return MergeResult{}, err
	}
	// Every read of this call is made at the state before it: the
	// resolver's pending map holds every state this call has written and is
	// consulted first, and Badger would make a read opened later wait for
	// this call's commits in flight.
	var readers [2]*badger.Txn
	for i := range readers {
		readers[i] = s.db.NewTransaction(false)
		defer readers[i].Discard()
	}
	w := s.newWriter()
	defer func() { w.txn.Discard() }()
	var commits commitGroup
	known := prefetch(readers, s.known, events[:min(len(events), mergePart)])
	if known.err != nil {
		return MergeResult{}, fmt.Errorf("webevents: merge: %w", known.err)
	}
	at := 0 // the index in known of the event being resolved
	r := newResolver(func(string) (Event, bool, error) {
		return known.states[at], known.have[at], nil
	}, c)
	fail := func(err error) (MergeResult, error) {
		commits.wait()
		w.learn() // what did commit is known; the rest costs a read
		return r.result, fmt.Errorf("webevents: merge: %w", err)
	}
	for lo := 0; lo < len(events); lo += mergePart {
		part := events[lo:min(len(events), lo+mergePart)]
		var next chan prefetched
		if rest := events[lo+len(part):]; len(rest) > 0 {
			next = make(chan prefetched, 1)
			go func() { next <- prefetch(readers, s.known, rest[:min(len(rest), mergePart)]) }()
		}
		for i, in := range part {
			if w.full() {
				// The next part's prefetch may be running: its URLs are
				// learnt when it is done, before anything reads again.
				if err := w.commitAsync(&commits); err != nil {
					<-orClosed(next)
					return fail(err)
				}
			}
			at = i
			d, err := r.resolve(in)
			if err == nil {
				switch d.Action {
				case Accept:
					err = w.appendLog(&d.Result)
				case Restate:
					err = w.current(&d.Result)
				}
			}
			if err != nil {
				<-orClosed(next)
				return fail(err)
			}
		}
		if next == nil {
			break
		}
		if err := w.commitAsync(&commits); err != nil {
			<-next
			return fail(err)
		}
		known = <-next
		w.learn()
		if known.err != nil {
			return fail(known.err)
		}
	}
	if c != nil {
		v, err := json.Marshal(c)
		if err != nil {
			return fail(err)
		}
		if err := w.set(cursorKey(c.Peer), v); err != nil {
			return fail(fmt.Errorf("cursor: %w", err))
		}
	}
	w.learn()
	// The last part commits after every earlier one: Badger applies
	// commits in the order they were sent, so the cursor is never durable
	// before the events it covers.
	if err := w.commit(false); err != nil {
		return fail(err)
	}
	if err := commits.wait(); err != nil {
		return r.result, fmt.Errorf("webevents: merge: %w", err)
	}
	return r.result, nil
}

// prefetched is the current state of each event's URL before the merge,
// in the order of the events.
type prefetched struct {
	states []Event
	have   []bool
	err    error
}

// orClosed lets a failing merge wait for a prefetch it started, or for
// nothing when it started none.
func orClosed(c chan prefetched) <-chan prefetched {
	if c == nil {
		closed := make(chan prefetched)
		close(closed)
		return closed
	}
	return c
}

// commitGroup waits for asynchronous commits and keeps the first error.
type commitGroup struct {
	wg  sync.WaitGroup
	mu  sync.Mutex
	err error
}

func (g *commitGroup) wait() error {
	g.wg.Wait()
	g.mu.Lock()
	defer g.mu.Unlock()
	return g.err
}

// validateParallel is validate on two goroutines: URL parsing is a
// noticeable share of a merge.
func validateParallel(events []Event) error {
	if len(events) < 2*mergePart {
		return validate(events)
	}
	half := len(events) / 2
	var err error
	done := make(chan struct{})
	go func() {
		defer close(done)
		err = validate(events[half:])
	}()
	first := validate(events[:half])
	<-done
	if first != nil {
		return first
	}
	return err
}

// prefetch reads the current state of every URL in events, in the order
// of events, on two goroutines with the readers' transactions: point reads
// are most of a merge's cost and they parallelise, while the writes after
// them cannot.
func prefetch(readers [2]*badger.Txn, known *knownURLs, events []Event) prefetched {
	p := prefetched{states: make([]Event, len(events)), have: make([]bool, len(events))}
	var errs [len(readers)]error
	var wg sync.WaitGroup
	for w, txn := range readers {
		wg.Go(func() {
			for i := w; i < len(events); i += len(readers) {
				if !known.mayHold(events[i].URL) {
					continue // never held: no read needed
				}
				e, ok, err := getEvent(txn, events[i].URL)
				if err != nil {
					errs[w] = err
					return
				}
				p.states[i], p.have[i] = e, ok
			}
		})
	}
	wg.Wait()
	p.err = errors.Join(errs[:]...)
	return p
}

func (s *BadgerStore) Cursor(peer string) (Cursor, bool, error) {
	var c Cursor
	var ok bool
	err := s.db.View(func(txn *badger.Txn) error {
		it, err := txn.Get(cursorKey(peer))
		if errors.Is(err, badger.ErrKeyNotFound) {
			return nil
		}
		if err != nil {
			return err
		}
		ok = true
		return it.Value(func(v []byte) error { return json.Unmarshal(v, &c) })
	})
	return c, ok, err
}

func (s *BadgerStore) Current(fn func(Event) error) error {
	return s.db.View(func(txn *badger.Txn) error {
		it := txn.NewIterator(badger.IteratorOptions{Prefix: prefixURL, PrefetchValues: true, PrefetchSize: 100})
		defer it.Close()
		for it.Rewind(); it.Valid(); it.Next() {
			var e Event
			err := it.Item().Value(func(v []byte) error {
				var err error
				e, err = decodeBinary(v)
				return err
			})
			if err != nil {
				return err
			}
			if err := fn(e); err != nil {
				return err
			}
		}
		return nil
	})
}

func (s *BadgerStore) DayInfo(day int64) (DayInfo, bool, error) {
	d := DayInfo{Day: day}
	var ok bool
	err := s.db.View(func(txn *badger.Txn) error {
		it, err := txn.Get(dayKey(day))
		if errors.Is(err, badger.ErrKeyNotFound) {
			return nil
		}
		if err != nil {
			return err
		}
		ok = true
		return it.Value(func(v []byte) error { return decodeDayInfo(v, &d) })
	})
	return d, ok, err
}

func (s *BadgerStore) ReadDay(day, from int64, fn func(int64, Event) error) error {
	return s.db.View(func(txn *badger.Txn) error {
		prefix := logKey(day, 0)[:len(prefixLog)+4]
		start := logKey(day, 0)
		if from > 0 {
			// The entry holding byte from is the last one keyed at or before it.
			rev := txn.NewIterator(badger.IteratorOptions{Prefix: prefix, Reverse: true})
			rev.Seek(logKey(day, from))
			if rev.Valid() {
				start = rev.Item().KeyCopy(nil)
			}
			rev.Close()
		}
		it := txn.NewIterator(badger.IteratorOptions{Prefix: prefix, PrefetchValues: true, PrefetchSize: 100})
		defer it.Close()
		for it.Seek(start); it.Valid(); it.Next() {
			item := it.Item()
			off := int64(binary.BigEndian.Uint64(item.Key()[len(prefix):]))
			err := item.Value(func(v []byte) error {
				return decodeLog(v, func(e Event) error {
					at := off
					off += int64(RecordLen(&e))
					if off <= from {
						return nil
					}
					return fn(at, e)
				})
			})
			if err != nil {
				return err
			}
		}
		return nil
	})
}

func (s *BadgerStore) Expire(keepFrom int64) (Expired, error) {
	var x Expired
	// Which days have logs: their infos, in day order.
	var days []int64
	var records int64
	err := s.db.View(func(txn *badger.Txn) error {
		it := txn.NewIterator(badger.IteratorOptions{Prefix: prefixDay})
		defer it.Close()
		for it.Rewind(); it.Valid(); it.Next() {
			day := int64(binary.BigEndian.Uint32(it.Item().Key()[len(prefixDay):]))
			if day >= keepFrom {
				break
			}
			var d DayInfo
			if err := it.Item().Value(func(v []byte) error { return decodeDayInfo(v, &d) }); err != nil {
				return err
			}
			days = append(days, day)
			records += d.Records
		}
		return nil
	})
	if err != nil {
		return x, fmt.Errorf("webevents: expire: %w", err)
	}
	s.mu.Lock() // writers wait: a day's log and its info go together
	defer s.mu.Unlock()
	var prefixes [][]byte
	for _, day := range days {
		prefixes = append(prefixes, logKey(day, 0)[:len(prefixLog)+4], dayKey(day))
	}
	if len(prefixes) > 0 {
		if err := s.db.DropPrefix(prefixes...); err != nil {
			return x, fmt.Errorf("webevents: expire days: %w", err)
		}
	}
	x.Days, x.Records = len(days), records
	// Long-deleted URLs and cursors of peers long gone: scans.
	cut := DayStart(keepFrom)
	var gone [][]byte
	err = s.db.View(func(txn *badger.Txn) error {
		it := txn.NewIterator(badger.IteratorOptions{Prefix: prefixURL, PrefetchValues: true, PrefetchSize: 256})
		defer it.Close()
		for it.Rewind(); it.Valid(); it.Next() {
			err := it.Item().Value(func(v []byte) error {
				e, err := decodeBinary(v)
				if err == nil && e.Stat == Delete && e.LPD < cut {
					gone = append(gone, it.Item().KeyCopy(nil))
				}
				return err
			})
			if err != nil {
				return err
			}
		}
		return nil
	})
	if err != nil {
		return x, fmt.Errorf("webevents: expire URLs: %w", err)
	}
	x.URLs = len(gone)
	err = s.db.View(func(txn *badger.Txn) error {
		it := txn.NewIterator(badger.IteratorOptions{Prefix: prefixCursor, PrefetchValues: true})
		defer it.Close()
		for it.Rewind(); it.Valid(); it.Next() {
			var c Cursor
			if err := it.Item().Value(func(v []byte) error { return json.Unmarshal(v, &c) }); err != nil {
				return err
			}
			if c.Updated.Unix() < cut {
				gone = append(gone, it.Item().KeyCopy(nil))
				x.Cursors++
			}
		}
		return nil
	})
	if err != nil {
		return x, fmt.Errorf("webevents: expire cursors: %w", err)
	}
	wb := s.db.NewWriteBatch()
	defer wb.Cancel()
	for _, k := range gone {
		if err := wb.Delete(k); err != nil {
			return x, fmt.Errorf("webevents: expire URLs: %w", err)
		}
	}
	if err := wb.Flush(); err != nil {
		return x, fmt.Errorf("webevents: expire URLs: %w", err)
	}
	return x, nil
}

// Close stops garbage collection and closes the database.
func (s *BadgerStore) Close() error {
	s.stop()
	<-s.done
	// The clean mark goes with the last writes: Close flushes and syncs it.
	s.mu.Lock()
	mark := s.db.Update(func(txn *badger.Txn) error { return txn.Set(keyClean, nil) })
	s.mu.Unlock()
	return errors.Join(mark, s.db.Close(), s.lock.Close())
}

func encodeDayInfo(d *DayInfo) []byte {
	b := make([]byte, 0, 24)
	b = binary.BigEndian.AppendUint64(b, uint64(d.Size))
	b = binary.BigEndian.AppendUint64(b, uint64(d.Records))
	return binary.BigEndian.AppendUint64(b, uint64(d.Updated.UnixNano()))
}

func decodeDayInfo(v []byte, d *DayInfo) error {
	if len(v) != 24 {
		return errCorrupt
	}
	d.Size = int64(binary.BigEndian.Uint64(v))
	d.Records = int64(binary.BigEndian.Uint64(v[8:]))
	d.Updated = time.Unix(0, int64(binary.BigEndian.Uint64(v[16:])))
	return nil
}

// badgerLogger sends Badger's warnings and errors to slog; its info and
// debug chatter (compactions, table flushes) is dropped.
type badgerLogger struct{ l *slog.Logger }

func (b badgerLogger) Errorf(f string, a ...any) {
	b.l.Error("badger: " + string(bytes.TrimSpace([]byte(fmt.Sprintf(f, a...)))))
}
func (b badgerLogger) Warningf(f string, a ...any) {
	b.l.Warn("badger: " + string(bytes.TrimSpace([]byte(fmt.Sprintf(f, a...)))))
}
func (badgerLogger) Infof(string, ...any)  {}
func (badgerLogger) Debugf(string, ...any) {}

// storeSizes are Badger's memtable and value-log file sizes, and the
// slack a write needs beyond the room for a new pair of their logs.
type storeSizes struct{ memtable, vlog, slack int64 }

// fullSizes are the store's sizes where the disk has room; smallestSizes
// the least it shrinks to.
var (
	fullSizes     = storeSizes{memtable: 32 << 20, vlog: 64 << 20, slack: 16 << 20}
	smallestSizes = storeSizes{memtable: 1 << 20, vlog: 2 << 20, slack: 1 << 20}
)

// minStoreFree is the least free space a new store starts on: twice what
// its smallest logs need.
var minStoreFree = 2 * uint64(smallestSizes.need())

// sizesFor scales the store's logs to a disk with free bytes: the full
// sizes (32 MiB memtables, 64 MiB value-log files, 208 MiB to grow) where
// that reserve is at most half the room, else smaller, so that the
// reserve stays under about 40% of it (an SD card, a small volume),
// down to 1 MiB memtables. fits is false below minStoreFree.
func sizesFor(free uint64) (sz storeSizes, fits bool) {
	if free >= 2*uint64(fullSizes.need()) {
		return fullSizes, true
	}
	mt := smallestSizes.memtable
	for mt*2 <= fullSizes.memtable && uint64(mt*2)*16 <= free {
		mt *= 2
	}
	sz = storeSizes{memtable: mt, vlog: 2 * mt, slack: max(smallestSizes.slack, mt/2)}
	return sz, free >= minStoreFree
}

// need is the free space a write needs: room for a new value log and
// memtable log as Badger maps them (twice their size), and the slack.
func (sz storeSizes) need() int64 { return 2*sz.vlog + 2*sz.memtable + sz.slack }

// hasManifest says whether dir holds a store already.
func hasManifest(dir string) bool {
	_, err := os.Stat(filepath.Join(dir, "MANIFEST"))
	return err == nil
}
