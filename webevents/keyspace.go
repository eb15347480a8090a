package webevents

import (
	"bytes"
	"encoding/binary"
	"encoding/json"
	"errors"
	"fmt"
	"strings"

	"github.com/dgraph-io/badger/v4"
)

// The keyspace of a peer's Badger database. Every key prefix of every
// package is declared here and nowhere else, so two features cannot collide
// and retention or attribution can find every key of a kind. Integers in
// keys are fixed-width big-endian, so byte order is numeric order.
//
//	prefix  key                         value                          owner
//	m/      m/id                        store ID                       webevents
//	        m/gen, m/clean              generation, clean-close mark
//	u/      u/<url>                     current state (binary event)   webevents
//	e/      e/<day u32><offset u64>     block of day-log entries       webevents
//	                                    (codec.go; one entry in stores
//	                                    before blocks); offset = byte
//	                                    offset in the day file of the
//	                                    block's first entry
//	d/      d/<day u32>                 day info: size, records,       webevents
//	                                    updated
//	c/      c/<peer>                    merge cursor (JSON)            webevents
//	o/      o/<day u32><origin>\x00<offset u64> block of the day's      webevents
//	                                    records of one origin (Origin),
//	                                    offset = byte offset in the
//	                                    origin's filtered day file
//	i/      i/<day u32><origin>         the origin's day info, and     webevents
//	                                    the day-log offset its index
//	                                    runs through (badger_index.go)
//	        i/<day u32>\x00             the day is indexed by origin:
//	                                    the day-log offset below which
//	                                    every record is (u64)
//	        i/<day u32>                 empty: indexed by an older build,
//	                                    record by record as written
//	f/      f/<url>                     frontier entry (binary, or     crawl, through Table(TableFrontier)
//	                                    JSON in older stores)
//	p/      p/<robots.shr URL>          peer-table row                 peer, through Table(TablePeers)
//	b/      b/<host>\x00<rank u16><fp u64> a first visit spilled to disk  crawl, through Table(TableBacklog)
//	                                    (crawl/backlog.go): its URL,
//	                                    depth, due time; or, at a rank
//	                                    it moved to, "m" and the rank
//	                                    it moved from
//	r/      r/<host>\x00<due u32><fp u64> a revisit parked on disk      crawl, through Table(TableRevisits)
//	                                    (crawl/parking.go): its URL,
//	                                    state and fitted rate
//
// No prefix is a prefix of another (TestKeyspacePrefixesDisjoint).
var (
	keyID        = []byte("m/id")
	keyGen       = []byte("m/gen")   // generation: bumped on each unclean open
	keyClean     = []byte("m/clean") // present while the store is closed cleanly
	prefixURL    = []byte("u/")
	prefixLog    = []byte("e/")
	prefixDay    = []byte("d/")
	prefixCursor = []byte("c/")
	prefixOrigin = []byte("o/")
	prefixOrgDay = []byte("i/")
)

// TableName names a table that a package above webevents keeps in the
// store: its key prefix.
type TableName string

// The tables other packages keep beside the web events.
const (
	TableFrontier TableName = "f/" // crawl's frontier, one entry per URL
	TablePeers    TableName = "p/" // peer's peer table, one row per peer
	TableBacklog  TableName = "b/" // crawl's first visits kept on disk, by host and importance
	TableRevisits TableName = "r/" // crawl's revisits parked on disk, by host and due time
)

// tables lists the names Table hands out.
var tables = []TableName{TableFrontier, TablePeers, TableBacklog, TableRevisits}

// allPrefixes lists every prefix of the keyspace, for the test that keeps
// them disjoint.
func allPrefixes() [][]byte {
	out := [][]byte{keyID[:2], prefixURL, prefixLog, prefixDay, prefixCursor, prefixOrigin, prefixOrgDay}
	for _, t := range tables {
		out = append(out, []byte(t))
	}
	return out
}

func urlKey(u string) []byte { return append(append([]byte{}, prefixURL...), u...) }

func logKey(day, off int64) []byte {
	k := make([]byte, 0, 14)
	k = append(k, prefixLog...)
	k = binary.BigEndian.AppendUint32(k, uint32(day))
	return binary.BigEndian.AppendUint64(k, uint64(off))
}

