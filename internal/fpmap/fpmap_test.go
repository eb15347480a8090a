package fpmap

import (
	"encoding/binary"
	"fmt"
	"math/rand/v2"
	"runtime"
	"testing"
	"time"
)

// check compares m with the Go map it should equal, key by key.
func check(t *testing.T, m *Map[uint64], want map[uint64]uint64, probes []uint64) {
	t.Helper()
	if m.Len() != len(want) {
		t.Fatalf("Len %d, want %d", m.Len(), len(want))
	}
	for k, v := range want {
		if got, ok := m.Get(k); !ok || got != v {
			t.Fatalf("Get(%#x) = %d, %v; want %d, true", k, got, ok, v)
		}
	}
	for _, k := range probes {
		_, inWant := want[k]
		if m.Has(k) != inWant {
			t.Fatalf("Has(%#x) = %v, want %v", k, !inWant, inWant)
		}
	}
}

// Random sets, updates and deletes, on random keys and on small
// consecutive ones (which crowd into runs), past the size from which
// segments are mapped: the map answers as a Go map does.
func TestMapMatchesGoMap(t *testing.T) {
	for _, keys := range []struct {
		name string
		key  func(r *rand.Rand) uint64
	}{
		{"random", func(r *rand.Rand) uint64 { return r.Uint64() }},
		{"small", func(r *rand.Rand) uint64 { return r.Uint64N(300_000) }},
	} {
		t.Run(keys.name, func(t *testing.T) {
			defer func(was int) { mapFrom = was }(mapFrom)
			mapFrom = 4 << 10
			r := rand.New(rand.NewPCG(1, 2))
			m, want := New[uint64](), map[uint64]uint64{}
			var keep []uint64
			for i := range 400_000 {
				k := keys.key(r)
				switch op := r.IntN(10); {
				case op < 6:
					v := r.Uint64()
					m.Set(k, v)
					want[k] = v
					keep = append(keep, k)
				case op < 9 && len(keep) > 0:
					// delete one set before, so deletes hit
					j := r.IntN(len(keep))
					k = keep[j]
					keep[j] = keep[len(keep)-1]
					keep = keep[:len(keep)-1]
					m.Delete(k)
					delete(want, k)
				default:
					m.Delete(k)
					delete(want, k)
				}
				if i%50_000 == 0 {
					check(t, m, want, []uint64{k, k + 1, r.Uint64()})
				}
			}
			check(t, m, want, nil)
			mapped := 0
			for i := range m.segs {
				if m.segs[i].mem != nil {
					mapped++
				}
			}
			if mapped == 0 {
				t.Errorf("no segment mapped at %d keys: the test did not reach mapped segments", m.Len())
			}
			for k := range want {
				m.Delete(k)
			}
			check(t, m, map[uint64]uint64{}, []uint64{1, 2, 3})
		})
	}
}

// The key 0 marks an empty slot, so the map holds it apart.
func TestMapKeyZero(t *testing.T) {
	m := New[uint32]()
	if m.Has(0) {
		t.Fatal("an empty map has 0")
	}
	m.Set(0, 7)
	m.Set(1, 8)
	if v, ok := m.Get(0); !ok || v != 7 || m.Len() != 2 {
		t.Fatalf("Get(0) = %d, %v with Len %d; want 7, true, 2", v, ok, m.Len())
	}
	m.Set(0, 9)
	m.Delete(0)
	m.Delete(0)
	if m.Has(0) || m.Len() != 1 {
		t.Fatalf("after delete: Has(0) %v, Len %d", m.Has(0), m.Len())
	}
}

