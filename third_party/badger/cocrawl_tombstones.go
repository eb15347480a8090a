package badger

import (
	"math"
	"sync/atomic"

	"github.com/dgraph-io/badger/v4/y"
)

// cocrawl: Badger keeps a deleted key's tombstone in a compaction's output
// whenever the compaction's whole key range overlaps a level below
// (checkOverlap), which on a store of spread keys is every compaction but
// the last level's: a tombstone that has met and removed its key's value
// is still carried down to the last level, written once more at each
// level on the way. With Options.DropShadowlessTombstones, a tombstone the
// range check would keep is dropped when no level below the compaction's
// may hold an older version of its key, as the Bloom filter of each
// level's table for the key says (a filter never says no to a key it
// holds, so nothing a reader could see changes: the older versions in the
// compaction's own tables are dropped with it, as Badger drops them when
// the range is clear).

// tombstonesDropped counts the tombstones keepsTombstone let go, in every
// DB of the process: for tests.
var tombstonesDropped atomic.Uint64

// keepsTombstone says whether a compaction into level next, whose key
// range overlaps a level below, keeps the tombstone (or expired entry) of
// key. Badger's rule, always yes, without DropShadowlessTombstones, and in
// a compaction of level 0 into itself, whose older level-0 tables may be
// in another compaction.
func (s *levelsController) keepsTombstone(key []byte, next int) bool {
	if !s.kv.opt.DropShadowlessTombstones || next == 0 || s.mayHoldOlder(key, next+1) {
		return true
	}
	tombstonesDropped.Add(1)
	return false
}

// mayHoldOlder says whether a level from below on may hold a version of
// key (a key with its timestamp). Levels are checked from the top down: a
// compaction between two of them adds its tables to the lower level before
// it removes them from the upper (runCompactDef), so a version moving down
// meanwhile is seen at one level or the other.
func (s *levelsController) mayHoldOlder(key []byte, below int) bool {
	bare := y.ParseKey(key)
	hash := y.Hash(bare)
	// The key's first version in the levels' order: the table a level
	// keeps all of a key's versions in ends at or after it.
	first := y.KeyWithTs(bare, math.MaxUint64)
	for _, lh := range s.levels[below:] {
		tables, release := lh.getTableForKey(first)
		may := false
		for _, t := range tables {
			if !t.DoesNotHave(hash) {
				may = true
				break
			}
		}
		_ = release()
		if may {
			return true
		}
	}
	return false
}
