//go:build unix

package webevents

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"

	"golang.org/x/sys/unix"
)

func newSpaceGuard(dir string, need uint64) *spaceGuard {
	return &spaceGuard{dir: dir, need: need, backed: map[string]int64{}, free: freeBytes, back: fallocate}
}

// freeBytes returns the bytes of dir's filesystem an unprivileged writer
// may still use.
func freeBytes(dir string) (uint64, error) {
	var st unix.Statfs_t
	if err := unix.Statfs(dir, &st); err != nil {
		return 0, err
	}
	return st.Bavail * uint64(st.Bsize), nil
}

// backFiles allocates the blocks of every mapped file not yet backed at
// its present size. A value log other than the newest is never written
// again (Badger appends to the newest only, and its GC rewrites into it),
// so one backed already is not looked at again: at ten million URLs the
// store has a hundred value logs, and a stat of each before every write
// took a tenth of the crawler's CPU. g.mu held.
func (g *spaceGuard) backFiles() error {
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
	for _, e := range entries {
		if name := e.Name(); strings.HasSuffix(name, ".vlog") && laterLogName(name, newest) {
			newest = name
		}
	}
	seen := make(map[string]bool, len(g.backed)+4)
	for _, e := range entries {
		name := e.Name()
		if !strings.HasSuffix(name, ".mem") && !strings.HasSuffix(name, ".vlog") {
			continue
		}
		seen[name] = true
		if size, ok := g.backed[name]; ok && size > 0 && strings.HasSuffix(name, ".vlog") && name != newest {
			continue // a finished value log, backed when it was written
		}
		info, err := e.Info()
		if err != nil || g.backed[name] == info.Size() {
			continue
		}
		if err := g.back(filepath.Join(g.dir, name), info.Size()); err != nil {
			if errors.Is(err, unix.ENOSPC) {
				return fmt.Errorf("%w: backing %s: %v", ErrNoSpace, name, err)
			}
			if !errors.Is(err, os.ErrNotExist) { // deleted since: flushed
				return fmt.Errorf("webevents: back %s: %w", name, err)
			}
			continue
		}
		g.backed[name] = info.Size()
	}
	for name := range g.backed {
		if !seen[name] {
			delete(g.backed, name)
		}
	}
	return nil
}

// laterLogName reports whether Badger's log file a was created after b
// ("" is before every one): its names are zero-padded file numbers, so a
// longer name is a later one.
func laterLogName(a, b string) bool {
	return len(a) > len(b) || (len(a) == len(b) && a > b)
}
