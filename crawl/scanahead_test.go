package crawl

import (
	"errors"
	"fmt"
	"testing"
)

// rowsScan emits n keys of hosts in turn, then fails with err.
func rowsScan(n int, err error, emitted *int) keyScan {
	return func(emit func(string, uint32, uint64) error) error {
		for i := range n {
			if e := emit(fmt.Sprintf("h%d", i/1000), uint32(i), uint64(i)*7); e != nil {
				return e
			}
			if emitted != nil {
				*emitted = i + 1
			}
		}
		return err
	}
}

// A scan read ahead gives every key in its order, across batches, and
// its own error at the end.
func TestScanAheadKeepsOrderAndError(t *testing.T) {
	broken := errors.New("a broken table")
	for _, n := range []int{0, 1, scanBatch, 3*scanBatch + 17} {
		for _, want := range []error{nil, broken} {
			got := 0
			err := scanAhead(rowsScan(n, want, nil)).each(func(host string, i uint32, fp uint64) error {
				if int(i) != got || host != fmt.Sprintf("h%d", got/1000) || fp != uint64(got)*7 {
					return fmt.Errorf("key %d: got %s %d %d", got, host, i, fp)
				}
				got++
				return nil
			})
			if !errors.Is(err, want) || (want == nil && err != nil) {
				t.Errorf("%d keys: error %v, want %v", n, err, want)
			}
			if got != n {
				t.Errorf("%d keys: %d read", n, got)
			}
		}
	}
}

// A reader's error stops the scan before its end, and close stops one
// not read at all: neither leaves the reading goroutine behind, and
// neither reads the whole table.
func TestScanAheadStops(t *testing.T) {
	const n = 100 * scanBatch
	stop := errors.New("enough")
	emitted := 0
	seen := 0
	err := scanAhead(rowsScan(n, nil, &emitted)).each(func(string, uint32, uint64) error {
		if seen++; seen == 10 {
			return stop
		}
		return nil
	})
	if !errors.Is(err, stop) {
		t.Fatalf("the reader's error: %v", err)
	}
	// each returned after the goroutine ended (close drains it). At most:
	// the reader's batch, the channel's, the one being sent when the stop
	// came (which the drain may take), and the one being filled then.
	if emitted >= n || emitted > (scanBatches+3)*scanBatch {
		t.Errorf("the scan emitted %d of %d keys after the reader stopped at 10", emitted, n)
	}
	emitted = 0
	k := scanAhead(rowsScan(n, nil, &emitted))
	k.close()
	k.close()
	if emitted >= n || emitted > (scanBatches+3)*scanBatch {
		t.Errorf("a closed scan emitted %d of %d keys", emitted, n)
	}
}
