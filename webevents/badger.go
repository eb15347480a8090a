package webevents

import (
	"bytes"
	"cmp"
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/dgraph-io/badger/v4"
	"github.com/dgraph-io/badger/v4/options"
)

// BadgerOptions tunes OpenBadger. The zero value is a durable on-disk store
// sized for a small machine.
type BadgerOptions struct {
	// Logger receives Badger's own messages: its warnings and errors, and its
	// write stalls (badgerLogger).
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
	// valueThreshold replaces the package's valueThreshold when not 0:
	// for the benchmark that measured it.
	valueThreshold int64
	// levelZeroTables replaces levelZeroTables when not 0 (and the stall
	// at twice it): for BenchmarkCrawlLoadLevelZero.
	levelZeroTables int
	// levelMultiplier replaces levelSizeMultiplier when not 0: for
	// BenchmarkCrawlLoadLevelSizes.
	levelMultiplier int
	// keepTombstones keeps Badger's own rule for a deleted key's
	// tombstone (carried down while the compaction's key range overlaps a
	// level below): for BenchmarkCrawlLoadTombstones.
	keepTombstones bool
	// oldestFirst compacts a level's oldest table first (Badger's order)
	// rather than the one that overlaps the fewest bytes below against
	// its size: for BenchmarkCrawlLoadCompactionOrder.
	oldestFirst bool
	// noOriginIndex writes no origin index (o/ and i/): for
	// BenchmarkCrawlLoadOriginIndex, which measures what the index costs
	// the tree. A store so written answers a filter by reading whole days.
	noOriginIndex bool
	// indexEvery replaces indexEvery when not 0: for tests that need the
	// origin index behind the log.
	indexEvery time.Duration
}

// ErrInUse is wrapped by OpenBadger's error when another process has the
// store open.
var ErrInUse = errors.New("webevents: store in use by another process")

type nopCloser struct{}

func (nopCloser) Close() error { return nil }

// BadgerStore is the Store on Badger v4. Its phases have a file each:
// opening and its generation here, writing a day's log (badger_write.go),
// the merge pipeline (badger_merge.go), reads (badger_read.go), expiry
// (badger_expire.go) and the logs' sizes on a small disk
// (badger_sizes.go).
type BadgerStore struct {
	db   *badger.DB
	lock io.Closer // the store's directory lock
	id   string
	gen  uint64 // generation (ID)
	// created: this open made the store (its ID); a new store is clean
	created bool
	mu      sync.Mutex // serialises writers: every write touches its day's info key
	// known holds every URL with a current state, under knownMu: writers
	// add to it before they commit, Get and a merge's prefetch read it,
	// and its load at open runs in the background and swaps it in.
	knownMu     sync.RWMutex
	known       *knownURLs
	knownLoaded chan struct{} // closed when the filter's load ends
	now         func() time.Time
	stop        context.CancelFunc
	done        chan struct{}
	space       *spaceGuard // refuses writes on a nearly full disk (space.go)
	infos       dayInfos    // the day infos the last writes left, under mu
	// appended wakes live readers after each write (notify.go)
	appended appendSignal
	// noOriginIndex: BadgerOptions.noOriginIndex.
	noOriginIndex bool
	index         originIndex // written behind the day logs (badger_index.go)
}

// valueThreshold is the size from which a value is kept in Badger's value
// log rather than in its tree. Values written before it changed stay where
// they are until rewritten; Badger reads both.
const valueThreshold = 64

// levelSizeMultiplier is how many times larger each level of Badger's
// tree is than the one above it.
const levelSizeMultiplier = 10

// levelZeroTables is how many tables Badger's level 0 holds before they
// are compacted into the tree; it stops taking writes at twice as many.
const levelZeroTables = 2

