package sim

import "testing"

// A share log reads back every record by absolute position, drops only
// whole blocks wholly before the position kept, and reuses dropped blocks.
func TestShareLogKeepsPositionsAcrossDrops(t *testing.T) {
	var l shareLog
	var free [][]record
	add := func(n int) {
		for range n {
			if l.full() {
				l.grow(&free)
			}
			pos := l.end()
			l.add(record{obj: uint32(pos), ver: uint16(pos % 7), lpd: float64(pos)})
		}
	}
	check := func(from int64) {
		t.Helper()
		for pos := from; pos < l.end(); pos++ {
			if r := l.at(pos); int64(r.obj) != pos || r.lpd != float64(pos) {
				t.Fatalf("at(%d) = %+v", pos, r)
			}
		}
	}
	add(3*logBlock + 100)
	check(0)
	if l.end() != 3*logBlock+100 || len(l.blocks) != 4 {
		t.Fatalf("end %d blocks %d", l.end(), len(l.blocks))
	}
	l.dropBefore(logBlock+5, &free) // block 0 only: block 1 holds position logBlock+5
	if l.base != logBlock || len(free) != 1 {
		t.Fatalf("base %d, %d free", l.base, len(free))
	}
	check(logBlock + 5)
	add(logBlock) // fills block 3 and takes the free block for the next
	if len(free) != 0 || l.end() != 4*logBlock+100 {
		t.Fatalf("free %d end %d", len(free), l.end())
	}
	check(logBlock)
	l.dropBefore(l.end(), &free) // everything read: the partly filled last block stays
	if len(l.blocks) != 1 || l.base != 4*logBlock {
		t.Fatalf("after dropping all read: %d blocks from %d", len(l.blocks), l.base)
	}
	check(l.end() - 100)
}
