// Package fpmap is a hash map from 64-bit fingerprints to small integers
// whose slots live outside Go's heap.
//
// A crawler's frontier keeps one entry per URL on disk (the URL-seen test
// of its backlog and its parked revisits): tens of millions of entries.
// As Go maps they were 416 of the 742 MB live at 15 million URLs. Here a
// lookup is one probe into a flat array rather than a directory, a
// group's control bytes and a slot, and the slots are memory mapped from
// the operating system (anonymous, on Unix) outside the heap, where no
// collection's headroom is kept for them and no freed table is left for
// the heap to reuse: a 32-minute crawl to 15 million URLs held 36 bytes
// of anonymous memory per additional URL against 42 with Go maps in the
// run right after, and spent about 6 µs a poll less in lookups late
// (docs/performance.md, issue 30). A lookup that misses walks its run to
// the end, and costs more than a Go map's: 95 to 137 ns in maps of 2.2 to
// 5.6 million entries, where a map of doubling segments took 67 to 190 by
// its load and a Go map about 80 (BenchmarkCycleMiss); a hit 49 against
// 61 at 4 million. The collector's cost per poll late was
// unchanged: it does not scan maps of integers either way.
//
// Keys are mixed with a seed of each map's own before they pick a slot:
// they are fingerprints of URLs that sites choose, and a site that knew
// where they land could make long runs for every lookup to walk.
//
// The map is split into 256 segments by the top bits of the mixed key,
// each an open-addressing table with linear probing, of any size (a key's
// home slot is its next bits scaled to the size). A segment grows by a
// quarter when two thirds full, at sizes of its own: the 256 segments'
// sizes are spread evenly over a quarter's growth, so the map's memory
// follows its entries (18 to 22.5 bytes an entry with uint32 values, 24 to
// 30 with uint64) and does not jump. When every segment doubled at 13/16
// full, every segment of a map doubled within a few thousand entries of
// the others: a map passing 6.8 million entries took 134 MB more at once
// (2^23 more slots of 16 bytes), and a crawl's anonymous memory per
// additional URL, fitted over a range where two maps passed that size, was
// 70 bytes; over about the same range with these maps, 49. A
// key is held as two 32-bit halves, so a slot of a uint32 value is 12
// bytes. A deleted slot is refilled by shifting the run after it back, so
// no tombstones build up. Small segments are ordinary Go slices; from 64
// KiB they are mapped, and a map's mappings are unmapped when it becomes
// unreachable. Growing by a quarter rehashes a segment often as it fills
// from empty, so a caller that knows about how many keys are coming
// (a restart, from the store's own key counts) reserves room for them
// first (Reserve): 196 ns a key against 780 filling 4 million
// (BenchmarkFill).
//
// Written here: no maintained Go module keeps an integer map with deletes
// off the heap (glycerine/offheap has been unmaintained since 2016;
// philpearl/gcswiss has string keys and no deletes). A Map is not safe
// for concurrent use.
package fpmap