func dayKey(day int64) []byte {
	return binary.BigEndian.AppendUint32(append([]byte{}, prefixDay...), uint32(day))
}

// originLogPrefix is the prefix of the keys of one origin's blocks of a
// day; with origin "" of every origin's blocks of the day.
func originLogPrefix(day int64, origin string) []byte {
	k := make([]byte, 0, len(prefixOrigin)+4+len(origin)+1+8)
	k = append(k, prefixOrigin...)
	k = binary.BigEndian.AppendUint32(k, uint32(day))
	if origin == "" {
		return k
	}
	return append(append(k, origin...), 0)
}

func originLogKey(day int64, origin string, off int64) []byte {
	return binary.BigEndian.AppendUint64(originLogPrefix(day, origin), uint64(off))
}

// originDayKey is the key of an origin's day info; with origin "" the key
// that marked the day as indexed in older builds, and the prefix of all
// its origins' infos.
func originDayKey(day int64, origin string) []byte {
	k := binary.BigEndian.AppendUint32(append([]byte{}, prefixOrgDay...), uint32(day))
	return append(k, origin...)
}

// indexMarkKey is the key of the day's index mark: the offset in the day
// log below which every record is in its origin's log. An origin is a URL's
// scheme and host, so no origin key begins with the zero byte.
func indexMarkKey(day int64) []byte { return append(originDayKey(day, ""), 0) }

func cursorKey(peer string) []byte { return append(append([]byte{}, prefixCursor...), peer...) }

// Table is one table of the keyspace lent to another package: string keys,
// opaque values, and no way to reach a key outside its prefix. The package
// that uses it owns the encoding of its values.
type Table struct {
	db     *badger.DB
	prefix []byte
	space  *spaceGuard // the store's: writes refused on a nearly full disk
}

// EstimateKeys is about how many keys the table holds, from the counts
// Badger keeps of each table file's keys, without a read: a file within
// the table's prefix counts whole, one that straddles an end of it half,
// one that spans the whole prefix not at all (a table that small is not
// worth sizing for), nor do the memtables. Deleted keys and older versions
// not yet compacted away count, so for a large table it errs high (a
// crawl's backlog holds a tombstone for about every third key), and so may
// a compaction in flight, whose files can show for a moment on both the
// level it reads and the one it writes. For sizing what a scan of the
// table will fill, before the scan.
func (t *Table) EstimateKeys() int {
	end := append([]byte{}, t.prefix...)
	end[len(end)-1]++ // every prefix ends in '/'
	var n uint64
	for _, ti := range t.db.Tables() {
		// A file's smallest and biggest keys carry an 8-byte version.
		left, right := ti.Left[:max(len(ti.Left)-8, 0)], ti.Right[:max(len(ti.Right)-8, 0)]
		switch {
		case bytes.Compare(right, t.prefix) < 0 || bytes.Compare(left, end) >= 0:
		case bytes.Compare(left, t.prefix) < 0 && bytes.Compare(right, end) >= 0:
		case bytes.Compare(left, t.prefix) >= 0 && bytes.Compare(right, end) < 0:
			n += 2 * uint64(ti.KeyCount)
		default:
			n += uint64(ti.KeyCount)
		}
	}
	return int(n / 2)
}

// Entry is one key and value of a Table.
type Entry struct {
	Key   string
	Value []byte
}

// Table returns the table name in the store. It panics on a name not
// declared in this file: a new table is a change of the keyspace, made here.
func (s *BadgerStore) Table(name TableName) *Table {
	for _, t := range tables {
		if t == name {
			return &Table{db: s.db, prefix: []byte(name), space: s.space}
		}
	}
	panic(fmt.Sprintf("webevents: table %q is not declared in keyspace.go", name))
}

// Each calls fn with every entry, in key order. The value is only valid
// during the call.
func (t *Table) Each(fn func(key string, value []byte) error) error {
	return t.db.View(func(txn *badger.Txn) error {
		it := txn.NewIterator(badger.IteratorOptions{Prefix: t.prefix, PrefetchValues: true, PrefetchSize: 256})
		defer it.Close()
		for it.Rewind(); it.Valid(); it.Next() {
			key := string(it.Item().Key()[len(t.prefix):])
			err := it.Item().Value(func(v []byte) error { return fn(key, v) })
			if err != nil {
				return fmt.Errorf("webevents: table %s entry %q: %w", t.prefix, key, err)
			}
		}
		return nil
	})
}

