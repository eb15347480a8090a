/*
 * cocrawl: not part of Badger v4.9.6; see COCRAWL.md.
 */

package badger

import (
	"fmt"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/dgraph-io/badger/v4/options"
)

// Level 1 holds an old table over a..c, which overlaps a level-2 table of
// 2,000 keys, and a newer one over x..z, which overlaps one of 10 keys.
// Badger's order compacts the old table first; CompactLeastOverlapFirst
// the newer, which rewrites a small part of level 2 for the same bytes
// moved down.
func TestCompactionPicksTheLeastOverlap(t *testing.T) {
	for _, leastOverlap := range []bool{false, true} {
		opt := DefaultOptions(t.TempDir()).WithNumCompactors(0).WithCompression(options.None).WithLogger(nil)
		opt.CompactLeastOverlapFirst = leastOverlap
		db, err := OpenManaged(opt)
		require.NoError(t, err)

		var wide, narrow []tombstoneEntry
		for i := range 2000 {
			wide = append(wide, tombstoneEntry{key: fmt.Sprintf("b%06d", i), version: 1})
		}
		for i := range 10 {
			narrow = append(narrow, tombstoneEntry{key: fmt.Sprintf("y%06d", i), version: 1})
		}
		addTableAt(t, db, 1, []tombstoneEntry{{key: "a", version: 2}, {key: "c", version: 2}})
		addTableAt(t, db, 1, []tombstoneEntry{{key: "x", version: 9}, {key: "z", version: 9}})
		addTableAt(t, db, 2, wide)
		addTableAt(t, db, 2, narrow)

		cd := compactDef{thisLevel: db.lc.levels[1], nextLevel: db.lc.levels[2], t: db.lc.levelTargets()}
		require.True(t, db.lc.fillTables(&cd))
		require.Len(t, cd.top, 1)
		first := string(cd.top[0].Smallest()[:1])
		want := "a" // the oldest
		if leastOverlap {
			want = "x"
		}
		require.Equal(t, want, first, "least overlap %v", leastOverlap)
		require.Len(t, cd.bot, 1)
		require.NoError(t, db.Close())
	}
}
