package crawl

import (
	"encoding/binary"
	"errors"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/cocrawl/cocrawl/webevents"
)

// BacklogTable is what StoredFrontier needs of the backlog's table: a
// *webevents.Table (TableBacklog), or a stand-in.
type BacklogTable interface {
	Scan(prefix string, keysOnly bool, fn func(key string, value []byte) bool) error
	ScanFrom(prefix, start string, want func(key []byte) bool, fn func(key string, value []byte) bool) error
	ScanKeys(prefix string, fn func(key []byte) bool) error
	ScanKeysFrom(prefix, start string, fn func(key []byte) bool) error
	Get(key string) ([]byte, bool, error)
	Batch(fn func(b *webevents.TableBatch) error) error
}

// backlogKey is host \x00 rank fp: a host's spilled URLs together, lowest
// rank first.
func backlogKey(host string, rank uint16, fp uint64) string {
	k := make([]byte, 0, len(host)+11)
	k = append(k, host...)
	k = append(k, 0)
	k = binary.BigEndian.AppendUint16(k, rank)
	return string(binary.BigEndian.AppendUint64(k, fp))
}

func parseBacklogKey(k string) (host string, rank uint16, fp uint64, err error) {
	host, rank, fp, ok := splitBacklogKey(k)
	if !ok {
		return "", 0, 0, fmt.Errorf("crawl: backlog key %q: malformed", k)
	}
	return host, rank, fp, nil
}

// splitBacklogKey reads a backlog key, as a string or as the bytes a scan
// of keys lends (not copied).
func splitBacklogKey[K string | []byte](k K) (host K, rank uint16, fp uint64, ok bool) {
	if len(k) < 11 || k[len(k)-11] != 0 {
		return host, 0, 0, false
	}
	b := []byte(k[len(k)-10:])
	return k[:len(k)-11], binary.BigEndian.Uint16(b), binary.BigEndian.Uint64(b[2:]), true
}

// encodeSpilled is the value of a spilled URL: depth, due (Unix ms) and
// interval (ms) as varints, then the URL. A URL that begins with its host
// (the key's scheme://host[:port], as every URL does that the frontier
// spills) is written as a zero byte and the rest: the backlog is most of
// what the store's compactions rewrite, and on the scale command's web
// the host was 22 of a value's 34 bytes (docs/performance.md, issue 30;
// longer paths make it a smaller share). Values written
// before hold the whole URL, which begins with its scheme's letter, never
// a zero byte.
func encodeSpilled(s SpilledURL) []byte {
	v := make([]byte, 0, len(s.URL)+16)
	v = binary.AppendUvarint(v, uint64(max(s.Depth, 0)))
	v = binary.AppendVarint(v, s.Due.UnixMilli())
	v = binary.AppendVarint(v, s.Interval.Milliseconds())
	if rest, ok := strings.CutPrefix(s.URL, s.Host); ok && s.Host != "" {
		v = append(v, 0)
		return append(v, rest...)
	}
	return append(v, s.URL...)
}

// maxSpilledInterval bounds a decoded interval, well inside a Duration.
const maxSpilledInterval = 100 * 365 * 24 * time.Hour

func decodeSpilled(key string, v []byte) (SpilledURL, error) {
	host, rank, fp, err := parseBacklogKey(key)
	if err != nil {
		return SpilledURL{}, err
	}
	s := SpilledURL{Host: host, Rank: rank, FP: fp}
	depth, n := binary.Uvarint(v)
	if n <= 0 || depth > 1<<16 {
		return s, fmt.Errorf("crawl: backlog entry %q: bad depth", key)
	}
	v = v[n:]
	due, n := binary.Varint(v)
	if n <= 0 {
		return s, fmt.Errorf("crawl: backlog entry %q: bad due time", key)
	}
	v = v[n:]
	iv, n := binary.Varint(v)
	if n <= 0 || iv < 0 || iv > maxSpilledInterval.Milliseconds() {
		return s, fmt.Errorf("crawl: backlog entry %q: bad interval", key)
	}
	s.Depth, s.Due, s.Interval = int(depth), time.UnixMilli(due), time.Duration(iv)*time.Millisecond
	if u := v[n:]; len(u) > 0 && u[0] == 0 {
		s.URL = host + string(u[1:])
	} else {
		s.URL = string(u)
	}
	if s.URL == "" {
		return s, fmt.Errorf("crawl: backlog entry %q: no URL", key)
	}
	return s, nil
}

func (f StoredFrontier) backlogStore() BacklogStore {
	if f.Backlog == nil {
		return nil
	}
	return f
}

func (f StoredFrontier) WriteBacklog(spilled []SpilledURL, moves []BacklogMove) error {
	return f.Backlog.Batch(func(b *webevents.TableBatch) error {
		for _, s := range spilled {
			if err := b.Set(backlogKey(s.Host, s.Rank, s.FP), encodeSpilled(s)); err != nil {
				return err
			}
		}
		for _, m := range moves {
			if err := b.Set(backlogKey(m.Host, m.To, m.FP), moveValue(m.From)); err != nil {
				return err
			}
		}
		return nil
	})
}

