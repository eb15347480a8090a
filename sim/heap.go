package sim

// jobHeap orders crawlers by the time their current transfer phase ends.
// Every crawler is always in it (a crawler is never idle), so set is the
// only update. An indexHeap is also a crawler's schedule of objects by due
// time (schedule.go), where objects come and go (push, pop, remove).
// Written by hand rather than with container/heap to avoid an interface
// call per comparison on the hottest path of the simulator; ties break by
// index, for determinism.
type jobHeap = indexHeap

type indexHeap struct {
	items []int32   // indices (crawlers, objects)
	pos   []int32   // position of each index in items; -1 when not in it
	key   []float64 // key of each index
}

// newIndexHeap returns an empty heap for indices below n.
func newIndexHeap(n int) *indexHeap {
	h := &indexHeap{pos: make([]int32, n), key: make([]float64, n)}
	for i := range h.pos {
		h.pos[i] = -1
	}
	return h
}

func newJobHeap(n int) *jobHeap {
	h := &jobHeap{items: make([]int32, n), pos: make([]int32, n), key: make([]float64, n)}
	for i := range n {
		h.items[i] = int32(i)
		h.pos[i] = int32(i)
	}
	return h
}

func (h *indexHeap) less(i, j int) bool {
	a, b := h.items[i], h.items[j]
	ka, kb := h.key[a], h.key[b]
	return ka < kb || (ka == kb && a < b)
}

func (h *indexHeap) swap(i, j int) {
	h.items[i], h.items[j] = h.items[j], h.items[i]
	h.pos[h.items[i]] = int32(i)
	h.pos[h.items[j]] = int32(j)
}

// init orders the heap after keys were set directly.
func (h *indexHeap) init() {
	for i := len(h.items)/2 - 1; i >= 0; i-- {
		h.down(i)
	}
}

// top is the crawler whose phase ends first.
func (h *indexHeap) top() int { return int(h.items[0]) }

// set changes crawler c's finish time.
func (h *indexHeap) set(c int, t float64) {
	h.key[c] = t
	i := int(h.pos[c])
	if !h.down(i) {
		h.up(i)
	}
}

func (h *indexHeap) up(i int) {
	for i > 0 {
		p := (i - 1) / 2
		if !h.less(i, p) {
			return
		}
		h.swap(i, p)
		i = p
	}
}

func (h *indexHeap) down(i0 int) bool {
	i, n := i0, len(h.items)
	for {
		l := 2*i + 1
		if l >= n {
			break
		}
		j := l
		if r := l + 1; r < n && h.less(r, l) {
			j = r
		}
		if !h.less(j, i) {
			break
		}
		h.swap(i, j)
		i = j
	}
	return i > i0
}

// push adds index i with key k.
func (h *indexHeap) push(i int, k float64) {
	h.key[i] = k
	h.pos[i] = int32(len(h.items))
	h.items = append(h.items, int32(i))
	h.up(len(h.items) - 1)
}

// pop takes the index of the smallest key; ok is false when empty.
func (h *indexHeap) pop() (int, bool) {
	if len(h.items) == 0 {
		return 0, false
	}
	i := h.top()
	h.remove(i)
	return i, true
}

// remove takes index i out, if it is in.
func (h *indexHeap) remove(i int) {
	p := int(h.pos[i])
	if p < 0 {
		return
	}
	last := len(h.items) - 1
	h.swap(p, last)
	h.items = h.items[:last]
	h.pos[i] = -1
	if p < last && !h.down(p) {
		h.up(p)
	}
}
