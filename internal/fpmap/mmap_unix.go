//go:build unix

package fpmap

import (
	"unsafe"

	"golang.org/x/sys/unix"
)

// hugePage is the size of a transparent huge page on x86-64 and arm64
// (with 4 KiB base pages).
const hugePage = 2 << 20

// mapAnon maps size zeroed bytes from the operating system, nil if it
// cannot (the caller falls back to the heap). A mapping of a huge page or
// more starts on a huge page's boundary and asks for huge pages
// (MADV_HUGEPAGE): a lookup lands anywhere in a segment, and with 4 KiB
// pages nearly every one missed the TLB once the maps outgrew its reach
// (a few MB), a page walk that costs most in a virtual machine.
//
// The mappings are made and unmapped by address (MmapPtr), not with
// unix.Mmap, whose Munmap only takes a whole mapping it made: the head
// and tail around the boundary are given back here.
func mapAnon(size int) []byte {
	length := uintptr(size)
	if size >= hugePage {
		length += hugePage
	}
	p, err := unix.MmapPtr(-1, 0, nil, length, unix.PROT_READ|unix.PROT_WRITE, unix.MAP_ANON|unix.MAP_PRIVATE)
	if err != nil {
		return nil
	}
	if size >= hugePage {
		// Give back what lies before the first boundary and after size
		// bytes from it.
		off := (hugePage - uintptr(p)%hugePage) % hugePage
		if off > 0 {
			_ = unix.MunmapPtr(p, off)
		}
		if tail := hugePage - off; tail > 0 {
			_ = unix.MunmapPtr(unsafe.Add(p, off+uintptr(size)), tail)
		}
		p = unsafe.Add(p, off)
	}
	b := unsafe.Slice((*byte)(p), size)
	if size >= hugePage {
		// Without transparent huge pages (or with them off) the mapping
		// is used as it is.
		_ = unix.Madvise(b, unix.MADV_HUGEPAGE)
	}
	mapped.Add(int64(size))
	return b
}

// release unmaps what mapAnon mapped; nil is nothing.
func release(b []byte) {
	if len(b) > 0 && unix.MunmapPtr(unsafe.Pointer(unsafe.SliceData(b)), uintptr(len(b))) == nil {
		mapped.Add(-int64(len(b)))
	}
}