func (f StoredFrontier) ReadBacklog(host string, from BacklogFrom, n int, waiting func(rank uint16, fp uint64) bool) ([]SpilledURL, error) {
	var got []SpilledURL
	var bad []string
	type moved struct {
		key  string
		from uint16
	}
	var pointers []moved
	start := ""
	if from != (BacklogFrom{}) {
		start = backlogKey(host, from.Rank, from.FP)
	}
	want := func(key []byte) bool {
		_, rank, fp, ok := splitBacklogKey(key)
		return !ok || waiting(rank, fp) // a key that does not split is deleted below
	}
	err := f.Backlog.ScanFrom(host+"\x00", start, want, func(key string, v []byte) bool {
		if r, ok := movedFrom(v); ok {
			pointers = append(pointers, moved{key, r})
			got = append(got, SpilledURL{}) // its place in the order
			return len(got) < n
		}
		s, err := decodeSpilled(key, v)
		if err != nil {
			bad = append(bad, key)
		} else {
			got = append(got, s)
		}
		return len(got) < n
	})
	if err != nil {
		return nil, err
	}
	// The values of URLs that moved, read where their pointers lead.
	p := 0
	for i := range got {
		if got[i].URL != "" {
			continue
		}
		s, chain, err := f.followMoves(pointers[p].key, pointers[p].from)
		p++
		if err != nil {
			return nil, err
		}
		if s.URL == "" { // leads nowhere: a crash between a URL's deletions
			bad = append(bad, chain...)
		}
		got[i] = s
	}
	got = slices.DeleteFunc(got, func(s SpilledURL) bool { return s.URL == "" })
	if len(bad) > 0 {
		err = f.deleteKeys(f.Backlog, bad)
	}
	return got, err
}

// ReadMoved reads the values of moved URLs whose moves were not written
// (backlog.held): each where its From leads, the URL at rank To. A URL
// not found there is left out; the pointers a restart found that led to
// it are deleted, as ReadBacklog deletes those that lead nowhere.
func (f StoredFrontier) ReadMoved(host string, moves []BacklogMove) ([]SpilledURL, error) {
	got := make([]SpilledURL, 0, len(moves))
	var bad []string
	for _, m := range moves {
		s, chain, err := f.followMoves(backlogKey(host, m.To, m.FP), m.From)
		if err != nil {
			return nil, err
		}
		if s.URL == "" {
			// chain[0] is the rank moved to, never written.
			bad = append(bad, chain[1:]...)
			continue
		}
		s.Held, s.HeldFrom = true, m.From
		got = append(got, s)
	}
	var err error
	if len(bad) > 0 {
		err = f.deleteKeys(f.Backlog, bad)
	}
	return got, err
}

// moveValue is the value a move writes at a URL's new rank: a pointer to
// the rank its value is at (or, after a restart, the rank it was at, whose
// entry points on: BacklogMove). Three bytes, which no spilled URL's value is
// (decodeSpilled needs three varints and a URL).
func moveValue(from uint16) []byte { return []byte{'m', byte(from >> 8), byte(from)} }

// movedFrom reads a pointer moveValue wrote.
func movedFrom(v []byte) (uint16, bool) {
	if len(v) != 3 || v[0] != 'm' {
		return 0, false
	}
	return uint16(v[1])<<8 | uint16(v[2]), true
}

// maxMoves bounds the pointers a read follows: a rank class changes at
// most once a doubling of its backlinks, 32 times at most.
const maxMoves = 40

// followMoves reads the value a moved URL's pointer at key leads to, from
// the rank from: the URL with its rank at key and its value's rank, and
// the keys it went through. A URL not found (URL "") leads nowhere.
func (f StoredFrontier) followMoves(key string, from uint16) (SpilledURL, []string, error) {
	host, rank, fp, err := parseBacklogKey(key)
	if err != nil {
		return SpilledURL{}, []string{key}, nil
	}
	chain := []string{key}
	for range maxMoves {
		k := backlogKey(host, from, fp)
		v, found, err := f.Backlog.Get(k) // a point read: no iterator to build
		if err != nil {
			return SpilledURL{}, nil, err
		}
		if !found {
			return SpilledURL{}, chain, nil
		}
		chain = append(chain, k)
		if r, ok := movedFrom(v); ok {
			from = r
			continue
		}
		s, err := decodeSpilled(k, v)
		if err != nil {
			return SpilledURL{}, chain, nil
		}
		s.Rank, s.ValueRank = rank, from
		return s, chain, nil
	}
	return SpilledURL{}, chain, nil
}

// backlogEntryKeys are the keys of a URL's backlog entries: its ranks from
// lo to hi (backlogLeftAt), each the value or a pointer to the next.
func backlogEntryKeys(host string, lo, hi uint16, fp uint64) []string {
	if int(hi)-int(lo) > maxMoves {
		// Not a chain of moves (a class moves one rank at a time): a
		// damaged store's. Its two ends, not thousands of keys between.
		return []string{backlogKey(host, lo, fp), backlogKey(host, hi, fp)}
	}
	keys := make([]string, 0, int(hi)-int(lo)+1)
	for r := int(lo); r <= int(hi); r++ {
		keys = append(keys, backlogKey(host, uint16(r), fp))
	}
	return keys
}

