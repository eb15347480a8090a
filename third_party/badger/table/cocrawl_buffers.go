/*
 * cocrawl: not part of Badger v4.9.6; see ../COCRAWL.md.
 */

package table

import (
	"bufio"
	"io"
	"sync"

	fbs "github.com/google/flatbuffers/go"
)

// A builder needs, for every table it writes, the hashes of its keys (for
// the table's Bloom filter) and a flatbuffers builder of 3 MiB for its
// index. Badger allocates both afresh for each table, and the hashes grow
// by doubling to a megabyte or more: on a crawler compacting several
// megabytes a second those large allocations, zeroed and faulted in, and
// the collections they brought on were several percent of its CPU late in
// a crawl (cocrawl's docs/performance.md). A finished builder hands them
// to the next instead, up to spareBuffers of each; the collector takes
// the rest as before. So does CreateTable's write buffer.
const (
	spareBuffers = 16
	// Buffers larger than these are let go rather than kept.
	maxSpareKeyHashes = 4 << 20  // hashes (16 MiB)
	maxSpareIndex     = 16 << 20 // bytes
)

var spare struct {
	mu        sync.Mutex
	keyHashes [][]uint32
	indexes   []*fbs.Builder
	writers   []*bufio.Writer
}

// writeBufferSize is CreateTable's write buffer.
const writeBufferSize = 1 << 20

// takeWriter returns a buffered writer to w of writeBufferSize.
func takeWriter(w io.Writer) *bufio.Writer {
	spare.mu.Lock()
	n := len(spare.writers)
	if n == 0 {
		spare.mu.Unlock()
		return bufio.NewWriterSize(w, writeBufferSize)
	}
	bw := spare.writers[n-1]
	spare.writers[n-1] = nil
	spare.writers = spare.writers[:n-1]
	spare.mu.Unlock()
	bw.Reset(w)
	return bw
}

// giveWriter keeps a writer takeWriter gave, flushed or not, for the next
// table.
func giveWriter(bw *bufio.Writer) {
	bw.Reset(nil) // nor its file
	spare.mu.Lock()
	defer spare.mu.Unlock()
	if len(spare.writers) < spareBuffers {
		spare.writers = append(spare.writers, bw)
	}
}

// takeKeyHashes returns an empty slice for a new builder's key hashes,
// with the capacity of one a builder gave back if there is one.
func takeKeyHashes() []uint32 {
	spare.mu.Lock()
	defer spare.mu.Unlock()
	n := len(spare.keyHashes)
	if n == 0 {
		return nil
	}
	h := spare.keyHashes[n-1]
	spare.keyHashes[n-1] = nil
	spare.keyHashes = spare.keyHashes[:n-1]
	return h[:0]
}

// takeIndexBuilder returns a reset flatbuffers builder for a table's index.
func takeIndexBuilder() *fbs.Builder {
	spare.mu.Lock()
	n := len(spare.indexes)
	if n == 0 {
		spare.mu.Unlock()
		return fbs.NewBuilder(3 << 20)
	}
	ib := spare.indexes[n-1]
	spare.indexes[n-1] = nil
	spare.indexes = spare.indexes[:n-1]
	spare.mu.Unlock()
	ib.Reset()
	return ib
}

// giveBack keeps a closed builder's key hashes and index builder (either
// may be nil) for the next builders. Nothing may use them afterwards.
func giveBack(keyHashes []uint32, index *fbs.Builder) {
	spare.mu.Lock()
	defer spare.mu.Unlock()
	if cap(keyHashes) > 0 && cap(keyHashes) <= maxSpareKeyHashes && len(spare.keyHashes) < spareBuffers {
		spare.keyHashes = append(spare.keyHashes, keyHashes[:0])
	}
	if index != nil && cap(index.Bytes) <= maxSpareIndex && len(spare.indexes) < spareBuffers {
		spare.indexes = append(spare.indexes, index)
	}
}
