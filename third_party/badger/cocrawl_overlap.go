package badger

import (
	"slices"

	"github.com/dgraph-io/badger/v4/table"
)

// cocrawl: Badger compacts a level's tables oldest first (sortByHeuristic,
// RocksDB's kOldestLargestSeqFirst). With Options.CompactLeastOverlapFirst,
// it compacts first the table whose key range overlaps the fewest bytes of
// the level below against its own size (RocksDB's kMinOverlappingRatio,
// its default since 6.x): a compaction rewrites the table and the
// overlapped tables, so that order moves the most bytes down for each
// byte written. A choice of order only: what a compaction writes and
// drops is Badger's.

// sortByOverlap sorts tables by the bytes of cd.nextLevel their key range
// overlaps, against their own size, least first; older first among equals.
// Levels locked (fillTables).
func (s *levelsController) sortByOverlap(tables []*table.Table, cd *compactDef) {
	if len(tables) == 0 || cd.nextLevel == nil {
		return
	}
	type ranked struct {
		t     *table.Table
		ratio float64
	}
	rs := make([]ranked, len(tables))
	for i, t := range tables {
		left, right := cd.nextLevel.overlappingTables(levelHandlerRLocked{}, getKeyRange(t))
		var over int64
		for _, n := range cd.nextLevel.tables[left:right] {
			over += n.Size()
		}
		rs[i] = ranked{t, float64(over) / float64(max(t.Size(), 1))}
	}
	slices.SortStableFunc(rs, func(a, b ranked) int {
		switch {
		case a.ratio < b.ratio:
			return -1
		case a.ratio > b.ratio:
			return 1
		case a.t.MaxVersion() < b.t.MaxVersion():
			return -1
		case a.t.MaxVersion() > b.t.MaxVersion():
			return 1
		}
		return 0
	})
	for i, r := range rs {
		tables[i] = r.t
	}
}
