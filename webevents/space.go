package webevents

import (
	"errors"
	"fmt"
	"sync"
	"time"
)

// ErrNoSpace is returned by a write when the store's disk cannot take it
// safely. Badger maps its write-ahead logs (.mem) and value logs (.vlog)
// into memory as sparse files: writing into a page the disk cannot back
// kills the process with SIGBUS. So, before each write, the guard makes
// the disk back the files Badger has mapped (fallocate), and refuses the
// write while there is no room for the next pair Badger may create. What
// is stored is untouched, and writes resume when space is freed.
var ErrNoSpace = errors.New("webevents: not enough free disk space")

// spaceGuard keeps Badger's mapped files backed and checks for room.
type spaceGuard struct {
	mu     sync.Mutex
	dir    string
	need   uint64           // free bytes a write needs: room for a new .vlog and .mem
	backed map[string]int64 // mapped files already allocated, by name, at their size
	// listed is the directory's change time at the last listing, and
	// growing the files of that listing that may still grow (the
	// memtables' logs, the newest value log): while the directory is
	// unchanged only they are looked at (space_unix.go).
	listed  time.Time
	growing []string
	// listedAt is when the directory was last listed; while it changes
	// (new tables at each compaction), it is listed again only relist
	// after that, and in between the next memtable log and value log
	// Badger will create are looked for by name (space_unix.go).
	listedAt         time.Time
	relist           time.Duration
	nextMem, nextLog int // their file numbers; 0 when not known
	// free reports the bytes an unprivileged writer may still use; back
	// allocates a file's blocks (nil where the system cannot).
	free func(dir string) (uint64, error)
	back func(path string, size int64) error
}

// check backs the mapped files and returns ErrNoSpace (wrapped) when one
// cannot be backed or free space is below need.
func (g *spaceGuard) check() error {
	if g == nil || g.free == nil {
		return nil
	}
	g.mu.Lock()
	defer g.mu.Unlock()
	if err := g.backFiles(); err != nil {
		return err
	}
	free, err := g.free(g.dir)
	if err != nil {
		return nil // cannot tell: let Badger try
	}
	if free < g.need {
		return fmt.Errorf("%w: %d MiB free, %d MiB needed to grow safely", ErrNoSpace, free>>20, g.need>>20)
	}
	return nil
}
