package webevents

import (
	"bytes"
	"context"
	"encoding/binary"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
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
	// 32 MiB. 16 MiB halves that memory but merges about 25% slower
	// (docs/performance.md).
	MemTableSize int64
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
	mu   sync.Mutex // serialises writers: every write touches its day's info key
	now  func() time.Time
	stop context.CancelFunc
	done chan struct{}
}

// OpenBadger opens or creates a store in dir.
func OpenBadger(dir string, o BadgerOptions) (*BadgerStore, error) {
	lg := o.Logger
	if lg == nil {
		lg = slog.Default()
	}
	mt := o.MemTableSize
	if mt <= 0 {
		mt = 32 << 20
	}
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
		WithValueLogFileSize(64 << 20).
		WithValueThreshold(1 << 10).
		WithDetectConflicts(false) // writers are serialised by BadgerStore.mu
	var lock io.Closer = nopCloser{}
	if o.InMemory {
		opts = opts.WithDir("").WithValueDir("").WithInMemory(true)
	} else {
		var err error
		if lock, err = lockDir(dir); err != nil {
			return nil, err
		}
	}
	db, err := badger.Open(opts)
	if err != nil {
		lock.Close()
		return nil, fmt.Errorf("webevents: open store %s: %w", dir, err)
	}
	s := &BadgerStore{db: db, lock: lock, now: time.Now, done: make(chan struct{})}
	if s.id, err = s.loadID(); err != nil {
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

func (s *BadgerStore) ID() string { return s.id }

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
	s     *BadgerStore
	txn   *badger.Txn
	days  map[int64]*DayInfo
	count int64
	size  int64
	buf   []byte
}

func (s *BadgerStore) newWriter() *writer {
	return &writer{s: s, txn: s.db.NewTransaction(true), days: make(map[int64]*DayInfo)}
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
	if err := w.set(logKey(d.Day, d.Size), append([]byte{}, w.buf...)); err != nil {
		return err
	}
	d.Size += int64(RecordLen(e))
	d.Records++
	d.Updated = w.s.now()
	return nil
}

// commit writes the day infos and commits; with more it starts a new
// transaction for the rest of the batch.
func (w *writer) commit(more bool) error {
	for _, d := range w.days {
		if err := w.txn.Set(dayKey(d.Day), encodeDayInfo(d)); err != nil {
			return err
		}
	}
	if err := w.txn.Commit(); err != nil {
		return err
	}
	w.days = make(map[int64]*DayInfo)
	w.count, w.size = 0, 0
	if more {
		w.txn = w.s.db.NewTransaction(true)
	}
	return nil
}

func (s *BadgerStore) Record(events []Event) error {
	if err := validate(events); err != nil {
		return err
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	w := s.newWriter()
	defer func() { w.txn.Discard() }()
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
	return nil
}

func (s *BadgerStore) Merge(events []Event, c *Cursor) (MergeResult, error) {
	if err := validate(events); err != nil {
		return MergeResult{}, err
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	w := s.newWriter()
	defer func() { w.txn.Discard() }()
	known, err := s.prefetch(events)
	if err != nil {
		return MergeResult{}, fmt.Errorf("webevents: merge: %w", err)
	}
	// Writers are serialised, so the committed state cannot change under
	// us: the prefetched states plus the resolver's pending map are current.
	r := newResolver(func(u string) (Event, bool, error) {
		e, ok := known[u]
		return e, ok, nil
	}, c)
	for _, in := range events {
		if w.full() {
			// Everything resolved so far is written; the pending map keeps
			// later events of the batch consistent with it.
			if err := w.commit(true); err != nil {
				return r.result, fmt.Errorf("webevents: merge: %w", err)
			}
		}
		d, err := r.resolve(in)
		if err != nil {
			return r.result, fmt.Errorf("webevents: merge: %w", err)
		}
		switch d.Action {
		case Accept:
			err = w.appendLog(&d.Result)
		case Restate:
			err = w.current(&d.Result)
		}
		if err != nil {
			return r.result, fmt.Errorf("webevents: merge: %w", err)
		}
	}
	if c != nil {
		v, err := json.Marshal(c)
		if err != nil {
			return r.result, err
		}
		if err := w.set(cursorKey(c.Peer), v); err != nil {
			return r.result, fmt.Errorf("webevents: merge cursor: %w", err)
		}
	}
	if err := w.commit(false); err != nil {
		return r.result, fmt.Errorf("webevents: merge: %w", err)
	}
	return r.result, nil
}

// prefetch reads the current state of every URL in events, on two
// goroutines: point reads are most of a merge's cost and they parallelise,
// while the writes after them cannot.
func (s *BadgerStore) prefetch(events []Event) (map[string]Event, error) {
	const workers = 2
	found := make([]map[string]Event, workers)
	errs := make([]error, workers)
	var wg sync.WaitGroup
	for w := range workers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			m := make(map[string]Event)
			errs[w] = s.db.View(func(txn *badger.Txn) error {
				for i := w; i < len(events); i += workers {
					e, ok, err := getEvent(txn, events[i].URL)
					if err != nil {
						return err
					}
					if ok {
						m[e.URL] = e
					}
				}
				return nil
			})
			found[w] = m
		}()
	}
	wg.Wait()
	if err := errors.Join(errs...); err != nil {
		return nil, err
	}
	for _, m := range found[1:] {
		for u, e := range m {
			found[0][u] = e
		}
	}
	return found[0], nil
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
			var e Event
			err := item.Value(func(v []byte) error {
				var err error
				e, err = decodeBinary(v)
				return err
			})
			if err != nil {
				return err
			}
			if off+int64(RecordLen(&e)) <= from {
				continue
			}
			if err := fn(off, e); err != nil {
				return err
			}
		}
		return nil
	})
}

// Close stops garbage collection and closes the database.
func (s *BadgerStore) Close() error {
	s.stop()
	<-s.done
	return errors.Join(s.db.Close(), s.lock.Close())
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
