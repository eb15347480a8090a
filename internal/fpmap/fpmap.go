package fpmap

import (
	"math"
	"math/bits"
	"math/rand/v2"
	"os"
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
	// minSlots is about a segment's first size (8 to 10 slots).
	minSlots = 8
	// A segment grows by a quarter (growth) when more than two thirds full
	// (loadNum/loadDen), so it is 53 to 67% full: 18 to 22.5 bytes an
	// entry with 12-byte slots, 24 to 30 with 16-byte ones, where doubling
	// at 13/16 full gave 20 to 39 for either. A miss walks its run to an
	// empty slot: at 3/4 full it cost 1.4x what it cost over a doubling
	// map's cycle, at 2/3 as much (BenchmarkCycleMiss).
	growth           = 1.25
	loadNum, loadDen = 2, 3
)

// mapFrom is the size in bytes from which a segment's slots are mapped
// from the operating system rather than allocated in the heap (a variable
// for tests).
var mapFrom = 64 << 10

// slot holds a key as two halves, so that a slot of a uint32 value is 12
// bytes and not 16 (a uint64 would align it to 8).
type slot[V Value] struct {
	key [2]uint32 // low and high halves; zero: empty (the key 0 itself is held apart, Map.zero)
	val V
}

func halves(k uint64) [2]uint32 { return [2]uint32{uint32(k), uint32(k >> 32)} }

func (s *slot[V]) k() uint64 { return uint64(s.key[1])<<32 | uint64(s.key[0]) }

// home is where a mixed key's run starts in n slots: the bits of h below
// its segment's, scaled to n (Lemire's multiply-shift, so n is any size).
func home(h uint64, n int) int {
	hi, _ := bits.Mul64(h<<segBits, uint64(n))
	return int(hi)
}

// nextSize is the size segment seg grows to from cur slots: the first of
// its sizes above cur. Segment seg's sizes are minSlots × growth^(k +
// seg/nSegs), k = 0, 1, ...: each segment grows by a quarter at its own
// points, spread evenly over a quarter's growth, so a map's memory grows
// with its entries and not in steps. (When every segment doubled at 13/16
// full, every segment of a map doubled within a few thousand entries of
// each other: a map passing 6.8 million entries took 2^23 more slots of
// 16 bytes, 134 MB, at once.)
func nextSize(seg, cur int) int {
	f := minSlots * math.Pow(growth, float64(seg)/nSegs)
	for int(math.Ceil(f)) <= cur {
		f *= growth
	}
	return int(math.Ceil(f))
}

type segment[V Value] struct {
	slots []slot[V] // any length (of its sizes, nextSize, or the page-rounded size mapped for one), or nil
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
	if n := len(s.slots); n > 0 {
		want := halves(k)
		for i := home(h, n); ; {
			if key := s.slots[i].key; key == want {
				v, found = s.slots[i].val, true
				break
			} else if key == ([2]uint32{}) {
				break
			}
			if i++; i == n {
				i = 0
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
	seg := h >> (64 - segBits)
	s := &m.segs[seg]
	if (s.n+1)*loadDen > len(s.slots)*loadNum {
		s.grow(int(seg))
	}
	if s.put(h, k, v) {
		s.n++
		m.n++
	}
	runtime.KeepAlive(m)
}

// put sets k's slot, and says whether k is new. There is room.
func (s *segment[V]) put(h, k uint64, v V) bool {
	want, n := halves(k), len(s.slots)
	for i := home(h, n); ; {
		switch s.slots[i].key {
		case want:
			s.slots[i].val = v
			return false
		case [2]uint32{}:
			s.slots[i] = slot[V]{key: want, val: v}
			return true
		}
		if i++; i == n {
			i = 0
		}
	}
}

// Reserve makes room for about n keys in all, spread over the segments as
// keys spread (evenly), so that loading that many grows no segment on the
// way: each growth rehashes the segment, and a restart that filled two
// maps with 21 million keys spent 15 of its 52 s of CPU growing them.
func (m *Map[V]) Reserve(n int) {
	per := n / nSegs
	for i := range m.segs {
		if s := &m.segs[i]; per*loadDen > len(s.slots)*loadNum {
			s.moveTo(i, len(s.slots), per)
		}
	}
	runtime.KeepAlive(m)
}

// Trim gives back what a Reserve took beyond the keys that came: a segment
// more than twice the size it would have grown to for its keys moves to
// that size. (A restart reserves from key counts that include deleted
// keys, which a store holds many of after a crawl took most of a table.)
func (m *Map[V]) Trim() {
	for i := range m.segs {
		s := &m.segs[i]
		if fit := sizeFor(i, s.n+1); len(s.slots) > 2*fit {
			s.moveTo(i, 0, s.n+1)
		}
	}
	runtime.KeepAlive(m)
}

// sizeFor is the first of segment seg's sizes that holds keys keys within
// the load.
func sizeFor(seg, keys int) int {
	n := nextSize(seg, 0)
	for keys*loadDen > n*loadNum {
		n = nextSize(seg, n)
	}
	return n
}

// grow moves segment seg's keys to its next size (nextSize) that holds one
// more key within the load.
func (s *segment[V]) grow(seg int) { s.moveTo(seg, len(s.slots), s.n+1) }

// moveTo moves segment seg's keys to the first of its sizes above from
// that holds keys keys within the load.
func (s *segment[V]) moveTo(seg, from, keys int) {
	old, oldMem := s.slots, s.mem
	n := nextSize(seg, from)
	for keys*loadDen > n*loadNum {
		n = nextSize(seg, n)
	}
	s.slots, s.mem = allocSlots[V](n)
	for i := range old {
		if old[i].key != ([2]uint32{}) {
			k := old[i].k()
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
	n := len(s.slots)
	if n == 0 {
		return
	}
	next := func(i int) int {
		if i++; i == n {
			return 0
		}
		return i
	}
	want := halves(k)
	i := home(h, n)
	for ; s.slots[i].key != want; i = next(i) {
		if s.slots[i].key == ([2]uint32{}) {
			return
		}
	}
	// Shift back each key after the hole that may fill it: one whose
	// home slot is not cyclically within (hole, its slot].
	for j := next(i); s.slots[j].key != ([2]uint32{}); j = next(j) {
		at := home(mix(s.seed, s.slots[j].k()), n)
		var within bool
		if i <= j {
			within = i < at && at <= j
		} else {
			within = i < at || at <= j
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

// allocSlots returns at least n empty slots: a Go slice when small, else
// mapped memory (and the mapping, to release), whose last page is filled
// with slots too.
func allocSlots[V Value](n int) ([]slot[V], []byte) {
	each := int(unsafe.Sizeof(slot[V]{}))
	size := n * each
	if size < mapFrom {
		return make([]slot[V], n), nil
	}
	page := os.Getpagesize()
	mem := mapAnon((size + page - 1) / page * page)
	if mem == nil {
		return make([]slot[V], n), nil
	}
	return unsafe.Slice((*slot[V])(unsafe.Pointer(unsafe.SliceData(mem))), len(mem)/each), mem
}

// Bytes is the memory the map's slots take, in the heap and mapped.
func (m *Map[V]) Bytes() int64 {
	var b int64
	for i := range m.segs {
		s := &m.segs[i]
		if s.mem != nil {
			b += int64(len(s.mem))
		} else {
			b += int64(len(s.slots)) * int64(unsafe.Sizeof(slot[V]{}))
		}
	}
	return b
}
