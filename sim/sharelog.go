package sim

// logBlock is the number of records in one block of a share log (256 KB).
const logBlock = 1 << 14

// shareLog is a crawler's share log: every record it took, in order, by
// absolute position. It is kept in fixed-size blocks rather than one slice
// because the logs of a large community are most of a run's memory: a
// growing slice is copied each time it grows (and holds old and new copies
// at once), and dropping its head means moving the tail; blocks are
// appended and dropped whole, and the world recycles them.
type shareLog struct {
	blocks [][]record // all full but the last
	base   int64      // absolute position of blocks[0][0]
}

// end is the absolute position one past the last record.
func (l *shareLog) end() int64 {
	if len(l.blocks) == 0 {
		return l.base
	}
	return l.base + int64(len(l.blocks)-1)*logBlock + int64(len(l.blocks[len(l.blocks)-1]))
}

// at is the record at absolute position pos, which must be held.
func (l *shareLog) at(pos int64) record {
	i := uint64(pos - l.base)
	return l.blocks[i/logBlock][i%logBlock]
}

// full reports whether the next append needs a new block.
func (l *shareLog) full() bool {
	return len(l.blocks) == 0 || len(l.blocks[len(l.blocks)-1]) == logBlock
}

// add appends r; the last block must have room (see full and grow).
func (l *shareLog) add(r record) {
	last := len(l.blocks) - 1
	l.blocks[last] = append(l.blocks[last], r)
}

// grow appends an empty block taken from free, or a new one.
func (l *shareLog) grow(free *[][]record) {
	var b []record
	if n := len(*free); n > 0 {
		b, *free = (*free)[n-1][:0], (*free)[:n-1]
	} else {
		b = make([]record, 0, logBlock)
	}
	l.blocks = append(l.blocks, b)
}

// dropBefore gives the blocks wholly before absolute position keep back to
// free. A log with no records left keeps no blocks.
func (l *shareLog) dropBefore(keep int64, free *[][]record) {
	n := 0
	for n < len(l.blocks) && l.base+int64(n+1)*logBlock <= keep && len(l.blocks[n]) == logBlock {
		n++
	}
	if n == 0 {
		return
	}
	*free = append(*free, l.blocks[:n]...)
	l.blocks = append(l.blocks[:0], l.blocks[n:]...)
	l.base += int64(n) * logBlock
}
