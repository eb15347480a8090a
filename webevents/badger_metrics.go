package webevents

import "expvar"

// badgerCompactionWritten is the expvar map, by level, of the bytes
// Badger's compactions wrote (badger v4's y/metrics.go).
const badgerCompactionWritten = "badger_write_bytes_compaction"

// CompactedBytes is what Badger's compactions have written in this
// process, over all its stores: the sum over levels of Badger's own
// counter (0 before a store was opened).
func CompactedBytes() int64 {
	m, ok := expvar.Get(badgerCompactionWritten).(*expvar.Map)
	if !ok {
		return 0
	}
	var n int64
	m.Do(func(kv expvar.KeyValue) {
		if i, ok := kv.Value.(*expvar.Int); ok {
			n += i.Value()
		}
	})
	return n
}