// A run of keys that share a home slot, deleted from its middle: the keys
// after the hole must still be found (backward-shift deletion).
func TestMapDeleteInRun(t *testing.T) {
	m := New[uint64]()
	// Keys of one segment and one home slot at the segment's first size.
	var run []uint64
	var seg uint64
	var at int
	for k := uint64(1); len(run) < 5; k++ {
		h := mix(m.seed, k)
		first := nextSize(int(h>>(64-segBits)), 0)
		if len(run) == 0 {
			seg, at = h>>(64-segBits), home(h, first)
		}
		if h>>(64-segBits) == seg && home(h, first) == at {
			run = append(run, k)
		}
	}
	for i, k := range run {
		m.Set(k, uint64(i))
	}
	m.Delete(run[1])
	for i, k := range run {
		v, ok := m.Get(k)
		if want := i != 1; ok != want || ok && v != uint64(i) {
			t.Errorf("key %d of the run: %d, %v", i, v, ok)
		}
	}
}

// FuzzMap runs a byte string as operations on a Map and a Go map.
func FuzzMap(f *testing.F) {
	f.Add([]byte{0, 1, 0, 0, 0, 0, 0, 0, 0, 1, 1, 0, 0, 0, 0, 0, 0, 0})
	f.Fuzz(func(t *testing.T, ops []byte) {
		m, want := New[uint64](), map[uint64]uint64{}
		for len(ops) >= 9 {
			op, k := ops[0], binary.LittleEndian.Uint64(ops[1:9])
			ops = ops[9:]
			k %= 4096 // keys that collide and recur
			if op%3 == 0 {
				m.Delete(k)
				delete(want, k)
			} else {
				m.Set(k, uint64(op))
				want[k] = uint64(op)
			}
		}
		check(t, m, want, []uint64{0, 1, 4095})
	})
}

const benchKeys = 4 << 20

func BenchmarkGetHit(b *testing.B) {
	r := rand.New(rand.NewPCG(3, 4))
	keys := make([]uint64, benchKeys)
	m := New[uint64]()
	for i := range keys {
		keys[i] = r.Uint64()
		m.Set(keys[i], uint64(i))
	}
	b.ResetTimer()
	for i := range b.N {
		m.Get(keys[i&(benchKeys-1)])
	}
}

func BenchmarkGoMapGetHit(b *testing.B) {
	r := rand.New(rand.NewPCG(3, 4))
	keys := make([]uint64, benchKeys)
	m := make(map[uint64]uint64)
	for i := range keys {
		keys[i] = r.Uint64()
		m[keys[i]] = uint64(i)
	}
	b.ResetTimer()
	for i := range b.N {
		_ = m[keys[i&(benchKeys-1)]]
	}
}

func BenchmarkGetMiss(b *testing.B) {
	r := rand.New(rand.NewPCG(3, 4))
	m := New[uint64]()
	for i := range benchKeys {
		m.Set(r.Uint64(), uint64(i))
	}
	b.ResetTimer()
	for i := range b.N {
		m.Get(mix(0, uint64(i)+1))
	}
}

func BenchmarkGoMapGetMiss(b *testing.B) {
	r := rand.New(rand.NewPCG(3, 4))
	m := make(map[uint64]uint64)
	for i := range benchKeys {
		m[r.Uint64()] = uint64(i)
	}
	b.ResetTimer()
	for i := range b.N {
		_ = m[mix(0, uint64(i)+1)]
	}
}

// MappedBytes counts the mappings a map holds, and they are given back
// once the map is unreachable.
func TestMappedBytesReleased(t *testing.T) {
	defer func(was int) { mapFrom = was }(mapFrom)
	mapFrom = 4 << 10
	m := New[uint64]()
	r := rand.New(rand.NewPCG(5, 6))
	for range 100_000 {
		m.Set(r.Uint64(), 1)
	}
	var held int64
	for i := range m.segs {
		held += int64(len(m.segs[i].mem))
	}
	if held == 0 {
		t.Skip("no segment mapped here (no mmap)")
	}
	with := MappedBytes()
	if with < held {
		t.Fatalf("MappedBytes %d, the segments of one map hold %d", with, held)
	}
	runtime.KeepAlive(m)
	m = nil
	// Cleanups run on a goroutine of their own after a collection; others
	// (maps of earlier tests) only lower the count further.
	for deadline := time.Now().Add(10 * time.Second); MappedBytes() > with-held; {
		if time.Now().After(deadline) {
			t.Fatalf("MappedBytes %d 10 s after the map became unreachable, want at most %d", MappedBytes(), with-held)
		}
		runtime.GC()
		time.Sleep(10 * time.Millisecond)
	}
}

