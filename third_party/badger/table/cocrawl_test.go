package table

// Tests of cocrawl's change to this package (see ../COCRAWL.md).

import (
	"bytes"
	"fmt"
	"os"
	"path/filepath"
	"testing"

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
