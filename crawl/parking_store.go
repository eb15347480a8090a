package crawl

import (
	"encoding/binary"
	"errors"
	"fmt"
	"math"

	"github.com/cocrawl/cocrawl/webevents"
)

// parkedKey is host \x00 due fp: a host's parked URLs together, earliest
// due first.
func parkedKey(host string, due uint32, fp uint64) string {
	k := make([]byte, 0, len(host)+13)
	k = append(k, host...)
	k = append(k, 0)
	k = binary.BigEndian.AppendUint32(k, due)
	return string(binary.BigEndian.AppendUint64(k, fp))
}

func parseParkedKey(k string) (host string, due uint32, fp uint64, err error) {
	host, due, fp, ok := splitParkedKey(k)
	if !ok {
		return "", 0, 0, fmt.Errorf("crawl: parked key %q: malformed", k)
	}
	return host, due, fp, nil
}

// splitParkedKey reads a parked key, as a string or as the bytes a scan of
// keys lends (not copied).
func splitParkedKey[K string | []byte](k K) (host K, due uint32, fp uint64, ok bool) {
	if len(k) < 13 || k[len(k)-13] != 0 {
		return host, 0, 0, false
	}
	b := []byte(k[len(k)-12:])
	return k[:len(k)-13], binary.BigEndian.Uint32(b), binary.BigEndian.Uint64(b[4:]), true
}

// Flags of a parked value.
const (
	parkedHasLambda = 1 << iota
	parkedHasOwn
)

// encodeParked is the value of a parked URL: flags, the rate its host's
// fit took (float64), what its own last look found (the fingerprint, when
// and under which noise mask), then the URL and its state (statecodec.go).
func encodeParked(s *ParkedURL) []byte {
	st := &s.State
	v := make([]byte, 0, len(st.URL)+len(st.ETag)+len(st.LastMod)+96)
	var flags byte
	if s.Lambda >= 0 {
		flags |= parkedHasLambda
	}
	if st.hasOwnFP {
		flags |= parkedHasOwn
	}
	v = append(v, flags)
	if s.Lambda >= 0 {
		v = binary.LittleEndian.AppendUint64(v, math.Float64bits(s.Lambda))
	}
	if st.hasOwnFP {
		v = binary.LittleEndian.AppendUint64(v, st.ownFP)
		v = binary.AppendVarint(v, st.ownAt)
		v = binary.AppendUvarint(v, uint64(st.ownMaskVer))
	}
	v = binary.AppendUvarint(v, uint64(len(st.URL)))
	v = append(v, st.URL...)
	return appendState(v, st)
}

// maxParkedURL bounds a decoded URL.
const maxParkedURL = 64 << 10

func decodeParked(key string, v []byte) (ParkedURL, error) {
	host, due, fp, err := parseParkedKey(key)
	if err != nil {
		return ParkedURL{}, err
	}
	s := ParkedURL{Host: host, Due: due, FP: fp, Lambda: -1}
	if len(v) == 0 {
		return s, fmt.Errorf("crawl: parked entry %q: empty", key)
	}
	flags := v[0]
	r := &stateReader{b: v[1:]}
	if flags&^(parkedHasLambda|parkedHasOwn) != 0 {
		return s, fmt.Errorf("crawl: parked entry %q: unknown flags %#x", key, flags)
	}
	if flags&parkedHasLambda != 0 {
		if len(r.b) < 8 {
			return s, fmt.Errorf("crawl: parked entry %q: short rate", key)
		}
		s.Lambda = math.Float64frombits(binary.LittleEndian.Uint64(r.b))
		r.b = r.b[8:]
		if math.IsNaN(s.Lambda) || math.IsInf(s.Lambda, 0) || s.Lambda < 0 {
			return s, fmt.Errorf("crawl: parked entry %q: bad rate", key)
		}
	}
	var own struct {
		fp      uint64
		at      int64
		maskVer uint16
	}
	if flags&parkedHasOwn != 0 {
		if len(r.b) < 8 {
			return s, fmt.Errorf("crawl: parked entry %q: short fingerprint", key)
		}
		own.fp = binary.LittleEndian.Uint64(r.b)
		r.b = r.b[8:]
		own.at = r.varint()
		own.maskVer = uint16(r.uvarint(math.MaxUint16))
	}
	n := r.uvarint(maxParkedURL)
	if r.err != nil || uint64(len(r.b)) < n || n == 0 {
		return s, fmt.Errorf("crawl: parked entry %q: bad URL", key)
	}
	url := string(r.b[:n])
	if urlFingerprint(url) != fp || hostKey(url) != host {
		return s, fmt.Errorf("crawl: parked entry %q: URL %q is not the key's", key, url)
	}
	st, err := decodeState(url, r.b[n:])
	if err != nil {
		return s, fmt.Errorf("crawl: parked entry %q: %w", key, err)
	}
	st.hasOwnFP, st.ownFP, st.ownAt, st.ownMaskVer = flags&parkedHasOwn != 0, own.fp, own.at, own.maskVer
	s.State = st
	return s, nil
}

// ParkTable is what StoredFrontier needs of the parked revisits' table: a
// *webevents.Table (TableRevisits), or a stand-in; the backlog's needs
// are the same.
type ParkTable = BacklogTable

// parkStorer is a FrontierStore that can park revisits: StoredFrontier
// with its Revisits table set.
type parkStorer interface{ parkStore() ParkStore }

