package webevents

import (
	"bytes"
	"testing"
	"time"
)

// The stored value carries the attribution last; a value written before
// attribution existed reads as the peer's own record.
func TestCodecAttribution(t *testing.T) {
	e := Event{URL: "http://a.example/", Size: 3, LMD: 1e9, LPD: 1e9 + 5, CID: "a:1 x", Stat: Update, ETag: `"e"`}
	old := appendBinary(nil, &e)
	if got, err := decodeBinary(old); err != nil || got != e {
		t.Fatalf("without From: %+v, %v", got, err)
	}
	e.From = "http://peer.example/robots.shr"
	b := appendBinary(nil, &e)
	if got, err := decodeBinary(b); err != nil || got != e {
		t.Fatalf("with From: %+v, %v", got, err)
	}
	if _, err := decodeBinary(append(b, 'x')); err == nil {
		t.Error("trailing bytes after From accepted")
	}
	// A fingerprint makes a codecV3 value, with or without From.
	e.Fingerprint = "simhash64:0123456789abcdef"
	for _, from := range []string{"", "http://peer.example/robots.shr"} {
		e.From = from
		b := appendBinary(nil, &e)
		if got, err := decodeBinary(b); err != nil || got != e || b[0] != codecV3 {
			t.Fatalf("with fp, From %q: %+v, %v", from, got, err)
		}
	}
}

// FuzzDecodeBinary: no stored value, however corrupt, panics the decoder.
func FuzzDecodeBinary(f *testing.F) {
	e := Event{URL: "http://a.example/", CID: "c", Stat: Create, From: "http://p/robots.shr"}
	f.Add(appendBinary(nil, &e))
	e.Fingerprint = "simhash64:0123456789abcdef"
	f.Add(appendBinary(nil, &e))
	f.Fuzz(func(t *testing.T, b []byte) {
		if got, err := decodeBinary(b); err == nil {
			if again, err := decodeBinary(appendBinary(nil, &got)); err != nil || again != got {
				t.Fatalf("round trip: %+v -> %+v, %v", got, again, err)
			}
		}
	})
}

// A day-log value is one event, as stores before blocks wrote, or a block.
func TestDecodeLog(t *testing.T) {
	a := Event{URL: "http://a.example/", CID: "c", Stat: Create}
	b := Event{URL: "http://b.example/", CID: "c", Stat: Delete, From: "http://p/robots.shr"}
	var got []Event
	collect := func(e Event) error { got = append(got, e); return nil }
	if err := decodeLog(appendBinary(nil, &a), collect); err != nil || len(got) != 1 || got[0] != a {
		t.Fatalf("single: %+v, %v", got, err)
	}
	got = nil
	block := appendToBlock(appendToBlock(nil, appendBinary(nil, &a)), appendBinary(nil, &b))
	if err := decodeLog(block, collect); err != nil || len(got) != 2 || got[0] != a || got[1] != b {
		t.Fatalf("block: %+v, %v", got, err)
	}
	for _, bad := range [][]byte{nil, {codecBlock}, block[:len(block)-1], append(block, 7), {9, 1, 2}} {
		if err := decodeLog(bad, func(Event) error { return nil }); err == nil {
			t.Errorf("decodeLog(%x) accepted", bad)
		}
	}
}

// FuzzDecodeLog: no day-log value, however corrupt, panics the decoder.
func FuzzDecodeLog(f *testing.F) {
	e := Event{URL: "http://a.example/", CID: "c", Stat: Create}
	f.Add(appendToBlock(appendToBlock(nil, appendBinary(nil, &e)), appendBinary(nil, &e)))
	f.Add(appendBinary(nil, &e))
	f.Fuzz(func(t *testing.T, b []byte) {
		_ = decodeLog(b, func(Event) error { return nil })
	})
}

// FuzzDecodeOriginInfo: an origin's day info decodes from its 24 bytes (an
// older build's) or 32 (with the offset its index runs through), encodes
// back to the same bytes, and is refused at any other length.
func FuzzDecodeOriginInfo(f *testing.F) {
	i := originInfo{DayInfo: DayInfo{Size: 1234, Records: 5, Updated: time.Unix(1700000000, 42)}, through: 99}
	f.Add(encodeOriginInfo(&i))
	f.Add(encodeDayInfo(&i.DayInfo))
	f.Add([]byte{1, 2, 3})
	f.Fuzz(func(t *testing.T, b []byte) {
		var got originInfo
		err := decodeOriginInfo(b, &got)
		switch {
		case len(b) != 24 && len(b) != 32:
			if err == nil {
				t.Fatalf("decodeOriginInfo accepted %d bytes", len(b))
			}
		case err != nil:
			t.Fatalf("decodeOriginInfo(%x): %v", b, err)
		case len(b) == 32 && !bytes.Equal(encodeOriginInfo(&got), b):
			t.Fatalf("%x decodes to %+v, which encodes to %x", b, got, encodeOriginInfo(&got))
		}
	})
}