// maxInMemoryValue is Badger's largest value threshold, the largest value
// a store in memory holds.
const maxInMemoryValue = 1 << 20

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
	// (docs/architecture.md, "Store"). Badger itself is the copy in
	// third_party/badger, which writes its tables with write(2) rather
	// than through a mapping and keeps its table builders' buffers for the
	// next (TestBadgerIsCocrawlsFork says why).
	opts := badger.DefaultOptions(dir).
		WithLogger(badgerLogger{lg}).
		WithSyncWrites(o.SyncWrites).
		WithMemTableSize(mt).
		WithNumMemtables(2).
		// Two memtables' tables in level 0 before a compaction, four
		// before a stall. Eight and sixteen compacted half as much in a
		// replay of a crawl's writes, but crawled slower; five and fifteen
		// no faster (docs/performance.md, "level 0 again").
		WithNumLevelZeroTables(cmp.Or(o.levelZeroTables, levelZeroTables)).
		WithNumLevelZeroTablesStall(2 * cmp.Or(o.levelZeroTables, levelZeroTables)).
		// No block cache: Badger costs a cached block at its slice's
		// capacity, and an uncompressed block is a slice of the mapped
		// table that runs to the table's end, so every block cost megabytes
		// and an 8 MiB cache took almost none (4,580 hits of 4.5 million
		// reads, 2026-11-26) while its log warned each minute that it was
		// too small. Uncompressed blocks are read where they are mapped
		// anyway; an older store's compressed tables decode per read.
		WithBlockCacheSize(0).
		WithIndexCacheSize(8 << 20).
		WithValueLogFileSize(sz.vlog).
		// Tables of a quarter of a memtable at every level, not Badger's
		// 2 MiB doubling at each level below the base: each table written
		// allocates a 3 MiB index builder whatever its size (7.7 of the
		// 113 GB a 10-minute scale crawl allocated), and each builder
		// starts with twice its table's size, of which Badger pools eight
		// (at 32 MiB tables, half a gigabyte held).
		WithBaseTableSize(max(mt/4, 2<<20)).
		// Values of 64 bytes and more (a parked revisit's state, an
		// origin's block, a day-log block) go to the value log, and the
		// tree keeps their keys and pointers, so compactions rewrite
		// far less. A 32-minute crawl to 12-13 million URLs polled
		// 1.17x as much as with a 1 KiB threshold, 1.33x in its last
		// minute, for 1.86x the disk: the value log is not compressed
		// (docs/performance.md, "One peer past 10 million URLs").
		WithValueThreshold(cmp.Or(o.valueThreshold, valueThreshold)).
		// The tree holds keys and value pointers (817 MB of 8.5 GB at
		// 14.9 million URLs), and a block read from it with Snappy was
		// a fresh buffer each time: 60 GB of the 414 GB a 32-minute
		// crawl allocated, which the collector then chased, and 5% of
		// its CPU compressing and decompressing. Uncompressed, a block
		// is read where it is mapped. Tables written compressed before
		// keep their compression (the manifest records it per table).
		WithCompression(options.None).
		WithDetectConflicts(false) // writers are serialised by BadgerStore.mu
	opts.TableSizeMultiplier = 1 // no option method; see WithBaseTableSize above
	// Each level ten times the one above it, Badger's own. Four
	// compacted less (1,618 bytes a poll against 1,798 in a replay of 2
	// million polls' writes; a fifth to a quarter less in a scale crawl)
	// but crawled no faster past 10 million URLs and restarted slower, in
	// one run against two (docs/performance.md, "a lighter web").
	opts.LevelSizeMultiplier = cmp.Or(o.levelMultiplier, levelSizeMultiplier)
	// A tombstone is dropped once it has met its key's older versions and
	// no level below may hold another (its tables' Bloom filters say so;
	// third_party/badger/COCRAWL.md), not carried to the last level: a
	// URL's frontier state, parked revisit and backlog entry are each
	// deleted when it moves on, many before they reach the last level.
	opts.DropShadowlessTombstones = !o.keepTombstones
	// Within a level, the table that overlaps the fewest bytes of the
	// level below against its own size is compacted first, not the oldest
	// (RocksDB's default order; third_party/badger/COCRAWL.md): each
	// compaction moves more bytes down for the bytes it writes.
	opts.CompactLeastOverlapFirst = !o.oldestFirst
	if o.InMemory {
		// A store in memory has no value log: Badger refuses a value
		// above the threshold there (and, below 1 KB, panics building
		// the error), so it keeps every value in its tree.
		opts = opts.WithDir("").WithValueDir("").WithInMemory(true).WithValueThreshold(maxInMemoryValue)
	}
	db, err := badger.Open(opts)
	if err != nil {
		lock.Close()
		return nil, fmt.Errorf("webevents: open store %s: %w", dir, err)
	}
	s := &BadgerStore{db: db, lock: lock, now: time.Now, done: make(chan struct{}), noOriginIndex: o.noOriginIndex}
	s.index.lg, s.index.wake, s.index.done = lg, make(chan struct{}, 1), make(chan struct{})
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
		err = s.pendAll()
	}
	if err != nil {
		db.Close()
		lock.Close()
		return nil, err
	}
	ctx, cancel := context.WithCancel(context.Background())
	s.stop = cancel
	s.knownLoaded = make(chan struct{})
	s.loadKnownInBackground(ctx, lg, s.knownLoaded)
	interval := o.GCInterval
	if interval <= 0 {
		interval = 10 * time.Minute
	}
	go s.gcLoop(ctx, interval, o.InMemory)
	go s.indexLoop(ctx, cmp.Or(o.indexEvery, indexEvery))
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

// Close stops garbage collection, brings the origin index up to the day
// logs, and closes the database.
func (s *BadgerStore) Close() error {
	s.stop()
	<-s.done
	<-s.index.done
	<-s.knownLoaded
	s.mu.Lock()
	defer s.mu.Unlock()
	index := s.indexPending()
	// The clean mark goes with the last writes: Close flushes and syncs it.
	mark := s.db.Update(func(txn *badger.Txn) error { return txn.Set(keyClean, nil) })
	return errors.Join(index, mark, s.db.Close(), s.lock.Close())
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

// badgerLogger sends Badger's warnings and errors to slog; of its info
// and debug chatter (compactions, table flushes) only the write stalls are
// kept: Badger stops taking writes while level 0 holds too many tables
// (WithNumLevelZeroTablesStall), and says so when a stall lasted over a
// second, and at the close how long they took in all (when they took any).
type badgerLogger struct{ l *slog.Logger }

func (b badgerLogger) Errorf(f string, a ...any) {
	b.l.Error("badger: " + string(bytes.TrimSpace([]byte(fmt.Sprintf(f, a...)))))
}
func (b badgerLogger) Warningf(f string, a ...any) {
	b.l.Warn("badger: " + string(bytes.TrimSpace([]byte(fmt.Sprintf(f, a...)))))
}
func (b badgerLogger) Infof(f string, a ...any) {
	m := strings.TrimSpace(fmt.Sprintf(f, a...))
	switch {
	case strings.HasPrefix(m, "L0 was stalled for"):
		b.l.Warn("badger: " + m + ": writes waited for level 0's compaction")
	case strings.HasPrefix(m, "Lifetime L0 stalled for") && !strings.HasSuffix(m, " 0s"):
		b.l.Info("badger: " + m) // at the close: none is no news
	}
}
func (badgerLogger) Debugf(string, ...any) {}