// Keys that crowd into one slot of one map are spread in another: each map
// has its own seed, so a site cannot choose URLs that make long runs.
func TestMapSeeded(t *testing.T) {
	m, other := New[uint32](), New[uint32]()
	// where is a key's segment and the 8 bits below: about its home slot
	// in any segment of 256 slots or fewer.
	where := func(seed, k uint64) uint64 { return mix(seed, k) >> (64 - segBits - 8) }
	var run []uint64
	for k := uint64(1); len(run) < 4; k++ {
		if len(run) == 0 || where(m.seed, k) == where(m.seed, run[0]) {
			run = append(run, k)
		}
	}
	spread := map[uint64]bool{}
	for _, k := range run {
		spread[where(other.seed, k)] = true
	}
	if len(spread) == 1 {
		t.Errorf("4 keys of one segment and home in one map share them in another too (seeds %#x, %#x)", m.seed, other.seed)
	}
}

// A map's slots grow with its entries, not in steps: each segment grows by
// a quarter at points of its own, so its memory grows in proportion to its
// entries, give or take 3%, and an entry costs 18 to 22.5 bytes of 12-byte
// slots (53 to 67% full) wherever the count stops. Doubling every segment
// at one load, as the map did before, took twice the memory within a few
// thousand entries.
func TestMemoryGrowsWithEntries(t *testing.T) {
	m := New[uint32]()
	r := rand.New(rand.NewPCG(7, 8))
	const step, total = 20_000, 2_000_000
	last := m.Bytes()
	for n := step; n <= total; n += step {
		for range step {
			m.Set(r.Uint64()|1, 1)
		}
		b := m.Bytes()
		if per := float64(b) / float64(m.Len()); n >= 200_000 && (per < 18 || per > 22.6) {
			t.Errorf("%d entries: %.1f bytes an entry, want 18 to 22.6", m.Len(), per)
		}
		// Memory in proportion to the entries, give or take 3%.
		if grew, more := float64(b)/float64(last), float64(n)/float64(n-step); n >= 200_000 && grew > more+0.03 {
			t.Errorf("%d entries: slots %d bytes, %.1f%% more for %.1f%% more entries", m.Len(), b, 100*(grew-1), 100*(more-1))
		}
		last = b
	}
}

func BenchmarkSet(b *testing.B) {
	r := rand.New(rand.NewPCG(3, 4))
	keys := make([]uint64, benchKeys)
	for i := range keys {
		keys[i] = r.Uint64()
	}
	b.ResetTimer()
	for range b.N {
		m := New[uint32]()
		for _, k := range keys {
			m.Set(k, 1)
		}
		b.ReportMetric(float64(m.Bytes())/float64(m.Len()), "B/entry")
	}
}

// BenchmarkCycleMiss looks up absent keys in maps of 2.2 to 5.6 million
// entries: a map's load, and so a miss's run, depends on where its size
// falls in its growth, and a map that doubled was anywhere from 41 to 81%
// full.
func BenchmarkCycleMiss(b *testing.B) {
	for _, n := range []int{2_200_000, 2_700_000, 3_300_000, 3_900_000, 4_700_000, 5_600_000} {
		r := rand.New(rand.NewPCG(3, 4))
		m := New[uint32]()
		for i := range n {
			m.Set(r.Uint64(), uint32(i))
		}
		absent := make([]uint64, 1<<20)
		for i := range absent {
			absent[i] = r.Uint64()
		}
		b.Run(fmt.Sprint(n), func(b *testing.B) {
			for i := range b.N {
				m.Get(absent[i&(len(absent)-1)])
			}
		})
	}
}

