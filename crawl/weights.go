package crawl

import "math/bits"

// hostWeights draws a host with a chance in proportion to its weight (the
// URLs it has parked) in O(log hosts), where a walk over every host cost
// the crawler's lock a host map's length per sampled poll: a Fenwick tree
// over the hosts in the order they were first weighed. Written by hand: a
// few lines, where no maintained Go module offers one.
type hostWeights struct {
	hosts []*host // by number - 1
	w     []int   // each host's weight, by number - 1
	tree  []int   // tree[i-1]: the weights of numbers (i - i&-i, i]
	total int
}

// set makes n the weight of h.
func (t *hostWeights) set(h *host, n int) {
	if h.weightNo == 0 {
		if n == 0 {
			return
		}
		t.hosts = append(t.hosts, h)
		t.w = append(t.w, 0)
		i := len(t.hosts)
		t.tree = append(t.tree, t.prefix(i-1)-t.prefix(i-i&-i))
		h.weightNo = i
	}
	d := n - t.w[h.weightNo-1]
	if d == 0 {
		return
	}
	t.w[h.weightNo-1] = n
	t.total += d
	for i := h.weightNo; i <= len(t.tree); i += i & -i {
		t.tree[i-1] += d
	}
}

// prefix is the weight of numbers 1 to i.
func (t *hostWeights) prefix(i int) int {
	s := 0
	for ; i > 0; i -= i & -i {
		s += t.tree[i-1]
	}
	return s
}

// find is the host that holds the rth unit of weight (0 <= r < total),
// and r's rank within it.
func (t *hostWeights) find(r int) (*host, int) {
	pos := 0 // the most numbers whose weights sum to r or less
	for step := 1 << bits.Len(uint(len(t.tree))); step > 0; step >>= 1 {
		if next := pos + step; next <= len(t.tree) && t.tree[next-1] <= r {
			pos = next
			r -= t.tree[next-1]
		}
	}
	return t.hosts[pos], r
}
