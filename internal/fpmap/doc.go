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
// the end, and costs more than a Go map's (83 ns against 66 at 4 million
// keys; a hit 40 against 71). The collector's cost per poll late was
// unchanged: it does not scan maps of integers either way.
//
// Keys are mixed with a seed of each map's own before they pick a slot:
// they are fingerprints of URLs that sites choose, and a site that knew
// where they land could make long runs for every lookup to walk.
//
// The map is split into 256 segments by the top bits of the mixed key,
// each an open-addressing table with linear probing that doubles on its
// own when 13/16 full, so growth comes in small steps; a deleted slot is
// refilled by shifting the run after it back, so no tombstones build up.
// Small segments are ordinary Go slices; from 64 KiB they are mapped, and
// a map's mappings are unmapped when it becomes unreachable.
//
// Written here: no maintained Go module keeps an integer map with deletes
// off the heap (glycerine/offheap has been unmaintained since 2016;
// philpearl/gcswiss has string keys and no deletes). A Map is not safe
// for concurrent use.
package fpmap
