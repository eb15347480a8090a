package webevents

import "testing"

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
}

// FuzzDecodeBinary: no stored value, however corrupt, panics the decoder.
func FuzzDecodeBinary(f *testing.F) {
	e := Event{URL: "http://a.example/", CID: "c", Stat: Create, From: "http://p/robots.shr"}
	f.Add(appendBinary(nil, &e))
	f.Fuzz(func(t *testing.T, b []byte) {
		if got, err := decodeBinary(b); err == nil {
			if again, err := decodeBinary(appendBinary(nil, &got)); err != nil || again != got {
				t.Fatalf("round trip: %+v -> %+v, %v", got, again, err)
			}
		}
	})
}
