package crawl

import "errors"

// A restart reads the keys of the parked revisits and of the backlog, a
// few million each at scale. Each key is read from Badger (its blocks
// decoded) and then counted into the frontier's maps under the crawler's
// lock; scanAhead does the reading on a goroutine of its own, so on two
// cores the two halves overlap rather than follow each other.

// keyRow is one key of such a scan: its host, its number (a parked URL's
// due time, a first visit's rank) and its URL's fingerprint.
type keyRow struct {
	host string
	n    uint32
	fp   uint64
}

// keyScan is a scan in key order: it calls emit with each key until emit
// fails.
type keyScan func(emit func(host string, n uint32, fp uint64) error) error

// scanBatch is how many keys the reader hands over at once, and
// scanBatches how many batches it reads ahead: 16 x 4096 keys of 32
// bytes, about 2 MB.
const (
	scanBatch   = 4096
	scanBatches = 16
)

var errScanStopped = errors.New("crawl: key scan stopped")

// keysAhead is a scan running ahead of its reader.
type keysAhead struct {
	batches chan []keyRow
	stop    chan struct{}
	err     error // the scan's, set before batches closes
}

// scanAhead starts scan on a goroutine of its own. The caller reads it
// with each, or ends it with close.
func scanAhead(scan keyScan) *keysAhead {
	k := &keysAhead{batches: make(chan []keyRow, scanBatches), stop: make(chan struct{})}
	go func() {
		defer close(k.batches)
		batch := make([]keyRow, 0, scanBatch)
		send := func() error {
			// Stopped already: not another batch. Without this, a send
			// while close drains the channel was as likely as the stop
			// (select picks at random among the ready cases), so a
			// stopped scan went on for a random number of batches.
			select {
			case <-k.stop:
				return errScanStopped
			default:
			}
			select {
			case k.batches <- batch:
				batch = make([]keyRow, 0, scanBatch)
				return nil
			case <-k.stop:
				return errScanStopped
			}
		}
		err := scan(func(host string, n uint32, fp uint64) error {
			batch = append(batch, keyRow{host, n, fp})
			if len(batch) < scanBatch {
				return nil
			}
			return send()
		})
		if !errors.Is(err, errScanStopped) && len(batch) > 0 {
			// the keys before a failure are read, as the scan gave them
			if serr := send(); serr != nil {
				err = serr
			}
		}
		if !errors.Is(err, errScanStopped) {
			k.err = err
		}
	}()
	return k
}

// each calls fn with every key of the scan, in its order, and returns the
// scan's error or fn's, which stops the scan.
func (k *keysAhead) each(fn func(host string, n uint32, fp uint64) error) error {
	for batch := range k.batches {
		for _, r := range batch {
			if err := fn(r.host, r.n, r.fp); err != nil {
				k.close()
				return err
			}
		}
	}
	return k.err
}

// close stops the scan and waits for its goroutine to end. A scan read
// to its end by each needs no close; a second close is harmless.
func (k *keysAhead) close() {
	select {
	case <-k.stop:
	default:
		close(k.stop)
	}
	for range k.batches {
	}
}
