package fpmap

import (
	"encoding/binary"
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
	var seg, home uint64
	for k := uint64(1); len(run) < 5; k++ {
		h := mix(m.seed, k)
		if len(run) == 0 {
			seg, home = h>>(64-segBits), h&(minSlots-1)
		}
		if h>>(64-segBits) == seg && h&(minSlots-1) == home {
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
	// where is a key's segment and its low 8 bits: its home slot in any
	// segment of 256 slots or fewer.
	where := func(seed, k uint64) uint64 { h := mix(seed, k); return h>>(64-segBits)<<8 | h&0xff }
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
