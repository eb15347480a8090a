//go:build unix

package webevents

import (
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"

	"golang.org/x/sys/unix"
)

// lockDir takes an exclusive lock on dir for the life of a store. Badger
// locks its directory too, but its error does not wrap the cause, so only
// our own lock can tell a caller "in use" through ErrInUse.
func lockDir(dir string) (io.Closer, error) {
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return nil, fmt.Errorf("webevents: open store %s: %w", dir, err)
	}
	f, err := os.OpenFile(filepath.Join(dir, "cocrawl.lock"), os.O_CREATE|os.O_RDWR, 0o600)
	if err != nil {
		return nil, fmt.Errorf("webevents: open store %s: %w", dir, err)
	}
	if err := unix.Flock(int(f.Fd()), unix.LOCK_EX|unix.LOCK_NB); err != nil {
		f.Close()
		if errors.Is(err, unix.EWOULDBLOCK) {
			return nil, fmt.Errorf("%w: %s", ErrInUse, dir)
		}
		return nil, fmt.Errorf("webevents: lock store %s: %w", dir, err)
	}
	return f, nil // closing the file releases the lock
}