// A map reserved for n keys takes n keys without growing a segment, and
// a reserve on a map that holds keys keeps them.
func TestReserve(t *testing.T) {
	defer func(was int) { mapFrom = was }(mapFrom)
	mapFrom = 4 << 10
	r := rand.New(rand.NewPCG(3, 4))
	m, want := New[uint64](), map[uint64]uint64{}
	for range 1000 {
		k, v := r.Uint64(), r.Uint64()
		m.Set(k, v)
		want[k] = v
	}
	const n = 200_000
	m.Reserve(n)
	var sizes [nSegs]int
	for i := range m.segs {
		sizes[i] = len(m.segs[i].slots)
	}
	check(t, m, want, nil)
	// Keys spread over the segments unevenly: a few per cent under the
	// reserve, none should grow.
	for len(want) < n*9/10 {
		k, v := r.Uint64(), r.Uint64()
		m.Set(k, v)
		want[k] = v
	}
	grown := 0
	for i := range m.segs {
		if len(m.segs[i].slots) != sizes[i] {
			grown++
		}
	}
	if grown > 0 {
		t.Errorf("%d of %d segments grew under their reserve", grown, nSegs)
	}
	check(t, m, want, []uint64{r.Uint64(), r.Uint64()})
	before := m.Bytes()
	m.Reserve(n / 2) // less than it holds: nothing to do
	m.Trim()         // about as full as it would have grown: nothing to do
	if m.Bytes() != before {
		t.Errorf("a smaller reserve and a trim changed the map's bytes: %d to %d", before, m.Bytes())
	}
}

// A map reserved for far more keys than came gives the room back when
// trimmed, and keeps its keys.
func TestTrim(t *testing.T) {
	defer func(was int) { mapFrom = was }(mapFrom)
	mapFrom = 4 << 10
	r := rand.New(rand.NewPCG(7, 8))
	grown, m, want := New[uint32](), New[uint32](), map[uint64]uint32{}
	m.Reserve(2_000_000)
	for range 20_000 {
		k, v := r.Uint64(), r.Uint32()
		m.Set(k, v)
		grown.Set(k, v)
		want[k] = v
	}
	reserved := m.Bytes()
	m.Trim()
	if m.Bytes() > 2*grown.Bytes() || m.Bytes() >= reserved/10 {
		t.Errorf("trimmed to %d bytes from %d; grown key by key, %d", m.Bytes(), reserved, grown.Bytes())
	}
	if m.Len() != len(want) {
		t.Fatalf("Len %d after a trim, want %d", m.Len(), len(want))
	}
	for k, v := range want {
		if got, ok := m.Get(k); !ok || got != v {
			t.Fatalf("Get(%#x) = %d, %v after a trim; want %d", k, got, ok, v)
		}
	}
	m.Set(r.Uint64(), 1) // and takes keys again
	if m.Len() != len(want)+1 {
		t.Errorf("Len %d after a set, want %d", m.Len(), len(want)+1)
	}
}

// BenchmarkFill fills a map with 4 million random keys, growing as it
// goes and reserved first (Reserve), as a restart loads its parked URLs.
func BenchmarkFill(b *testing.B) {
	const n = 4_000_000
	keys := make([]uint64, n)
	r := rand.New(rand.NewPCG(5, 6))
	for i := range keys {
		keys[i] = r.Uint64()
	}
	for _, reserve := range []bool{false, true} {
		name := "grown"
		if reserve {
			name = "reserved"
		}
		b.Run(name, func(b *testing.B) {
			for b.Loop() {
				m := New[uint64]()
				if reserve {
					m.Reserve(n)
				}
				for _, k := range keys {
					m.Set(k, k)
				}
			}
			b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N*n), "ns/key")
		})
	}
}
