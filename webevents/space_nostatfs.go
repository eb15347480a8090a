//go:build unix && !(linux || darwin || freebsd || dragonfly || openbsd || netbsd)

package webevents

import "errors"

// freeBytes cannot tell free space on this system: the guard lets each
// write try (spaceGuard.check), as when the call fails elsewhere.
func freeBytes(string) (uint64, error) {
	return 0, errors.New("webevents: free space is not known on this system")
}
