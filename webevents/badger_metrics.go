package webevents

import (
	"expvar"
	"strconv"
	"strings"
)

// badgerCompactionWritten is the expvar map, by level, of the bytes
// Badger's compactions wrote (badger v4's y/metrics.go).
const badgerCompactionWritten = "badger_write_bytes_compaction"

// badgerWrittenToTree is the expvar of the bytes writes put in Badger's
// memtables (Badger's estimate of each entry: its key and its value or
// the value's pointer), which the flushes write to level 0.
const badgerWrittenToTree = "badger_write_bytes_l0"

// TreeLevels is how many levels Badger's tree has: level 0, where
// memtables are flushed, and the six below it (Badger's default).
const TreeLevels = 7

// CompactedBytes is what Badger's compactions have written in this
// process, over all its stores and levels (0 before a store was opened).
func CompactedBytes() int64 {
	var n int64
	for _, b := range CompactedBytesByLevel() {
		n += b
	}
	return n
}

// CompactedBytesByLevel is CompactedBytes split by the level the
// compactions wrote to, from Badger's own counters ("l0" to "l6"; into
// level 0 only when Badger merges level 0's tables among themselves).
// In a leveled tree each level a key passes through writes it again, and
// a tree that grows past a level's size gets one more level to pass:
// the sum over TreeWrittenBytes is the tree's write amplification, and
// the split shows which level added to it.
func CompactedBytesByLevel() (by [TreeLevels]int64) {
	m, ok := expvar.Get(badgerCompactionWritten).(*expvar.Map)
	if !ok {
		return by
	}
	m.Do(func(kv expvar.KeyValue) {
		i, ok := kv.Value.(*expvar.Int)
		level, err := strconv.Atoi(strings.TrimPrefix(kv.Key, "l"))
		if ok && err == nil && level >= 0 && level < TreeLevels {
			by[level] += i.Value()
		}
	})
	return by
}

// TreeWrittenBytes is what the writes of this process's stores have put
// in Badger's tree: the bytes its compactions then write again.
func TreeWrittenBytes() int64 {
	if i, ok := expvar.Get(badgerWrittenToTree).(*expvar.Int); ok {
		return i.Value()
	}
	return 0
}