// Put writes entries, replacing older values under the same keys. One entry
// is one transaction; more go through a write batch, which may commit in
// several transactions.
func (t *Table) Put(entries ...Entry) error {
	if err := t.space.check(); err != nil {
		return err
	}
	key := func(k string) []byte { return append(append([]byte{}, t.prefix...), k...) }
	if len(entries) == 1 {
		return t.db.Update(func(txn *badger.Txn) error { return txn.Set(key(entries[0].Key), entries[0].Value) })
	}
	wb := t.db.NewWriteBatch()
	defer wb.Cancel()
	for _, e := range entries {
		if err := wb.Set(key(e.Key), e.Value); err != nil {
			return err
		}
	}
	return wb.Flush()
}

// Delete removes entries by key; a key not present is no error.
func (t *Table) Delete(keys ...string) error {
	return t.db.Update(func(txn *badger.Txn) error {
		for _, k := range keys {
			if err := txn.Delete(append(append([]byte{}, t.prefix...), k...)); err != nil {
				return err
			}
		}
		return nil
	})
}

// Get returns the value of key, and whether it is there.
func (t *Table) Get(key string) ([]byte, bool, error) {
	var v []byte
	err := t.db.View(func(txn *badger.Txn) error {
		item, err := txn.Get(t.key(key))
		if err != nil {
			return err
		}
		v, err = item.ValueCopy(nil)
		return err
	})
	if errors.Is(err, badger.ErrKeyNotFound) {
		return nil, false, nil
	}
	return v, err == nil, err
}

// Scan calls fn with the entries whose keys start with prefix, in key
// order, until fn returns false. With keysOnly the values are not read
// (fn gets nil): a scan of keys reads only Badger's index. A value is
// valid only during the call.
func (t *Table) Scan(prefix string, keysOnly bool, fn func(key string, value []byte) bool) error {
	return t.scan(prefix, "", keysOnly, false, nil, fn)
}

// ScanFrom is Scan from the first key at or after start, which has the
// prefix. A caller that knows where a range's live keys begin seeks past
// the deletions before them: Badger steps over each deleted key of the
// range until a compaction to its last level drops it, and a queue taken
// from its front (a host's backlog) keeps a run of them there. When want
// is not nil, it says from a key alone (valid only during the call)
// whether to read its value and call fn with it: entries a caller knows
// to be stale cost no value read.
func (t *Table) ScanFrom(prefix, start string, want func(key []byte) bool, fn func(key string, value []byte) bool) error {
	return t.scan(prefix, start, false, false, want, fn)
}

// scan is Scan, with Badger's prefetch of values or without. Without, each
// value is read when its entry is reached: a scan that stops after a few
// entries (a host's head) does not read the next 64 values on a goroutine
// each, which is what Badger's prefetch does (BenchmarkTableScanTake).
func (t *Table) scan(prefix, start string, keysOnly, prefetch bool, want func([]byte) bool, fn func(key string, value []byte) bool) error {
	if !strings.HasPrefix(start, prefix) {
		start = prefix
	}
	return t.db.View(func(txn *badger.Txn) error {
		it := txn.NewIterator(badger.IteratorOptions{Prefix: t.key(prefix), PrefetchValues: prefetch && !keysOnly, PrefetchSize: 64})
		defer it.Close()
		for it.Seek(t.key(start)); it.Valid(); it.Next() {
			if want != nil && !want(it.Item().Key()[len(t.prefix):]) {
				continue
			}
			key := string(it.Item().Key()[len(t.prefix):])
			if keysOnly {
				if !fn(key, nil) {
					return nil
				}
				continue
			}
			more := true
			err := it.Item().Value(func(v []byte) error { more = fn(key, v); return nil })
			if err != nil {
				return fmt.Errorf("webevents: table %s entry %q: %w", t.prefix, key, err)
			}
			if !more {
				return nil
			}
		}
		return nil
	})
}

