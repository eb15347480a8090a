package webevents

import (
	"cmp"
	"encoding/binary"
	"encoding/json"
	"errors"
	"fmt"

	"github.com/dgraph-io/badger/v4"
)

func (s *BadgerStore) Get(url string) (Event, bool, error) {
	if !s.mayHold(url) {
		// Never held: a crawler's first visit of a URL no peer gave,
		// which at ten million URLs is a read through every level.
		return Event{}, false, nil
	}
	var e Event
	var ok bool
	err := s.db.View(func(txn *badger.Txn) error {
		var err error
		e, ok, err = getEvent(txn, url)
		return err
	})
	return e, ok, err
}

func getEvent(txn *badger.Txn, url string) (Event, bool, error) {
	it, err := txn.Get(urlKey(url))
	if errors.Is(err, badger.ErrKeyNotFound) {
		return Event{}, false, nil
	}
	if err != nil {
		return Event{}, false, err
	}
	var e Event
	err = it.Value(func(v []byte) error {
		var err error
		e, err = decodeBinary(v)
		return err
	})
	return e, err == nil, err
}

func (s *BadgerStore) Cursor(peer string) (Cursor, bool, error) {
	var c Cursor
	var ok bool
	err := s.db.View(func(txn *badger.Txn) error {
		it, err := txn.Get(cursorKey(peer))
		if errors.Is(err, badger.ErrKeyNotFound) {
			return nil
		}
		if err != nil {
			return err
		}
		ok = true
		return it.Value(func(v []byte) error { return json.Unmarshal(v, &c) })
	})
	return c, ok, err
}

func (s *BadgerStore) Current(fn func(Event) error) error {
	return s.db.View(func(txn *badger.Txn) error {
		it := txn.NewIterator(badger.IteratorOptions{Prefix: prefixURL, PrefetchValues: true, PrefetchSize: 100})
		defer it.Close()
		for it.Rewind(); it.Valid(); it.Next() {
			var e Event
			err := it.Item().Value(func(v []byte) error {
				var err error
				e, err = decodeBinary(v)
				return err
			})
			if err != nil {
				return err
			}
			if err := fn(e); err != nil {
				return err
			}
		}
		return nil
	})
}

func (s *BadgerStore) DayInfo(day int64) (DayInfo, bool, error) {
	d := DayInfo{Day: day}
	var ok bool
	err := s.db.View(func(txn *badger.Txn) error {
		it, err := txn.Get(dayKey(day))
		if errors.Is(err, badger.ErrKeyNotFound) {
			return nil
		}
		if err != nil {
			return err
		}
		ok = true
		return it.Value(func(v []byte) error { return decodeDayInfo(v, &d) })
	})
	return d, ok, err
}

func (s *BadgerStore) ReadDay(day, from int64, fn func(int64, Event) error) error {
	return s.db.View(func(txn *badger.Txn) error {
		return readLog(txn, logKey(day, 0)[:len(prefixLog)+4], from, fn)
	})
}

// OriginDayInfo describes the records of day whose URLs have origin
// (Origin): the day file filtered to one site. ok is false when the day
// has none; the error is ErrDayNotIndexed when an older build began the
// day, or when the day's index, written behind its log, is behind and
// cannot catch up (a full disk), so that only a read of the whole day
// finds them.
func (s *BadgerStore) OriginDayInfo(day int64, origin string) (DayInfo, bool, error) {
	i := originInfo{DayInfo: DayInfo{Day: day}}
	if err := s.catchUp(day); err != nil {
		// The day's index is behind its log and cannot catch up (a
		// full disk): a reader filters the whole day instead.
		return i.DayInfo, false, fmt.Errorf("%w: its index is behind its log: %w", ErrDayNotIndexed, err)
	}
	var ok bool
	err := s.db.View(func(txn *badger.Txn) error {
		it, err := txn.Get(originDayKey(day, origin))
		if err == nil {
			ok = true
			return it.Value(func(v []byte) error { return decodeOriginInfo(v, &i) })
		}
		if !errors.Is(err, badger.ErrKeyNotFound) {
			return err
		}
		return dayIndexed(txn, day)
	})
	if err != nil && !errors.Is(err, ErrDayNotIndexed) {
		err = fmt.Errorf("webevents: origin day info: %w", err)
	}
	return i.DayInfo, ok, err
}

// dayIndexed is nil for a day indexed by origin, ErrDayNotIndexed for one
// that is not (begun by an older build, or by a store that writes no
// index), and nil for a day that does not exist.
func dayIndexed(txn *badger.Txn, day int64) error {
	for _, k := range [][]byte{indexMarkKey(day), originDayKey(day, "")} {
		if _, err := txn.Get(k); !errors.Is(err, badger.ErrKeyNotFound) {
			return err // nil: indexed, and none of origin
		}
	}
	if _, err := txn.Get(dayKey(day)); !errors.Is(err, badger.ErrKeyNotFound) {
		return cmp.Or(err, ErrDayNotIndexed)
	}
	return nil
}

