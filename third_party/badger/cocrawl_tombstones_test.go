/*
 * cocrawl: not part of Badger v4.9.6; see COCRAWL.md.
 */

package badger

import (
	"fmt"
	"math/rand/v2"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/dgraph-io/badger/v4/options"
	"github.com/dgraph-io/badger/v4/pb"
	"github.com/dgraph-io/badger/v4/table"
	"github.com/dgraph-io/badger/v4/y"
)

// tombstoneEntry is a key's version in a table a test builds.
type tombstoneEntry struct {
	key     string
	version uint64
	deleted bool
}

// addTableAt builds a table of entries (in key order, newer versions
// first) and adds it to a level, as a compaction would have.
func addTableAt(t *testing.T, db *DB, level int, entries []tombstoneEntry) {
	t.Helper()
	b := table.NewTableBuilder(buildTableOptions(db))
	defer b.Close()
	for _, e := range entries {
		v := y.ValueStruct{Value: []byte("value of " + e.key)}
		if e.deleted {
			v = y.ValueStruct{Meta: bitDelete}
		}
		b.Add(y.KeyWithTs([]byte(e.key), e.version), v, 0)
	}
	tab, err := table.CreateTable(table.NewFilename(db.lc.reserveFileID(), db.opt.Dir), b)
	require.NoError(t, err)
	require.NoError(t, db.manifest.addChanges([]*pb.ManifestChange{
		newCreateChange(tab.ID(), level, 0, tab.CompressionType())}, db.opt))
	lh := db.lc.levels[level]
	lh.Lock()
	lh.tables = append(lh.tables, tab)
	lh.Unlock()
}

// levelKeys lists the entries of a level's tables: key, version, and
// whether it is a tombstone.
func levelKeys(db *DB, level int) []tombstoneEntry {
	var got []tombstoneEntry
	lh := db.lc.levels[level]
	lh.RLock()
	defer lh.RUnlock()
	for _, tab := range lh.tables {
		it := tab.NewIterator(0)
		for it.Rewind(); it.Valid(); it.Next() {
			got = append(got, tombstoneEntry{string(y.ParseKey(it.Key())), y.ParseTs(it.Key()), it.Value().Meta&bitDelete != 0})
		}
		it.Close()
	}
	return got
}

// A compaction from level 1 into level 2, with level 3 below it holding
// one of the two deleted keys and spanning both: Badger keeps both
// tombstones (the compaction's range overlaps level 3); with
// DropShadowlessTombstones the one whose key level 3 does not hold goes,
// with the value it shadowed, and the other stays and still hides level
// 3's value.
func TestCompactionDropsTombstonesNothingBelowHolds(t *testing.T) {
	for _, drop := range []bool{false, true} {
		opt := DefaultOptions(t.TempDir()).WithNumCompactors(0).WithCompression(options.None).WithLogger(nil)
		opt.DropShadowlessTombstones = drop
		db, err := OpenManaged(opt)
		require.NoError(t, err)
		db.SetDiscardTs(10)

		addTableAt(t, db, 1, []tombstoneEntry{{"b-gone", 5, true}, {"c-kept", 5, true}})
		addTableAt(t, db, 2, []tombstoneEntry{{"a", 1, false}, {"b-gone", 1, false}, {"d", 1, false}})
		addTableAt(t, db, 3, []tombstoneEntry{{"a", 1, false}, {"c-kept", 1, false}, {"z", 1, false}})

		cd := compactDef{thisLevel: db.lc.levels[1], nextLevel: db.lc.levels[2], t: db.lc.levelTargets()}
		cd.top = append(cd.top, db.lc.levels[1].tables...)
		cd.bot = append(cd.bot, db.lc.levels[2].tables...)
		cd.t.baseLevel = 1
		require.NoError(t, db.lc.runCompactDef(-1, 1, cd))

		want := []tombstoneEntry{{"a", 1, false}, {"b-gone", 5, true}, {"c-kept", 5, true}, {"d", 1, false}}
		if drop {
			want = []tombstoneEntry{{"a", 1, false}, {"c-kept", 5, true}, {"d", 1, false}}
		}
		require.Equal(t, want, levelKeys(db, 2), "drop %v", drop)
		require.Empty(t, levelKeys(db, 1))

		txn := db.NewTransactionAt(20, false)
		for _, k := range []string{"b-gone", "c-kept"} {
			_, err := txn.Get([]byte(k))
			require.ErrorIs(t, err, ErrKeyNotFound, "%s (drop %v)", k, drop)
		}
		_, err = txn.Get([]byte("a"))
		require.NoError(t, err)
		txn.Discard()
		require.NoError(t, db.Close())
	}
}

