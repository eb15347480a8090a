package webevents

import (
	"fmt"
	"testing"
)

// BenchmarkTableScanTake takes the first few entries of one host's range
// from a table of many hosts whose values sit in the value log, as the
// crawler's backlog and parked revisits do for each host's head: with the
// values read as each entry is reached (Scan) against Badger's prefetch of
// the values of the next 64 entries on a goroutine each (how Scan read
// them before).
func BenchmarkTableScanTake(b *testing.B) {
	s, err := OpenBadger(b.TempDir(), BadgerOptions{})
	if err != nil {
		b.Fatal(err)
	}
	defer s.Close()
	t := s.Table(TableBacklog)
	const hosts, perHost = 200, 2000
	value := make([]byte, 120) // a spilled URL's value, above the 64-byte threshold
	for h := range hosts {
		var es []Entry
		for i := range perHost {
			es = append(es, Entry{Key: fmt.Sprintf("http://h%03d.example\x00%08d", h, i), Value: value})
		}
		if err := t.Put(es...); err != nil {
			b.Fatal(err)
		}
	}
	for _, take := range []int{1, 16, 256} {
		for _, prefetch := range []bool{false, true} {
			b.Run(fmt.Sprintf("take=%d/prefetch=%v", take, prefetch), func(b *testing.B) {
				h := 0
				for b.Loop() {
					n := 0
					err := t.scan(fmt.Sprintf("http://h%03d.example\x00", h%hosts), "", false, prefetch, nil, func(string, []byte) bool {
						n++
						return n < take
					})
					if err != nil || n != take {
						b.Fatal(n, err)
					}
					h++
				}
			})
		}
	}
}
