package crawl

import (
	"slices"
	"testing"
)

func TestPendingWritesKeepOrderAcrossAFailedWrite(t *testing.T) {
	type item struct {
		host string
		fp   uint64
		v    int
	}
	q := newPendingWrites(func(i *item) (string, uint64) { return i.host, i.fp })
	q.push(item{"a", 1, 0})
	q.push(item{"b", 2, 0})
	q.push(item{"a", 3, 0})
	if !q.update(3, func(i *item) { i.v = 7 }) || q.update(9, func(*item) {}) {
		t.Fatal("update found the wrong items")
	}
	failed := q.drain()
	if q.len() != 0 || q.pending("a") != 0 {
		t.Fatal("drain left items")
	}
	q.push(item{"a", 4, 0})
	q.putBack(failed)
	fps := func(items []item) (out []uint64) {
		for _, i := range items {
			out = append(out, i.fp)
		}
		return out
	}
	if got := fps(q.ofHostInOrder("a")); !slices.Equal(got, []uint64{1, 3, 4}) {
		t.Fatalf("host a after a put-back: %v, want 1 3 4", got)
	}
	if i, ok := q.takeOne(3); !ok || i.v != 7 {
		t.Fatalf("takeOne(3) = %+v %v", i, ok)
	}
	q.remove(map[uint64]bool{1: true})
	if got := fps(q.drain()); !slices.Equal(got, []uint64{2, 4}) {
		t.Fatalf("left %v, want 2 4", got)
	}
}

// TestPendingWritesUseAWrittenArrayAgain checks that the pushes after a
// write fill the array the write handed back, from empty.
func TestPendingWritesUseAWrittenArrayAgain(t *testing.T) {
	type item struct {
		host string
		fp   uint64
	}
	q := newPendingWrites(func(i *item) (string, uint64) { return i.host, i.fp })
	for fp := range uint64(100) {
		q.push(item{"a", fp})
	}
	done := q.drain()
	first := &done[0]
	q.written(done)
	if done[5].host != "" {
		t.Fatal("a written item still points to its host")
	}
	q.push(item{"b", 1000})
	q.push(item{"b", 1001})
	got := q.drain()
	if len(got) != 2 || got[0].fp != 1000 || got[1].fp != 1001 || q.pending("a") != 0 {
		t.Fatalf("after a write the queue holds %+v", got)
	}
	if &got[0] != first {
		t.Fatal("the pushes after a write did not use its array")
	}
}
