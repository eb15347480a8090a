package sim

// jobHeap orders crawlers by the time their current transfer phase ends.
// Every crawler is always in it (a crawler is never idle), so it is indexed
// by crawler and Fix is the only update. Written by hand rather than with
// container/heap to avoid an interface call per comparison on the hottest
// path of the simulator; ties break by crawler index, for determinism.
type jobHeap struct {
	items []int32   // crawler indices
	pos   []int32   // position of each crawler in items
	key   []float64 // finish time of each crawler
}

func newJobHeap(n int) *jobHeap {
	h := &jobHeap{items: make([]int32, n), pos: make([]int32, n), key: make([]float64, n)}
	for i := range n {
		h.items[i] = int32(i)
		h.pos[i] = int32(i)
	}
	return h
}

func (h *jobHeap) less(i, j int) bool {
	a, b := h.items[i], h.items[j]
	ka, kb := h.key[a], h.key[b]
	return ka < kb || (ka == kb && a < b)
}

func (h *jobHeap) swap(i, j int) {
	h.items[i], h.items[j] = h.items[j], h.items[i]
	h.pos[h.items[i]] = int32(i)
	h.pos[h.items[j]] = int32(j)
}

// init orders the heap after keys were set directly.
func (h *jobHeap) init() {
	for i := len(h.items)/2 - 1; i >= 0; i-- {
		h.down(i)
	}
}

// top is the crawler whose phase ends first.
func (h *jobHeap) top() int { return int(h.items[0]) }

// set changes crawler c's finish time.
func (h *jobHeap) set(c int, t float64) {
	h.key[c] = t
	i := int(h.pos[c])
	if !h.down(i) {
		h.up(i)
	}
}

func (h *jobHeap) up(i int) {
	for i > 0 {
		p := (i - 1) / 2
		if !h.less(i, p) {
			return
		}
		h.swap(i, p)
		i = p
	}
}

func (h *jobHeap) down(i0 int) bool {
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
