package sim

import (
	"unsafe"

	"golang.org/x/sys/unix"
)

// hugePage is the size of a transparent huge page on x86-64 (and on arm64
// with 4 KiB pages; with larger base pages the advice covers less).
const hugePage = 2 << 20

// adviseHugePages asks the kernel to back the whole 2 MiB pages inside s
// with huge pages. The version table and the freshness bitmap are read at
// random, one record at a time, and at thesis scale they span gigabytes:
// with 4 KiB pages a random look-up is likely to miss the TLB too. Most kernels
// give huge pages only on request (transparent_hugepage=madvise), and the
// Go runtime does not ask. It must be called before s is first written,
// so that the pages are huge when they fault in. An error (a kernel
// without transparent huge pages) only costs speed, so callers ignore it.
func adviseHugePages[T any](s []T) error {
	if len(s) == 0 {
		return nil
	}
	base := unsafe.Pointer(&s[0])
	start := uintptr(base)
	lo := (start + hugePage - 1) &^ (hugePage - 1)
	hi := (start + uintptr(len(s))*unsafe.Sizeof(s[0])) &^ (hugePage - 1)
	if hi <= lo {
		return nil // no whole huge page inside s
	}
	b := unsafe.Slice((*byte)(unsafe.Add(base, lo-start)), hi-lo)
	return unix.Madvise(b, unix.MADV_HUGEPAGE)
}
