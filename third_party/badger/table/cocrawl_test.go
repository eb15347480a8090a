package table

// Tests of cocrawl's change to this package (see ../COCRAWL.md).

import (
	"bufio"
	"bytes"
	"fmt"
	"os"
	"path/filepath"
	"testing"

	fbs "github.com/google/flatbuffers/go"
	"github.com/stretchr/testify/require"

	"github.com/dgraph-io/badger/v4/y"
)

func builderWith(n int, opts Options) *Builder {
	b := NewTableBuilder(opts)
	for i := range n {
		b.Add(y.KeyWithTs([]byte(key("k", i)), 0), y.ValueStruct{Value: []byte(fmt.Sprint(i)), Meta: 'A'}, 0)
	}
	return b
}

// writeTo writes the bytes Copy copies, for tables of one block and of many.
func TestWriteToMatchesCopy(t *testing.T) {
	for _, n := range []int{1, 100, 20000} {
		b := builderWith(n, getTestTableOptions())
		bd := b.Done()
		copied := make([]byte, bd.Size)
		require.Equal(t, bd.Size, bd.Copy(copied))
		var written bytes.Buffer
		w, err := bd.writeTo(&written)
		require.NoError(t, err)
		require.Equal(t, bd.Size, w, "n=%d", n)
		require.Equal(t, copied, written.Bytes(), "n=%d", n)
		b.Close()
	}
}

// CreateTable writes the file whole before it maps it: the file on disk
// holds the table (read with read(2), not through the mapping), and the
// table opened from it finds every key.
func TestCreateTableWritesTheFile(t *testing.T) {
	opts := getTestTableOptions()
	want := builderWith(5000, opts)
	bd := want.Done()
	expect := make([]byte, bd.Size)
	bd.Copy(expect)
	want.Close()

	name := filepath.Join(t.TempDir(), "1.sst")
	b := builderWith(5000, opts)
	defer b.Close()
	tbl, err := CreateTable(name, b)
	require.NoError(t, err)
	defer func() { require.NoError(t, tbl.DecrRef()) }()
	onDisk, err := os.ReadFile(name)
	require.NoError(t, err)
	require.Equal(t, expect, onDisk)
	it := tbl.NewIterator(0)
	defer it.Close()
	count := 0
	for it.Rewind(); it.Valid(); it.Next() {
		require.Equal(t, key("k", count), string(y.ParseKey(it.Key())))
		count++
	}
	require.Equal(t, 5000, count)

	again := builderWith(1, opts)
	defer again.Close()
	_, err = CreateTable(name, again)
	require.ErrorContains(t, err, "file already exists")
}

// emptySpare forgets the buffers builders gave back, so that the next
// builder starts afresh as Badger's do.
func emptySpare() {
	spare.mu.Lock()
	defer spare.mu.Unlock()
	spare.keyHashes, spare.indexes, spare.writers = nil, nil, nil
}

// A builder that takes a larger builder's key hashes and index builder
// writes the same table as a fresh one, byte for byte, and the table
// reads back whole (its blocks' entry offsets too, which each block of a
// builder now reuses).
func TestBuildersReuseBuffers(t *testing.T) {
	opts := getTestTableOptions()
	emptySpare()
	defer emptySpare()
	fresh := map[int][]byte{}
	for _, n := range []int{1, 3000} {
		emptySpare()
		b := builderWith(n, opts)
		fresh[n] = b.Finish()
		b.Close()
	}
	emptySpare()
	big := NewTableBuilder(opts)
	for i := range 20000 {
		big.Add(y.KeyWithTs([]byte(key("z", i)), 0), y.ValueStruct{Value: []byte("other"), Meta: 'B'}, 0)
	}
	big.Finish()
	big.Close()
	require.Len(t, spare.keyHashes, 1)
	require.Len(t, spare.indexes, 1)
	for _, n := range []int{3000, 1} {
		b := builderWith(n, opts)
		require.GreaterOrEqual(t, cap(b.keyHashes), 20000, "n=%d: the big builder's hashes taken", n)
		got := b.Finish()
		b.Close()
		require.Equal(t, fresh[n], got, "n=%d", n)

		tbl, err := OpenInMemoryTable(got, 1, &opts)
		require.NoError(t, err)
		it := tbl.NewIterator(0)
		count := 0
		for it.Rewind(); it.Valid(); it.Next() {
			require.Equal(t, key("k", count), string(y.ParseKey(it.Key())))
			require.Equal(t, fmt.Sprint(count), string(it.Value().Value))
			count++
		}
		it.Close()
		require.Equal(t, n, count)
		require.Equal(t, uint32(n), tbl.KeyCount())
		require.False(t, tbl.DoesNotHave(y.Hash([]byte(key("k", n-1)))))
		require.NoError(t, tbl.DecrRef())
	}
}

// At most spareBuffers of each buffer are kept, and none too large.
func TestSpareBuffersAreBounded(t *testing.T) {
	emptySpare()
	defer emptySpare()
	var indexes []*fbs.Builder
	var writers []*bufio.Writer
	for range spareBuffers + 3 {
		indexes = append(indexes, takeIndexBuilder())
		writers = append(writers, takeWriter(&bytes.Buffer{}))
	}
	for i := range indexes {
		giveBack(make([]uint32, 10), indexes[i])
		giveWriter(writers[i])
	}
	require.Len(t, spare.keyHashes, spareBuffers)
	require.Len(t, spare.indexes, spareBuffers)
	require.Len(t, spare.writers, spareBuffers)
	emptySpare()
	giveBack(make([]uint32, 0, maxSpareKeyHashes+1), nil)
	require.Empty(t, spare.keyHashes, "hashes above the bound are let go")
}
