package crawl

import (
	"slices"
	"sync"
)

// pendingWrites is what a frontier has handed to the store and the
// persister has not written yet (the backlog's spilled URLs, the parked
// revisits): in order, findable by fingerprint, counted by host. It has a
// lock of its own, so the persister drains it without the crawler's lock.
type pendingWrites[T any] struct {
	key func(*T) (host string, fp uint64)

	mu     sync.Mutex
	items  []T
	at     map[uint64]int // fingerprint -> index in items
	ofHost map[string]int // host -> its items
	// spare is the array of a drain written since, emptied, for the next
	// pushes: a queue refilled from nil grew by doubling at every flush,
	// some 5 GB of a 10-minute scale crawl's allocation.
	spare []T
}

func newPendingWrites[T any](key func(*T) (string, uint64)) *pendingWrites[T] {
	return &pendingWrites[T]{key: key, at: map[uint64]int{}, ofHost: map[string]int{}}
}

// push queues t last.
func (q *pendingWrites[T]) push(t T) {
	q.mu.Lock()
	defer q.mu.Unlock()
	q.pushLocked(t)
}

func (q *pendingWrites[T]) pushLocked(t T) {
	host, fp := q.key(&t)
	q.at[fp] = len(q.items)
	q.ofHost[host]++
	if q.items == nil && q.spare != nil {
		q.items, q.spare = q.spare, nil
	}
	q.items = append(q.items, t)
}

// update calls fn with the queued item of fingerprint fp, and says whether
// there was one.
func (q *pendingWrites[T]) update(fp uint64, fn func(*T)) bool {
	q.mu.Lock()
	defer q.mu.Unlock()
	i, ok := q.at[fp]
	if ok {
		fn(&q.items[i])
	}
	return ok
}

// drain takes everything queued, for a write.
func (q *pendingWrites[T]) drain() []T {
	q.mu.Lock()
	defer q.mu.Unlock()
	items := q.items
	q.items = nil
	clear(q.at)
	clear(q.ofHost)
	return items
}

// written hands back the items of a drain once written, so that their
// array is used again; they must not be read after.
func (q *pendingWrites[T]) written(items []T) {
	clear(items) // drops what the items point to
	q.mu.Lock()
	defer q.mu.Unlock()
	if cap(items) > cap(q.spare) {
		q.spare = items[:0]
	}
}

// putBack queues the items of a failed write again, before what came
// since.
func (q *pendingWrites[T]) putBack(items []T) {
	if len(items) == 0 {
		return
	}
	q.mu.Lock()
	defer q.mu.Unlock()
	q.items = append(items, q.items...)
	q.reindex()
}

// pending is how many of the host's items are queued.
func (q *pendingWrites[T]) pending(host string) int {
	q.mu.Lock()
	defer q.mu.Unlock()
	return q.ofHost[host]
}

// ofHostInOrder is a copy of the host's queued items, in order.
func (q *pendingWrites[T]) ofHostInOrder(host string) []T {
	q.mu.Lock()
	defer q.mu.Unlock()
	if q.ofHost[host] == 0 {
		return nil
	}
	out := make([]T, 0, q.ofHost[host])
	for i := range q.items {
		if h, _ := q.key(&q.items[i]); h == host {
			out = append(out, q.items[i])
		}
	}
	return out
}

// eachOf calls fn with each of the host's queued items, in order.
func (q *pendingWrites[T]) eachOf(host string, fn func(*T)) {
	q.mu.Lock()
	defer q.mu.Unlock()
	if q.ofHost[host] == 0 {
		return
	}
	for i := range q.items {
		if h, _ := q.key(&q.items[i]); h == host {
			fn(&q.items[i])
		}
	}
}

// remove takes the queued items of these fingerprints out.
func (q *pendingWrites[T]) remove(fps map[uint64]bool) {
	if len(fps) == 0 {
		return
	}
	q.mu.Lock()
	defer q.mu.Unlock()
	q.items = slices.DeleteFunc(q.items, func(t T) bool {
		_, fp := q.key(&t)
		return fps[fp]
	})
	q.reindex()
}

// takeOne takes the queued item of fingerprint fp out.
func (q *pendingWrites[T]) takeOne(fp uint64) (T, bool) {
	q.mu.Lock()
	defer q.mu.Unlock()
	i, ok := q.at[fp]
	if !ok {
		var zero T
		return zero, false
	}
	t := q.items[i]
	q.items = slices.Delete(q.items, i, i+1)
	q.reindex()
	return t, true
}

// reindex rebuilds at and ofHost from items. q.mu held.
func (q *pendingWrites[T]) reindex() {
	clear(q.at)
	clear(q.ofHost)
	for i := range q.items {
		host, fp := q.key(&q.items[i])
		q.at[fp] = i
		q.ofHost[host]++
	}
}

// len is how many items are queued.
func (q *pendingWrites[T]) len() int {
	q.mu.Lock()
	defer q.mu.Unlock()
	return len(q.items)
}
