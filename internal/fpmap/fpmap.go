package fpmap

import (
	"math/rand/v2"
	"runtime"
	"sync/atomic"
	"unsafe"
)

// mapped is the bytes all maps of the process hold outside the heap.
var mapped atomic.Int64

// MappedBytes is how many bytes the maps of this process hold outside Go's
// heap: resident memory that no heap figure counts.
func MappedBytes() int64 { return mapped.Load() }

// Value is what a Map holds per key.
type Value interface{ ~uint32 | ~uint64 }

const (
	segBits = 8
	nSegs   = 1 << segBits
	// minSlots is a segment's first size; it doubles from there.
	minSlots = 8
)

// mapFrom is the size in bytes from which a segment's slots are mapped
// from the operating system rather than allocated in the heap (a variable
// for tests).
var mapFrom = 64 << 10

type slot[V Value] struct {
	key uint64 // 0: empty; the key 0 itself is held apart (Map.zero)
	val V
}

type segment[V Value] struct {
	slots []slot[V] // a power of two long, or nil
	n     int
	seed  uint64 // the map's (Map.seed), for grow
	// mem is the mapping slots lie in, nil when they are a Go slice.
	mem []byte
}

// Map maps uint64 keys to values. The zero Map is not ready: use New.
type Map[V Value] struct {
	segs *[nSegs]segment[V]
	// seed is mixed into every key: the keys are fingerprints of URLs
	// that sites choose, and a site that knew where they land could make
	// long runs that every lookup walks (as Go seeds its maps).
	seed    uint64
	n       int
	hasZero bool
	zero    V
}

// New returns an empty map. Its mappings are released when it becomes
// unreachable.
func New[V Value]() *Map[V] {
	m := &Map[V]{segs: new([nSegs]segment[V]), seed: rand.Uint64()}
	for i := range m.segs {
		m.segs[i].seed = m.seed
	}
	// The cleanup holds the segments, not the map, so that the map can
	// become unreachable.
	runtime.AddCleanup(m, func(segs *[nSegs]segment[V]) {
		for i := range segs {
			release(segs[i].mem)
			segs[i] = segment[V]{}
		}
	}, m.segs)
	return m
}

// mix spreads a key's bits with the map's seed (the finaliser of
// splitmix64): fingerprints are already hashes, but keys from elsewhere
// (tests, counters) need not be, and a seed unknown to a site keeps it
// from choosing where its URLs land.
func mix(seed, k uint64) uint64 {
	k ^= seed
	k ^= k >> 30
	k *= 0xbf58476d1ce4e5b9
	k ^= k >> 27
	k *= 0x94d049bb133111eb
	k ^= k >> 31
	return k
}

// Len is the number of keys held.
func (m *Map[V]) Len() int { return m.n }

// Get returns the value of key k and whether it is held.
func (m *Map[V]) Get(k uint64) (V, bool) {
	if k == 0 {
		return m.zero, m.hasZero
	}
	h := mix(m.seed, k)
	s := &m.segs[h>>(64-segBits)]
	var v V
	found := false
	if s.slots != nil {
		mask := uint64(len(s.slots) - 1)
		for i := h & mask; ; i = (i + 1) & mask {
			if key := s.slots[i].key; key == k {
				v, found = s.slots[i].val, true
				break
			} else if key == 0 {
				break
			}
		}
	}
	// The slots are unmapped when m is collected: not before this read.
	runtime.KeepAlive(m)
	return v, found
}

// Has says whether key k is held.
func (m *Map[V]) Has(k uint64) bool {
	_, ok := m.Get(k)
	return ok
}

// Set holds v for key k.
func (m *Map[V]) Set(k uint64, v V) {
	if k == 0 {
		if !m.hasZero {
			m.n++
		}
		m.hasZero, m.zero = true, v
		return
	}
	h := mix(m.seed, k)
	s := &m.segs[h>>(64-segBits)]
	if (s.n+1)*16 > len(s.slots)*13 {
		s.grow()
	}
	if s.put(h, k, v) {
		s.n++
		m.n++
	}
	runtime.KeepAlive(m)
}

// put sets k's slot, and says whether k is new. There is room.
func (s *segment[V]) put(h, k uint64, v V) bool {
	mask := uint64(len(s.slots) - 1)
	for i := h & mask; ; i = (i + 1) & mask {
		switch s.slots[i].key {
		case k:
			s.slots[i].val = v
			return false
		case 0:
			s.slots[i] = slot[V]{key: k, val: v}
			return true
		}
	}
}

// grow doubles the segment's slots and puts its keys again.
func (s *segment[V]) grow() {
	old, oldMem := s.slots, s.mem
	n := max(2*len(old), minSlots)
	s.slots, s.mem = allocSlots[V](n)
	for i := range old {
		if k := old[i].key; k != 0 {
			s.put(mix(s.seed, k), k, old[i].val)
		}
	}
	release(oldMem)
}

// Delete removes key k, if held.
func (m *Map[V]) Delete(k uint64) {
	if k == 0 {
		if m.hasZero {
			m.n--
		}
		var zero V
		m.hasZero, m.zero = false, zero
		return
	}
	// The slots are unmapped when m is collected: not before this returns.
	defer runtime.KeepAlive(m)
	h := mix(m.seed, k)
	s := &m.segs[h>>(64-segBits)]
	if s.slots == nil {
		return
	}
	mask := uint64(len(s.slots) - 1)
	i := h & mask
	for ; s.slots[i].key != k; i = (i + 1) & mask {
		if s.slots[i].key == 0 {
			return
		}
	}
	// Shift back each key after the hole that may fill it: one whose
	// home slot is not cyclically within (hole, its slot].
	for j := (i + 1) & mask; s.slots[j].key != 0; j = (j + 1) & mask {
		home := mix(s.seed, s.slots[j].key) & mask
		var within bool
		if i <= j {
			within = i < home && home <= j
		} else {
			within = i < home || home <= j
		}
		if !within {
			s.slots[i] = s.slots[j]
			i = j
		}
	}
	s.slots[i] = slot[V]{}
	s.n--
	m.n--
}

// allocSlots returns n empty slots: a Go slice when small, else mapped
// memory (and the mapping, to release).
func allocSlots[V Value](n int) ([]slot[V], []byte) {
	size := n * int(unsafe.Sizeof(slot[V]{}))
	if size < mapFrom {
		return make([]slot[V], n), nil
	}
	mem := mapAnon(size)
	if mem == nil {
		return make([]slot[V], n), nil
	}
	return unsafe.Slice((*slot[V])(unsafe.Pointer(unsafe.SliceData(mem))), n), mem
}
