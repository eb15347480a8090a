//go:build unix

package fpmap

import "golang.org/x/sys/unix"

// mapAnon maps size zeroed bytes from the operating system, nil if it
// cannot (the caller falls back to the heap).
func mapAnon(size int) []byte {
	b, err := unix.Mmap(-1, 0, size, unix.PROT_READ|unix.PROT_WRITE, unix.MAP_ANON|unix.MAP_PRIVATE)
	if err != nil {
		return nil
	}
	mapped.Add(int64(len(b)))
	return b
}

// release unmaps what mapAnon mapped; nil is nothing.
func release(b []byte) {
	if b != nil && unix.Munmap(b) == nil {
		mapped.Add(-int64(len(b)))
	}
}