// backlogLeftAt is URLState.leftAt of a URL read from the backlog: the
// range of ranks its entries are at.
func backlogLeftAt(s SpilledURL) uint32 {
	lo, hi := s.entryRanks()
	return uint32(hi)<<16 | uint32(lo)
}

// DropSpilled deletes the backlog entries of these URLs.
func (f StoredFrontier) DropSpilled(spilled []SpilledURL) error {
	keys := make([]string, len(spilled))
	for i, s := range spilled {
		keys[i] = backlogKey(s.Host, s.Rank, s.FP)
	}
	return f.deleteKeys(f.Backlog, keys)
}

// deleteLeftEntries deletes the backlog and parked entries a take left of
// written states (URLState.left): after their new place is written, so a
// crash between leaves a URL in both, never in neither.
func (f StoredFrontier) deleteLeftEntries(states func(yield func(*URLState) bool)) error {
	var backlog, parked []string
	for st := range states {
		switch in, host, at, fp := st.leftEntry(); in {
		case leftInBacklog:
			backlog = append(backlog, backlogEntryKeys(host, uint16(at), uint16(at>>16), fp)...)
		case leftParked:
			parked = append(parked, parkedKey(host, at, fp))
		}
	}
	var err error
	if f.Backlog != nil {
		err = f.deleteKeys(f.Backlog, backlog)
	}
	if f.Revisits != nil && err == nil {
		err = f.deleteKeys(f.Revisits, parked)
	}
	return err
}

func (f StoredFrontier) TakeSpilled(host string, rank uint16, fp uint64, state func(SpilledURL) URLState) (SpilledURL, bool, error) {
	key := backlogKey(host, rank, fp)
	var s SpilledURL
	var found bool
	var derr error
	var from uint16
	var moved bool
	err := f.Backlog.Scan(key, false, func(k string, v []byte) bool {
		found = k == key
		if found {
			if from, moved = movedFrom(v); !moved {
				s, derr = decodeSpilled(k, v)
			}
		}
		return false
	})
	if err != nil || !found {
		return s, false, err
	}
	if moved {
		var chain []string
		if s, chain, err = f.followMoves(key, from); err != nil {
			return s, false, err
		}
		if s.URL == "" {
			return s, false, errors.Join(fmt.Errorf("crawl: backlog entry %q: moved from rank %d, not found there", key, from), f.moveOut(nil, chain, state))
		}
	}
	if derr != nil {
		return s, false, errors.Join(derr, f.moveOut(nil, []string{key}, state))
	}
	return s, true, f.moveOut([]SpilledURL{s}, nil, state)
}

// moveOut stores taken URLs as frontier states, then deletes them (and
// entries that did not decode) from the backlog: a crash between the two
// leaves a URL in both, which the frontier takes once.
func (f StoredFrontier) moveOut(got []SpilledURL, bad []string, state func(SpilledURL) URLState) error {
	states := make([]URLState, len(got))
	for i, s := range got {
		states[i] = state(s)
		lo, hi := s.entryRanks()
		bad = append(bad, backlogEntryKeys(s.Host, lo, hi, s.FP)...)
	}
	return f.moveToFrontier(f.Backlog, states, bad)
}

// moveToFrontier saves states as frontier states, then deletes keys from
// table (the backlog's, or the parked revisits'): a crash between the two
// leaves a URL in both places, never in neither.
func (f StoredFrontier) moveToFrontier(table BacklogTable, states []URLState, keys []string) error {
	if len(states) > 0 {
		if err := f.SaveFrontier(states); err != nil {
			return err
		}
	}
	return f.deleteKeys(table, keys)
}

func (f StoredFrontier) deleteKeys(table BacklogTable, keys []string) error {
	if len(keys) == 0 {
		return nil
	}
	return table.Batch(func(b *webevents.TableBatch) error {
		for _, k := range keys {
			if err := b.Delete(k); err != nil {
				return err
			}
		}
		return nil
	})
}

func (f StoredFrontier) EachSpilled(fn func(host string, rank uint16, fp uint64) error) error {
	var ferr error
	var hosts sameHost
	err := f.Backlog.ScanKeys("", func(key []byte) bool {
		host, rank, fp, ok := splitBacklogKey(key)
		if !ok {
			return true // not ours to judge here: ReadBacklog drops it when it fails to decode
		}
		ferr = fn(hosts.of(host), rank, fp)
		return ferr == nil
	})
	return errors.Join(err, ferr)
}

// sameHost makes the host names of a scan in key order into strings,
// once a host: its keys come one after the other.
type sameHost struct{ last string }

func (s *sameHost) of(b []byte) string {
	if string(b) != s.last { // compared without a copy
		s.last = string(b)
	}
	return s.last
}
