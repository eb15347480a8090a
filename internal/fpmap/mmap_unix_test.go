//go:build unix

package fpmap

import (
	"testing"
	"unsafe"
)

// A mapping of a huge page or more starts on a huge page's boundary, is
// all usable, and is unmapped whole; smaller ones are mapped as they are.
func TestMapAnonAlignsLargeMappings(t *testing.T) {
	before := MappedBytes()
	for _, size := range []int{64 << 10, hugePage, 3*hugePage + 4096, 5 * hugePage} {
		b := mapAnon(size)
		if b == nil {
			t.Fatalf("mapAnon(%d) failed", size)
		}
		if len(b) != size || cap(b) != size {
			t.Errorf("mapAnon(%d): len %d cap %d", size, len(b), cap(b))
		}
		if at := uintptr(unsafe.Pointer(unsafe.SliceData(b))); size >= hugePage && at%hugePage != 0 {
			t.Errorf("mapAnon(%d) at %#x, not on a huge page's boundary", size, at)
		}
		for i := 0; i < size; i += 4096 {
			b[i] = 1
		}
		b[size-1] = 1
		if got := MappedBytes() - before; got != int64(size) {
			t.Errorf("mapAnon(%d): MappedBytes grew by %d", size, got)
		}
		release(b)
		if got := MappedBytes(); got != before {
			t.Errorf("release of %d bytes: MappedBytes %d, want %d", size, got, before)
		}
	}
}
