package crawl

import (
	"encoding/json"
	"reflect"
	"testing"
	"time"
	"unsafe"

	"github.com/cocrawl/cocrawl/crawl/revisit"
)

func fullState() URLState {
	return URLState{URL: "http://a.test/p?q=1", Depth: 3, Due: time.Date(2026, 11, 25, 9, 0, 0, 123456789, time.UTC),
		Interval: 90 * time.Minute, Polls: 7, Gone: true, NotHTML: true, Links: 12, ETag: `W/"abc"`,
		LastMod: "Tue, 24 Nov 2026 10:00:00 GMT", Excluded: true, HostNext: 1_795_000_000_000, Seen: 1_794_999_000_000,
		Rate: revisit.Rate{Visits: 6, Changes: 2, Watched: 5400.5, Still: -1}}
}

func TestStateCodecRoundTrip(t *testing.T) {
	for _, s := range []URLState{fullState(), {URL: "http://b.test/"}} {
		got, err := decodeState(s.URL, appendState(nil, &s))
		if err != nil || !reflect.DeepEqual(got, s) {
			t.Errorf("round trip of %+v: %+v, %v", s, got, err)
		}
	}
	s := fullState()
	j, _ := json.Marshal(s)
	if n := len(appendState(nil, &s)); n*2 > len(j) {
		t.Errorf("binary %d bytes against JSON's %d", n, len(j))
	}
}

// A state's URL, ETag and Last-Modified are one allocation, decoded or
// packed after a poll, so the collector follows one pointer to another
// object for the three, not three.
func TestStateStringsAreOneAllocation(t *testing.T) {
	s := fullState()
	decoded, err := decodeState(s.URL, appendState(nil, &s))
	if err != nil {
		t.Fatal(err)
	}
	var packed URLState
	packed.URL, packed.ETag, packed.LastMod = packStrings(s.URL, s.ETag, s.LastMod)
	for _, got := range []URLState{decoded, packed} {
		if got.URL != s.URL || got.ETag != s.ETag || got.LastMod != s.LastMod {
			t.Fatalf("strings %q %q %q, want %q %q %q", got.URL, got.ETag, got.LastMod, s.URL, s.ETag, s.LastMod)
		}
		base := uintptr(unsafe.Pointer(unsafe.StringData(got.URL)))
		if uintptr(unsafe.Pointer(unsafe.StringData(got.ETag))) != base+uintptr(len(s.URL)) ||
			uintptr(unsafe.Pointer(unsafe.StringData(got.LastMod))) != base+uintptr(len(s.URL)+len(s.ETag)) {
			t.Errorf("the URL, the ETag and the Last-Modified of %+v are not one allocation", got)
		}
	}
}

// A store written before the binary form holds JSON, which loads.
func TestStateCodecReadsOlderJSON(t *testing.T) {
	s := fullState()
	j, _ := json.Marshal(s)
	got, err := decodeState(s.URL, j)
	if err != nil || !reflect.DeepEqual(got, s) {
		t.Errorf("JSON: %+v, %v", got, err)
	}
	if _, err := decodeState("http://other.test/", j); err == nil {
		t.Error("a JSON entry under another URL's key loaded")
	}
}

func TestStateCodecRefusesGarbage(t *testing.T) {
	s := fullState()
	good := appendState(nil, &s)
	for name, v := range map[string][]byte{
		"empty": nil, "unknown version": {9, 0}, "truncated": good[:len(good)-3], "trailing": append(append([]byte{}, good...), 1),
		"huge string": append(append([]byte{}, good[:len(good)-len(s.LastMod)-1]...), 0xff, 0xff, 0x7f),
	} {
		if got, err := decodeState(s.URL, v); err == nil {
			t.Errorf("%s: decoded to %+v", name, got)
		}
	}
}

func FuzzStateCodec(f *testing.F) {
	s := fullState()
	f.Add(appendState(nil, &s))
	f.Add([]byte(`{"u":"http://a.test/","d":1}`))
	f.Fuzz(func(t *testing.T, v []byte) {
		got, err := decodeState("http://a.test/", v)
		if err != nil || (len(v) > 0 && v[0] == '{') {
			return
		}
		again, err := decodeState(got.URL, appendState(nil, &got))
		if err != nil || !reflect.DeepEqual(again, got) {
			t.Errorf("%+v encodes to what decodes as %+v, %v", got, again, err)
		}
	})
}

// BenchmarkStateDecode compares the binary state with the JSON it
// replaced, as a restart reads them.
func BenchmarkStateDecode(b *testing.B) {
	s := fullState()
	bin := appendState(nil, &s)
	j, _ := json.Marshal(s)
	for _, c := range []struct {
		name string
		v    []byte
	}{{"binary", bin}, {"json", j}} {
		b.Run(c.name, func(b *testing.B) {
			b.ReportMetric(float64(len(c.v)), "bytes")
			for b.Loop() {
				if _, err := decodeState(s.URL, c.v); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}
