package webevents

import (
	"encoding/binary"
	"encoding/json"
	"fmt"

	"github.com/dgraph-io/badger/v4"
)

func (s *BadgerStore) Expire(keepFrom int64) (Expired, error) {
	var x Expired
	// Which days have logs: their infos, in day order.
	var days []int64
	var records int64
	err := s.db.View(func(txn *badger.Txn) error {
		it := txn.NewIterator(badger.IteratorOptions{Prefix: prefixDay})
		defer it.Close()
		for it.Rewind(); it.Valid(); it.Next() {
			day := int64(binary.BigEndian.Uint32(it.Item().Key()[len(prefixDay):]))
			if day >= keepFrom {
				break
			}
			var d DayInfo
			if err := it.Item().Value(func(v []byte) error { return decodeDayInfo(v, &d) }); err != nil {
				return err
			}
			days = append(days, day)
			records += d.Records
		}
		return nil
	})
	if err != nil {
		return x, fmt.Errorf("webevents: expire: %w", err)
	}
	s.mu.Lock() // writers wait: a day's log and its info go together
	defer s.mu.Unlock()
	var prefixes [][]byte
	for _, day := range days {
		prefixes = append(prefixes, logKey(day, 0)[:len(prefixLog)+4], dayKey(day))
	}
	if len(prefixes) > 0 {
		if err := s.db.DropPrefix(prefixes...); err != nil {
			return x, fmt.Errorf("webevents: expire days: %w", err)
		}
	}
	x.Days, x.Records = len(days), records
	// Long-deleted URLs and cursors of peers long gone: scans.
	cut := DayStart(keepFrom)
	var gone [][]byte
	err = s.db.View(func(txn *badger.Txn) error {
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
	if err != nil {
		return x, fmt.Errorf("webevents: expire URLs: %w", err)
	}
	x.URLs = len(gone)
	err = s.db.View(func(txn *badger.Txn) error {
		it := txn.NewIterator(badger.IteratorOptions{Prefix: prefixCursor, PrefetchValues: true})
		defer it.Close()
		for it.Rewind(); it.Valid(); it.Next() {
			var c Cursor
			if err := it.Item().Value(func(v []byte) error { return json.Unmarshal(v, &c) }); err != nil {
				return err
			}
			if c.Updated.Unix() < cut {
				gone = append(gone, it.Item().KeyCopy(nil))
				x.Cursors++
			}
		}
		return nil
	})
	if err != nil {
		return x, fmt.Errorf("webevents: expire cursors: %w", err)
	}
	wb := s.db.NewWriteBatch()
	defer wb.Cancel()
	for _, k := range gone {
		if err := wb.Delete(k); err != nil {
			return x, fmt.Errorf("webevents: expire URLs: %w", err)
		}
	}
	if err := wb.Flush(); err != nil {
		return x, fmt.Errorf("webevents: expire URLs: %w", err)
	}
	return x, nil
}