// ScanKeys calls fn with the keys that start with prefix, in key order,
// until fn returns false, reading no values. The key is valid only during
// the call: a restart that reads ten million keys allocates none of them.
func (t *Table) ScanKeys(prefix string, fn func(key []byte) bool) error {
	return t.ScanKeysFrom(prefix, "", fn)
}

// ScanKeysFrom is ScanKeys from the first key at or after start, which has
// the prefix (ScanFrom says why).
func (t *Table) ScanKeysFrom(prefix, start string, fn func(key []byte) bool) error {
	if !strings.HasPrefix(start, prefix) {
		start = prefix
	}
	return t.db.View(func(txn *badger.Txn) error {
		it := txn.NewIterator(badger.IteratorOptions{Prefix: t.key(prefix), PrefetchValues: false})
		defer it.Close()
		for it.Seek(t.key(start)); it.Valid(); it.Next() {
			if !fn(it.Item().Key()[len(t.prefix):]) {
				return nil
			}
		}
		return nil
	})
}

// TableBatch is a batch of reads and writes in one table: a read sees the
// batch's own writes before it.
type TableBatch struct {
	t   *Table
	txn *badger.Txn
}

// Batch runs fn with a batch and commits what it wrote. A batch larger
// than one Badger transaction commits in several, so it is not atomic: a
// crash may leave the first part written. On an error nothing more is
// committed.
func (t *Table) Batch(fn func(b *TableBatch) error) error {
	if err := t.space.check(); err != nil {
		return err
	}
	b := &TableBatch{t: t, txn: t.db.NewTransaction(true)}
	defer func() { b.txn.Discard() }()
	if err := fn(b); err != nil {
		return err
	}
	return b.txn.Commit()
}

// Get reads key, as written before in the batch or committed.
func (b *TableBatch) Get(key string) ([]byte, bool, error) {
	item, err := b.txn.Get(b.t.key(key))
	if errors.Is(err, badger.ErrKeyNotFound) {
		return nil, false, nil
	} else if err != nil {
		return nil, false, err
	}
	v, err := item.ValueCopy(nil)
	return v, err == nil, err
}

// Set writes key.
func (b *TableBatch) Set(key string, value []byte) error {
	return b.retry(func() error { return b.txn.Set(b.t.key(key), value) })
}

// Delete removes key; a key not there is no error.
func (b *TableBatch) Delete(key string) error {
	return b.retry(func() error { return b.txn.Delete(b.t.key(key)) })
}

// retry commits a transaction that grew too big and does op in a new one.
func (b *TableBatch) retry(op func() error) error {
	err := op()
	if !errors.Is(err, badger.ErrTxnTooBig) {
		return err
	}
	if err := b.txn.Commit(); err != nil {
		return err
	}
	b.txn = b.t.db.NewTransaction(true)
	return op()
}

func (t *Table) key(k string) []byte { return append(append([]byte{}, t.prefix...), k...) }

// KeyValues is what a JSONTable needs of a table: a *Table, or a stand-in.
type KeyValues interface {
	Each(fn func(key string, value []byte) error) error
	Put(entries ...Entry) error
	Delete(keys ...string) error
}

// JSONTable keeps values of type T as JSON in a table, one per key: the
// encoding of the frontier and the peer table. Key names a value's key.
type JSONTable[T any] struct {
	KV  KeyValues
	Key func(*T) string
}

// Each calls fn with every value, in key order.
func (j JSONTable[T]) Each(fn func(T) error) error {
	return j.KV.Each(func(key string, v []byte) error {
		var x T
		if err := json.Unmarshal(v, &x); err != nil {
			return fmt.Errorf("webevents: entry %q: %w", key, err)
		}
		return fn(x)
	})
}

// Put writes values, replacing older ones under the same keys.
func (j JSONTable[T]) Put(values ...T) error {
	if len(values) == 0 {
		return nil
	}
	entries := make([]Entry, len(values))
	for i := range values {
		v, err := json.Marshal(&values[i])
		if err != nil {
			return err
		}
		entries[i] = Entry{Key: j.Key(&values[i]), Value: v}
	}
	return j.KV.Put(entries...)
}
