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
// its present size. g.mu held.
func (g *spaceGuard) backFiles() error {
	entries, err := os.ReadDir(g.dir)
	if err != nil {
		return nil
	}
	seen := map[string]bool{}
	for _, e := range entries {
		name := e.Name()
		if !strings.HasSuffix(name, ".mem") && !strings.HasSuffix(name, ".vlog") {
			continue
		}
		seen[name] = true
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