func (f StoredFrontier) parkStore() ParkStore {
	if f.Revisits == nil {
		return nil
	}
	return f
}

func (f StoredFrontier) WriteParked(parked []ParkedURL) error {
	var backlog []string
	err := f.Revisits.Batch(func(b *webevents.TableBatch) error {
		backlog = backlog[:0]
		for i := range parked {
			s := &parked[i]
			if err := b.Set(parkedKey(s.Host, s.Due, s.FP), encodeParked(s)); err != nil {
				return err
			}
		}
		// The parked entries takes left go after, in the same batch: one
		// transaction unless the batch is large (TableBatch).
		for i := range parked {
			s := &parked[i]
			switch in, host, at, fp := s.State.leftEntry(); in {
			case leftParked:
				if old := parkedKey(host, at, fp); old != parkedKey(s.Host, s.Due, s.FP) {
					if err := b.Delete(old); err != nil {
						return err
					}
				}
			case leftInBacklog:
				backlog = append(backlog, backlogEntryKeys(host, uint16(at), uint16(at>>16), fp)...)
			}
		}
		return nil
	})
	if err != nil {
		return err
	}
	urls := make([]string, 0, len(parked))
	for i := range parked {
		if !parked[i].State.noTable {
			urls = append(urls, parked[i].State.URL)
		}
	}
	if len(urls) > 0 {
		if err := f.DeleteFrontier(urls); err != nil {
			return err
		}
	}
	if f.Backlog == nil {
		return nil
	}
	return f.deleteKeys(f.Backlog, backlog)
}

func (f StoredFrontier) ReadParked(host string, from ParkedFrom, n int, due uint32, waiting func(due uint32, fp uint64) bool) ([]ParkedURL, uint32, error) {
	var got []ParkedURL
	var bad []string
	var next uint32
	want := func(key []byte) bool {
		_, due, fp, ok := splitParkedKey(key)
		return !ok || waiting(due, fp) // a key that does not split is deleted below
	}
	start := ""
	if from != (ParkedFrom{}) {
		start = parkedKey(host, from.Due, from.FP)
	}
	err := f.Revisits.ScanFrom(host+"\x00", start, want, func(key string, v []byte) bool {
		s, err := decodeParked(key, v)
		switch {
		case err != nil:
			bad = append(bad, key)
		case len(got) < n && s.Due <= due:
			got = append(got, s)
		default:
			next = s.Due
			return false
		}
		return true
	})
	if err != nil {
		return nil, 0, err
	}
	if len(bad) > 0 {
		err = f.deleteKeys(f.Revisits, bad)
	}
	return got, next, err
}

// DropParked deletes the parked entries of these URLs (those a restart
// found twice).
func (f StoredFrontier) DropParked(parked []ParkedURL) error {
	keys := make([]string, len(parked))
	for i, s := range parked {
		keys[i] = parkedKey(s.Host, s.Due, s.FP)
	}
	return f.deleteKeys(f.Revisits, keys)
}

// readParked reads the parked entry of key: whether it is there, and
// its decoding's error apart from the store's.
func (f StoredFrontier) readParked(key string) (s ParkedURL, found bool, derr, err error) {
	err = f.Revisits.Scan(key, false, func(k string, v []byte) bool {
		found = k == key
		if found {
			s, derr = decodeParked(k, v)
		}
		return false
	})
	return s, found, derr, err
}

func (f StoredFrontier) ParkedOne(host string, due uint32, fp uint64) (ParkedURL, bool, error) {
	key := parkedKey(host, due, fp)
	s, found, derr, err := f.readParked(key)
	if err == nil && derr != nil {
		// As ReadParked: an entry that does not decode goes.
		err = errors.Join(fmt.Errorf("%w: %w", errParkedDropped, derr), f.deleteKeys(f.Revisits, []string{key}))
	}
	return s, found && err == nil, err
}

// errParkedDropped says a parked entry did not decode and was deleted.
var errParkedDropped = errors.New("crawl: a parked entry that does not decode was deleted")

func (f StoredFrontier) NthParked(host string, from uint32, n int, waiting func(due uint32, fp uint64) bool) (uint32, uint64, bool, error) {
	var due uint32
	var fp uint64
	var ok bool
	err := f.Revisits.ScanKeysFrom(host+"\x00", parkedKey(host, from, 0), func(key []byte) bool { // keys read in place: a host holds thousands
		_, kd, kfp, split := splitParkedKey(key)
		if !split || !waiting(kd, kfp) {
			return true
		}
		if n > 0 {
			n--
			return true
		}
		due, fp, ok = kd, kfp, true
		return false
	})
	return due, fp, ok, err
}

func (f StoredFrontier) EachParkedKey(fn func(host string, due uint32, fp uint64) error) error {
	var ferr error
	var hosts sameHost
	err := f.Revisits.ScanKeys("", func(key []byte) bool {
		host, due, fp, ok := splitParkedKey(key)
		if !ok {
			return true // not loaded; a take of its host drops it
		}
		ferr = fn(hosts.of(host), due, fp)
		return ferr == nil
	})
	return errors.Join(err, ferr)
}

func (f StoredFrontier) EachParkedOf(host string, fn func(ParkedURL) error) error {
	var ferr error
	err := f.Revisits.Scan(host+"\x00", false, func(key string, v []byte) bool {
		s, err := decodeParked(key, v)
		if err != nil {
			return true // not loaded; a take of its host drops it
		}
		ferr = fn(s)
		return ferr == nil
	})
	return errors.Join(err, ferr)
}
