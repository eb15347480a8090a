//go:build unix

package webevents

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"time"

	"golang.org/x/sys/unix"
)

func newSpaceGuard(dir string, need uint64) *spaceGuard {
	return &spaceGuard{dir: dir, need: need, backed: map[string]int64{}, free: freeBytes, back: fallocate, relist: time.Second}
}

// backFiles allocates the blocks of every mapped file not yet backed at
// its present size. Badger creates a file in the directory before it maps
// it, so while the directory is unchanged only the files that may still
// grow are looked at (a value log other than the newest is never written
// again: Badger appends to the newest, and its GC rewrites into it). At
// 13 million URLs a listing of the directory and a stat of each of its
// hundred value logs before every write took a tenth of the crawler's
// CPU, and the listing alone 4.6%. While compactions change the directory
// every second or so, it is listed at most every g.relist, and between
// listings the next logs by Badger's numbering are looked for by name: at
// 15 million URLs the listings were 3% of the CPU.
// g.mu held.
func (g *spaceGuard) backFiles() error {
	var st unix.Stat_t
	if err := unix.Stat(g.dir, &st); err != nil {
		return nil
	}
	changed := time.Unix(st.Ctim.Unix())
	// A listing within two seconds of the directory's change is not
	// trusted to have seen it all: some filesystems keep whole seconds.
	settled := changed.Equal(g.listed) && time.Since(changed) > 2*time.Second
	if settled || time.Since(g.listedAt) < g.relist {
		for _, name := range g.growing {
			if err := g.backOne(name, nil); err != nil {
				return err
			}
		}
		if settled {
			return nil
		}
		return g.backNext()
	}
	d, err := os.Open(g.dir)
	if err != nil {
		return nil
	}
	entries, err := d.ReadDir(-1) // unsorted, unlike os.ReadDir
	d.Close()
	if err != nil {
		return nil
	}
	newest := ""
	g.nextMem, g.nextLog = 0, 0
	for _, e := range entries {
		name := e.Name()
		if strings.HasSuffix(name, ".vlog") && laterLogName(name, newest) {
			newest = name
		}
		if n, ok := fileNumber(name, ".mem"); ok {
			g.nextMem = max(g.nextMem, n+1)
		}
	}
	if n, ok := fileNumber(newest, ".vlog"); ok {
		g.nextLog = n + 1
	}
	seen := make(map[string]bool, len(g.backed)+4)
	g.growing = g.growing[:0]
	for _, e := range entries {
		name := e.Name()
		isLog := strings.HasSuffix(name, ".vlog")
		if !isLog && !strings.HasSuffix(name, ".mem") {
			continue
		}
		seen[name] = true
		if !isLog || name == newest {
			g.growing = append(g.growing, name)
		} else if size, ok := g.backed[name]; ok && size > 0 {
			continue // a finished value log, backed when it was written
		}
		if err := g.backOne(name, e); err != nil {
			return err
		}
	}
	for name := range g.backed {
		if !seen[name] {
			delete(g.backed, name)
		}
	}
	g.listed, g.listedAt = changed, time.Now()
	return nil
}

// backNext backs the memtable log and the value log Badger creates next,
// if they are there: it numbers each one after the last (memtable.go's
// mtFilePath, value.go's vlogFilePath). A new value log finishes the one
// before, which is no longer looked at. g.mu held.
func (g *spaceGuard) backNext() error {
	for g.nextMem > 0 {
		name := fmt.Sprintf("%05d.mem", g.nextMem)
		if _, err := os.Lstat(filepath.Join(g.dir, name)); err != nil {
			break
		}
		g.growing = append(g.growing, name)
		g.nextMem++
		if err := g.backOne(name, nil); err != nil {
			return err
		}
	}
	for g.nextLog > 0 {
		name := fmt.Sprintf("%06d.vlog", g.nextLog)
		if _, err := os.Lstat(filepath.Join(g.dir, name)); err != nil {
			break
		}
		g.growing = slices.DeleteFunc(g.growing, func(n string) bool { return strings.HasSuffix(n, ".vlog") })
		g.growing = append(g.growing, name)
		g.nextLog++
		if err := g.backOne(name, nil); err != nil {
			return err
		}
	}
	return nil
}

// fileNumber is the number of Badger's file name with the extension ext.
func fileNumber(name, ext string) (int, bool) {
	digits, ok := strings.CutSuffix(name, ext)
	if !ok || digits == "" {
		return 0, false
	}
	n, err := strconv.Atoi(digits)
	return n, err == nil && n >= 0
}

// backOne backs the file name at its present size if it is not backed at
// it yet; e is its directory entry when listed. g.mu held.
func (g *spaceGuard) backOne(name string, e os.DirEntry) error {
	var info os.FileInfo
	var err error
	if e != nil {
		info, err = e.Info()
	} else {
		info, err = os.Lstat(filepath.Join(g.dir, name))
	}
	if err != nil || g.backed[name] == info.Size() {
		return nil
	}
	if err := g.back(filepath.Join(g.dir, name), info.Size()); err != nil {
		if errors.Is(err, unix.ENOSPC) {
			return fmt.Errorf("%w: backing %s: %v", ErrNoSpace, name, err)
		}
		if !errors.Is(err, os.ErrNotExist) { // deleted since: flushed
			return fmt.Errorf("webevents: back %s: %w", name, err)
		}
		return nil
	}
	g.backed[name] = info.Size()
	return nil
}

// laterLogName reports whether Badger's log file a was created after b
// ("" is before every one): its names are zero-padded file numbers, so a
// longer name is a later one.
func laterLogName(a, b string) bool {
	return len(a) > len(b) || (len(a) == len(b) && a > b)
}
