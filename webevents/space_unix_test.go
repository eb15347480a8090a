//go:build unix

package webevents

import (
	"os"
	"path/filepath"
	"slices"
	"testing"
	"time"
)

// guardOnTemp is a guard over a new directory whose backing only records
// what it backs; size creates or resizes a file in it, and check checks
// and compares what was backed with want.
func guardOnTemp(t *testing.T) (g *spaceGuard, size func(name string, n int64), check func(want ...string)) {
	dir := t.TempDir()
	var backed []string
	g = newSpaceGuard(dir, 0)
	g.relist = 0 // every change listed, unless a test says otherwise
	g.free = func(string) (uint64, error) { return 1 << 40, nil }
	g.back = func(path string, size int64) error {
		backed = append(backed, filepath.Base(path))
		return nil
	}
	size = func(name string, n int64) {
		t.Helper()
		f, err := os.OpenFile(filepath.Join(dir, name), os.O_CREATE|os.O_WRONLY, 0o600)
		if err != nil {
			t.Fatal(err)
		}
		f.Close()
		if err := os.Truncate(filepath.Join(dir, name), n); err != nil {
			t.Fatal(err)
		}
	}
	check = func(want ...string) {
		t.Helper()
		backed = nil
		if err := g.check(); err != nil {
			t.Fatal(err)
		}
		slices.Sort(backed)
		if !slices.Equal(backed, want) {
			t.Errorf("backed %v, want %v", backed, want)
		}
	}
	return g, size, check
}

// The guard backs each mapped file once at each size it takes, and does
// not look again at a finished value log (one before the newest): only
// the newest value log and the memtables' logs grow.
func TestSpaceGuardBacksWhatGrows(t *testing.T) {
	g, sizeFile, check := guardOnTemp(t)
	sizeFile("000001.vlog", 1000)
	sizeFile("000002.vlog", 0) // created, not yet sized: nothing to back yet
	sizeFile("00003.mem", 4096)
	sizeFile("000004.sst", 4096) // a table: not mapped for writing
	check("000001.vlog", "00003.mem")
	check()
	sizeFile("000002.vlog", 8192)
	sizeFile("00003.mem", 8192)
	check("000002.vlog", "00003.mem")
	sizeFile("000001.vlog", 9000) // finished: Badger never grows it
	check()
	sizeFile("000010.vlog", 100) // a newer one: 000002 is finished now
	check("000010.vlog")
	sizeFile("000002.vlog", 9000)
	check()
	if err := os.Remove(filepath.Join(g.dir, "000010.vlog")); err != nil {
		t.Fatal(err)
	}
	check("000002.vlog") // the newest again, at a new size
	if _, ok := g.backed["000010.vlog"]; ok {
		t.Error("a removed file is still counted as backed")
	}
}

// While the directory is unchanged (and settled: two seconds past its
// change) the guard does not list it, but still backs the files that may
// grow; a new file changes the directory and is backed at once.
func TestSpaceGuardSkipsAnUnchangedDirectory(t *testing.T) {
	g, resize, check := guardOnTemp(t)
	resize("000001.vlog", 100)
	resize("000002.vlog", 100)
	resize("00003.mem", 100)
	check("000001.vlog", "000002.vlog", "00003.mem")
	time.Sleep(2100 * time.Millisecond)
	check() // lists once more: the listing before was too close to the change
	listed := g.listed
	resize("000002.vlog", 200) // a truncate changes the file, not the directory
	resize("00003.mem", 200)
	check("000002.vlog", "00003.mem")
	if !g.listed.Equal(listed) || len(g.growing) != 2 {
		t.Errorf("the unchanged directory was listed again (growing %v)", g.growing)
	}
	resize("000004.vlog", 100)
	check("000004.vlog")
}

// While the directory changes faster than the guard lists it, the next
// memtable log and value log by Badger's numbering are still backed at
// once; a file out of that numbering waits for the next listing.
func TestSpaceGuardFindsBadgersNextLogsBetweenListings(t *testing.T) {
	g, resize, check := guardOnTemp(t)
	resize("000001.vlog", 100)
	resize("000002.vlog", 100)
	resize("00007.mem", 100)
	resize("000001.sst", 100)
	check("000001.vlog", "000002.vlog", "00007.mem")
	g.relist = time.Hour
	resize("000002.sst", 100) // a compaction's table: the directory changed
	check()
	resize("00008.mem", 100)
	resize("00009.mem", 100)
	check("00008.mem", "00009.mem")
	resize("000003.vlog", 100)
	check("000003.vlog")
	resize("000002.vlog", 300) // finished: no longer looked at
	resize("000003.vlog", 200)
	resize("00007.mem", 200)
	check("000003.vlog", "00007.mem")
	resize("000010.vlog", 100) // out of the numbering: left to the listing
	check()
	g.relist = 0
	check("000010.vlog")
}
