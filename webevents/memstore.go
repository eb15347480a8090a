package webevents

import (
	"crypto/rand"
	"encoding/hex"
	"slices"
	"sort"
	"sync"
	"time"
)

// MemStore is the in-memory Store, for tests and the simulator. It holds
// copies, never pointers to caller data.
type MemStore struct {
	mu      sync.RWMutex
	id      string
	current map[string]Event
	days    map[int64]*memDay
	cursors map[string]Cursor
	closed  bool
	now     func() time.Time
	// appended wakes live readers after each write (notify.go)
	appended appendSignal
}

type memDay struct {
	offsets []int64
	events  []Event
	info    DayInfo
	origins map[string]*memDay // the day's records of each origin, offsets their own
}

// NewMemStore returns an empty in-memory store.
func NewMemStore() *MemStore {
	return &MemStore{
		id:      newStoreID(),
		current: make(map[string]Event),
		days:    make(map[int64]*memDay),
		cursors: make(map[string]Cursor),
		now:     time.Now,
	}
}

func newStoreID() string {
	var b [8]byte
	_, _ = rand.Read(b[:])
	return hex.EncodeToString(b[:])
}

func (s *MemStore) ID() string { return s.id }

func (s *MemStore) Get(url string) (Event, bool, error) {
	s.mu.RLock()
	defer s.mu.RUnlock()
	if s.closed {
		return Event{}, false, ErrClosed
	}
	e, ok := s.current[url]
	return e, ok, nil
}

func (s *MemStore) Record(events []Event) error {
	if err := validate(events); err != nil {
		return err
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.closed {
		return ErrClosed
	}
	for _, e := range events {
		e.From = ""
		s.appendLocked(e)
	}
	s.appended.signal()
	return nil
}

func (s *MemStore) appendLocked(e Event) {
	s.current[e.URL] = e
	day := e.Day()
	d := s.days[day]
	if d == nil {
		d = &memDay{info: DayInfo{Day: day}}
		s.days[day] = d
	}
	d.add(e, s.now())
	if o := Origin(e.URL); o != "" {
		if d.origins == nil {
			d.origins = make(map[string]*memDay)
		}
		od := d.origins[o]
		if od == nil {
			od = &memDay{info: DayInfo{Day: day}}
			d.origins[o] = od
		}
		od.add(e, d.info.Updated)
	}
}

func (d *memDay) add(e Event, at time.Time) {
	d.offsets = append(d.offsets, d.info.Size)
	d.events = append(d.events, e)
	d.info.Size += int64(RecordLen(&e))
	d.info.Records++
	d.info.Updated = at
}

func (s *MemStore) Merge(events []Event, c *Cursor) (MergeResult, error) {
	if err := validate(events); err != nil {
		return MergeResult{}, err
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.closed {
		return MergeResult{}, ErrClosed
	}
	r := newResolver(func(u string) (Event, bool, error) {
		e, ok := s.current[u]
		return e, ok, nil
	}, c)
	for _, in := range events {
		d, _ := r.resolve(in)
		switch d.Action {
		case Accept:
			s.appendLocked(d.Result)
		case Restate:
			s.current[in.URL] = d.Result
		}
	}
	if c != nil {
		cc := *c
		cc.Marks = slices.Clone(c.Marks)
		s.cursors[c.Peer] = cc
	}
	if r.result.Accepted > 0 {
		s.appended.signal()
	}
	return r.result, nil
}

func (s *MemStore) Cursor(peer string) (Cursor, bool, error) {
	s.mu.RLock()
	defer s.mu.RUnlock()
	if s.closed {
		return Cursor{}, false, ErrClosed
	}
	c, ok := s.cursors[peer]
	c.Marks = slices.Clone(c.Marks)
	return c, ok, nil
}

func (s *MemStore) Current(fn func(Event) error) error {
	s.mu.RLock()
	if s.closed {
		s.mu.RUnlock()
		return ErrClosed
	}
	all := make([]Event, 0, len(s.current))
	for _, e := range s.current {
		all = append(all, e)
	}
	s.mu.RUnlock()
	sort.Slice(all, func(i, j int) bool { return all[i].URL < all[j].URL })
	for _, e := range all {
		if err := fn(e); err != nil {
			return err
		}
	}
	return nil
}

func (s *MemStore) DayInfo(day int64) (DayInfo, bool, error) {
	s.mu.RLock()
	defer s.mu.RUnlock()
	if s.closed {
		return DayInfo{}, false, ErrClosed
	}
	d := s.days[day]
	if d == nil {
		return DayInfo{}, false, nil
	}
	return d.info, true, nil
}

func (s *MemStore) OriginDayInfo(day int64, origin string) (DayInfo, bool, error) {
	s.mu.RLock()
	defer s.mu.RUnlock()
	if s.closed {
		return DayInfo{}, false, ErrClosed
	}
	if d := s.days[day]; d != nil && d.origins[origin] != nil {
		return d.origins[origin].info, true, nil
	}
	return DayInfo{Day: day}, false, nil
}

func (s *MemStore) ReadDay(day, from int64, fn func(int64, Event) error) error {
	return s.readDay(day, "", from, fn)
}

func (s *MemStore) ReadOriginDay(day int64, origin string, from int64, fn func(int64, Event) error) error {
	if origin == "" {
		return nil
	}
	return s.readDay(day, origin, from, fn)
}

func (s *MemStore) readDay(day int64, origin string, from int64, fn func(int64, Event) error) error {
	s.mu.RLock()
	if s.closed {
		s.mu.RUnlock()
		return ErrClosed
	}
	var offs []int64
	var evs []Event
	d := s.days[day]
	if d != nil && origin != "" {
		d = d.origins[origin]
	}
	if d != nil {
		// The log is append-only: a prefix copy of the slices is a snapshot.
		offs, evs = d.offsets[:len(d.offsets):len(d.offsets)], d.events[:len(d.events):len(d.events)]
	}
	s.mu.RUnlock()
	// The first entry to send is the last one starting at or before from.
	i := sort.Search(len(offs), func(i int) bool { return offs[i] > from })
	if i > 0 {
		i--
	}
	for ; i < len(offs); i++ {
		if offs[i]+int64(RecordLen(&evs[i])) <= from {
			continue
		}
		if err := fn(offs[i], evs[i]); err != nil {
			return err
		}
	}
	return nil
}

func (s *MemStore) Expire(keepFrom int64) (Expired, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.closed {
		return Expired{}, ErrClosed
	}
	var x Expired
	for day, d := range s.days {
		if day < keepFrom {
			x.Days++
			x.Records += int64(len(d.events))
			delete(s.days, day)
		}
	}
	cut := DayStart(keepFrom)
	for u, e := range s.current {
		if e.Stat == Delete && e.LPD < cut {
			delete(s.current, u)
			x.URLs++
		}
	}
	for p, c := range s.cursors {
		if c.Updated.Unix() < cut {
			delete(s.cursors, p)
			x.Cursors++
		}
	}
	return x, nil
}

func (s *MemStore) Close() error {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.closed = true
	return nil
}