// ReadOriginDay is ReadDay for the records of day whose URLs have origin,
// with offsets in the filtered day file they make (OriginDayInfo). On a day
// not indexed it reads nothing.
func (s *BadgerStore) ReadOriginDay(day int64, origin string, from int64, fn func(int64, Event) error) error {
	if origin == "" {
		return nil
	}
	if err := s.catchUp(day); err != nil {
		return fmt.Errorf("webevents: read origin day: %w", err)
	}
	return s.db.View(func(txn *badger.Txn) error {
		return readLog(txn, originLogPrefix(day, origin), from, fn)
	})
}

// ReadOriginDayIndexed is ReadOriginDay for what day's origin index holds
// now, without bringing it up to the day log first: fn gets the origin's
// indexed records from the one holding byte from on; info describes the
// part of the filtered day file they make (its size, records and last
// update), and through is the offset in the day log below which every
// record of origin is among them. A reader that comes often (a live
// stream's passes, a tenth of a second apart; the requests of many
// subscribers) reads the rest from the log, from through on: were each
// read to catch the index up, the index would write a block for each
// origin's record or two again, which is what writing it behind the log
// saves. The filtered file is the same either way. fn's own error comes
// back as it is. ErrDayNotIndexed for a day not indexed by origin; a day
// that does not exist is empty.
func (s *BadgerStore) ReadOriginDayIndexed(day int64, origin string, from int64, fn func(int64, Event) error) (info DayInfo, through int64, err error) {
	var size int64
	var fnErr error
	err = s.db.View(func(txn *badger.Txn) error {
		mark, ok, err := getIndexMark(txn, day)
		if err != nil {
			return err
		}
		if !ok {
			// No mark: a day an older build indexed with each commit, so
			// all of it, or a day not indexed (dayIndexed says which).
			if err := dayIndexed(txn, day); err != nil {
				return err
			}
			var d DayInfo
			if _, err := getDayInfo(txn, day, &d); err != nil {
				return err
			}
			mark = d.Size
		}
		i := originInfo{DayInfo: DayInfo{Day: day}}
		if origin != "" {
			it, err := txn.Get(originDayKey(day, origin))
			switch {
			case err == nil:
				err = it.Value(func(v []byte) error { return decodeOriginInfo(v, &i) })
			case errors.Is(err, badger.ErrKeyNotFound):
				err = nil
			}
			if err != nil {
				return err
			}
		}
		// A pass writes an origin's blocks, then its info, then the day's
		// mark, in as many transactions as it takes: an info may run past
		// the mark, and blocks past their info.
		info, size, through = i.DayInfo, i.Size, max(mark, i.through)
		if from >= size {
			return nil
		}
		err = readLog(txn, originLogPrefix(day, origin), from, func(off int64, e Event) error {
			if off >= size {
				return errIndexedEnd
			}
			fnErr = fn(off, e)
			return fnErr
		})
		if errors.Is(err, errIndexedEnd) {
			return nil
		}
		return err
	})
	switch {
	case fnErr != nil && errors.Is(err, fnErr):
		err = fnErr // fn's own, as ReadDay gives it back
	case err != nil && !errors.Is(err, ErrDayNotIndexed):
		err = fmt.Errorf("webevents: read origin day as indexed: %w", err)
	}
	return info, through, err
}

// errIndexedEnd stops a read of an origin's log where its info ends.
var errIndexedEnd = errors.New("end of the indexed records")

// readLog calls fn with the entries of the log whose blocks are keyed by
// prefix and a big-endian offset, from the one holding byte from on.
func readLog(txn *badger.Txn, prefix []byte, from int64, fn func(int64, Event) error) error {
	return readLogRecords(txn, prefix, from, func(off int64, _ []byte, e Event) error { return fn(off, e) })
}

// readLogRecords is readLog that also gives each entry's encoded bytes.
func readLogRecords(txn *badger.Txn, prefix []byte, from int64, fn func(int64, []byte, Event) error) error {
	key := func(off int64) []byte { return binary.BigEndian.AppendUint64(append([]byte{}, prefix...), uint64(off)) }
	start := key(0)
	if from > 0 {
		// The entry holding byte from is the last one keyed at or before it.
		rev := txn.NewIterator(badger.IteratorOptions{Prefix: prefix, Reverse: true})
		rev.Seek(key(from))
		if rev.Valid() {
			start = rev.Item().KeyCopy(nil)
		}
		rev.Close()
	}
	it := txn.NewIterator(badger.IteratorOptions{Prefix: prefix, PrefetchValues: true, PrefetchSize: 100})
	defer it.Close()
	for it.Seek(start); it.Valid(); it.Next() {
		item := it.Item()
		off := int64(binary.BigEndian.Uint64(item.Key()[len(prefix):]))
		err := item.Value(func(v []byte) error {
			return decodeLogRecords(v, func(rec []byte, e Event) error {
				at := off
				off += int64(RecordLen(&e))
				if off <= from {
					return nil
				}
				return fn(at, rec, e)
			})
		})
		if err != nil {
			return err
		}
	}
	return nil
}