// A store of small tables and levels, with its compactors running, takes
// a long run of writes and deletions, read against a map of what each key
// holds: during the run, at its end, and after a reopen. Most keys are
// new, spread over the whole key range, and many are deleted soon after,
// as a crawl's frontier entries are; others are overwritten or deleted
// long after. Dropping tombstones early must never bring back a deleted
// key's older value, and the run must drop some.
func TestDroppedTombstonesBringNothingBack(t *testing.T) {
	dir := t.TempDir()
	opt := DefaultOptions(dir).WithLogger(nil).WithCompression(options.None).
		WithMemTableSize(256 << 10).WithBaseTableSize(32 << 10).WithBaseLevelSize(128 << 10).
		WithNumLevelZeroTables(1).WithNumLevelZeroTablesStall(4).WithNumCompactors(2).
		WithValueThreshold(64).WithIndexCacheSize(1 << 20)
	opt.LevelSizeMultiplier = 3
	opt.DropShadowlessTombstones = true
	opt.CompactLeastOverlapFirst = true // as cocrawl runs it (cocrawl_overlap.go)
	db, err := Open(opt)
	require.NoError(t, err)

	const ops = 200_000
	model := map[string]string{}
	var written []string // every key written, in order
	rnd := rand.New(rand.NewPCG(1, 2))
	// check reads keys against the model.
	check := func(db *DB, ks []string) {
		t.Helper()
		require.NoError(t, db.View(func(txn *Txn) error {
			for _, k := range ks {
				item, err := txn.Get([]byte(k))
				want, ok := model[k]
				if !ok {
					require.ErrorIs(t, err, ErrKeyNotFound, "%s was deleted", k)
					continue
				}
				require.NoError(t, err, k)
				got, err := item.ValueCopy(nil)
				require.NoError(t, err)
				require.Equal(t, want, string(got), k)
			}
			return nil
		}))
	}
	// sample is some of the keys written, the last ones among them.
	sample := func() []string {
		ks := written[max(len(written)-300, 0):]
		for range 300 {
			ks = append(ks, written[rnd.IntN(len(written))])
		}
		return ks
	}
	before := tombstonesDropped.Load()
	for n := 0; n < ops; {
		wb := db.NewWriteBatch()
		for range 200 {
			var k string
			switch r := rnd.IntN(10); {
			case r < 6 || len(written) < 1000: // a new key
				k = fmt.Sprintf("k/%03d/%08d", rnd.IntN(1000), n)
				written = append(written, k)
			case r < 8: // a recent key deleted
				k = written[len(written)-1-rnd.IntN(1000)]
			default: // any key, overwritten or deleted
				k = written[rnd.IntN(len(written))]
			}
			if _, ok := model[k]; ok && rnd.IntN(2) == 0 {
				require.NoError(t, wb.Delete([]byte(k)))
				delete(model, k)
			} else {
				// Some values inline, some in the value log.
				v := fmt.Sprintf("%s@%d%s", k, n, strings.Repeat("v", rnd.IntN(2)*80))
				require.NoError(t, wb.Set([]byte(k), []byte(v)))
				model[k] = v
			}
			n++
		}
		require.NoError(t, wb.Flush())
		if n%20_000 == 0 {
			check(db, sample())
		}
	}
	check(db, written)
	require.NoError(t, db.Close())
	dropped := tombstonesDropped.Load() - before
	require.NotZero(t, dropped, "no tombstone was dropped before the last level")
	t.Logf("%d tombstones dropped before the last level", dropped)

	db, err = Open(opt)
	require.NoError(t, err)
	defer db.Close()
	check(db, written)
}
