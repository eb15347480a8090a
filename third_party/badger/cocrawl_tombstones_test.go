/*
 * cocrawl: not part of Badger v4.9.6; see COCRAWL.md.
 */

package badger

import (
	"errors"
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
			require.True(t, errors.Is(err, ErrKeyNotFound), "%s: %v (drop %v)", k, err, drop)
		}
		_, err = txn.Get([]byte("a"))
		require.NoError(t, err)
		txn.Discard()
		require.NoError(t, db.Close())
	}
}
