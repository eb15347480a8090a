package webevents

import (
	"encoding/binary"
	"encoding/json"
	"fmt"

	"github.com/dgraph-io/badger/v4"
)

// Expire drops the day logs before keepFrom, then the URLs deleted and
// the cursors of peers not heard from before it (Store.Expire).
func (s *BadgerStore) Expire(keepFrom int64) (Expired, error) {
	var x Expired
	var err error
	if x.Days, x.Records, err = s.expireDays(keepFrom); err != nil {
		return x, err
	}
	cut := DayStart(keepFrom)
	gone, err := s.goneURLs(cut)
	if err != nil {
		return x, fmt.Errorf("webevents: expire URLs: %w", err)
	}
	x.URLs = len(gone)
	cursors, err := s.goneCursors(cut)
	if err != nil {
		return x, fmt.Errorf("webevents: expire cursors: %w", err)
	}
	x.Cursors = len(cursors)
	wb := s.db.NewWriteBatch()
	defer wb.Cancel()
	for _, k := range append(gone, cursors...) {
		if err := wb.Delete(k); err != nil {
			return x, fmt.Errorf("webevents: expire URLs: %w", err)
		}
	}
	if err := wb.Flush(); err != nil {
		return x, fmt.Errorf("webevents: expire URLs: %w", err)
	}
	return x, nil
}

// expireDays drops the logs of the days before keepFrom, with their
// infos, and says how many days and records went.
func (s *BadgerStore) expireDays(keepFrom int64) (days int, records int64, err error) {
	var old []int64
	err = s.db.View(func(txn *badger.Txn) error {
		it := txn.NewIterator(badger.IteratorOptions{Prefix: prefixDay})
		defer it.Close()
		for it.Rewind(); it.Valid(); it.Next() { // the infos, in day order
			day := int64(binary.BigEndian.Uint32(it.Item().Key()[len(prefixDay):]))
			if day >= keepFrom {
				break
			}
			var d DayInfo
			if err := it.Item().Value(func(v []byte) error { return decodeDayInfo(v, &d) }); err != nil {
				return err
			}
			old = append(old, day)
			records += d.Records
		}
		return nil
	})
	if err != nil {
		return 0, 0, fmt.Errorf("webevents: expire: %w", err)
	}
	s.mu.Lock() // writers wait: a day's log and its info go together
	defer s.mu.Unlock()
	s.index.mu.Lock() // and the origin index's passes
	defer s.index.mu.Unlock()
	defer s.infos.clear() // the dropped days' infos go with them
	defer s.index.forget(old)
	var prefixes [][]byte
	for _, day := range old {
		prefixes = append(prefixes, logKey(day, 0)[:len(prefixLog)+4], dayKey(day), originLogPrefix(day, ""), originDayKey(day, ""))
	}
	if len(prefixes) > 0 {
		if err := s.db.DropPrefix(prefixes...); err != nil {
			return 0, 0, fmt.Errorf("webevents: expire days: %w", err)
		}
	}
	return len(old), records, nil
}

// goneURLs are the keys of the URLs whose current state is a deletion
// polled before cut (unix seconds).
func (s *BadgerStore) goneURLs(cut int64) ([][]byte, error) {
	var gone [][]byte
	err := s.db.View(func(txn *badger.Txn) error {
		it := txn.NewIterator(badger.IteratorOptions{Prefix: prefixURL, PrefetchValues: true, PrefetchSize: 256})
		defer it.Close()
		for it.Rewind(); it.Valid(); it.Next() {
			err := it.Item().Value(func(v []byte) error {
				e, err := decodeBinary(v)
				if err == nil && e.Stat == Delete && e.LPD < cut {
					gone = append(gone, it.Item().KeyCopy(nil))
				}
				return err
			})
			if err != nil {
				return err
			}
		}
		return nil
	})
	return gone, err
}

// goneCursors are the keys of the merge cursors last updated before cut.
func (s *BadgerStore) goneCursors(cut int64) ([][]byte, error) {
	var gone [][]byte
	err := s.db.View(func(txn *badger.Txn) error {
		it := txn.NewIterator(badger.IteratorOptions{Prefix: prefixCursor, PrefetchValues: true})
		defer it.Close()
		for it.Rewind(); it.Valid(); it.Next() {
			var c Cursor
			if err := it.Item().Value(func(v []byte) error { return json.Unmarshal(v, &c) }); err != nil {
				return err
			}
			if c.Updated.Unix() < cut {
				gone = append(gone, it.Item().KeyCopy(nil))
			}
		}
		return nil
	})
	return gone, err
}
