/*
 * cocrawl: not part of Badger v4.9.6; see COCRAWL.md.
 */

package badger

import (
	"bytes"
	"encoding/binary"
	"hash/crc32"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/dgraph-io/badger/v4/y"
)

// encodeEntry writes what Badger's did, into a buffer that may hold
// entries already (the value log encodes a request's entries one after
// another): the header, the key, the value, and the CRC-32C of those
// three, which cocrawl's change takes from the buffer rather than from a
// hash written alongside.
func TestEncodeEntryAppendsChecksummedEntry(t *testing.T) {
	lf := &logFile{}
	var buf bytes.Buffer
	buf.WriteString("an earlier entry")
	e := &Entry{Key: y.KeyWithTs([]byte("r/host\x00due"), 7), Value: bytes.Repeat([]byte("v"), 300),
		ExpiresAt: 12345, UserMeta: 3, meta: bitValuePointer}
	n, err := lf.encodeEntry(&buf, e, 0)
	require.NoError(t, err)

	h := header{klen: uint32(len(e.Key)), vlen: uint32(len(e.Value)), expiresAt: e.ExpiresAt, meta: e.meta, userMeta: e.UserMeta}
	var enc [maxHeaderSize]byte
	want := append(append(append([]byte{}, enc[:h.Encode(enc[:])]...), e.Key...), e.Value...)
	want = binary.BigEndian.AppendUint32(want, crc32.Checksum(want, y.CastagnoliCrcTable))
	require.Equal(t, "an earlier entry", buf.String()[:16])
	require.Equal(t, want, buf.Bytes()[16:])
	require.Equal(t, len(want), n)

	// And the value log's reader takes it back.
	r := &safeRead{lf: lf, k: make([]byte, 10), v: make([]byte, 10), recordOffset: 0}
	got, err := r.Entry(bytes.NewReader(buf.Bytes()[16:]))
	require.NoError(t, err)
	require.Equal(t, e.Key, got.Key)
	require.Equal(t, e.Value, got.Value)
	require.Equal(t, e.ExpiresAt, got.ExpiresAt)
}
