package webevents

import (
	"os"
	"path/filepath"
)

// storeSizes are Badger's memtable and value-log file sizes, and the
// slack a write needs beyond the room for a new pair of their logs.
type storeSizes struct{ memtable, vlog, slack int64 }

// fullSizes are the store's sizes where the disk has room; smallestSizes
// the least it shrinks to.
var (
	fullSizes     = storeSizes{memtable: 32 << 20, vlog: 64 << 20, slack: 16 << 20}
	smallestSizes = storeSizes{memtable: 1 << 20, vlog: 2 << 20, slack: 1 << 20}
)

// minStoreFree is the least free space a new store starts on: twice what
// its smallest logs need.
var minStoreFree = 2 * uint64(smallestSizes.need())

// sizesFor scales the store's logs to a disk with free bytes: the full
// sizes (32 MiB memtables, 64 MiB value-log files, 208 MiB to grow) where
// that reserve is at most half the room, else smaller, so that the
// reserve stays under about 40% of it (an SD card, a small volume),
// down to 1 MiB memtables. fits is false below minStoreFree.
func sizesFor(free uint64) (sz storeSizes, fits bool) {
	if free >= 2*uint64(fullSizes.need()) {
		return fullSizes, true
	}
	mt := smallestSizes.memtable
	for mt*2 <= fullSizes.memtable && uint64(mt*2)*16 <= free {
		mt *= 2
	}
	sz = storeSizes{memtable: mt, vlog: 2 * mt, slack: max(smallestSizes.slack, mt/2)}
	return sz, free >= minStoreFree
}

// need is the free space a write needs: room for a new value log and
// memtable log as Badger maps them (twice their size), and the slack.
func (sz storeSizes) need() int64 { return 2*sz.vlog + 2*sz.memtable + sz.slack }

// hasManifest says whether dir holds a store already.
func hasManifest(dir string) bool {
	_, err := os.Stat(filepath.Join(dir, "MANIFEST"))
	return err == nil
}
