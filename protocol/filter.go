package protocol

import (
	"errors"
	"fmt"
	"hash/fnv"
	"math"
	"net/http"
	"net/url"
	"strings"

	"github.com/cocrawl/cocrawl/webevents"
)

// FilterHeader names the filter a server applied to a day file or change
// list (spec section 7.7). A response without it is the whole file: the
// server did not know the query, and the client filters the records
// itself.
const FilterHeader = "Share-Filter"

// maxPrefix bounds a filter's prefix, as a record's URL is bounded.
const maxPrefix = 8192

// DayFilter is the query of a filtered day file: the records whose URL
// starts with an absolute http or https URL prefix. Its scheme and host
// compare without case, as the store indexes them (webevents.Origin); the
// rest byte for byte.
type DayFilter struct {
	Prefix string
	origin string // webevents.Origin(Prefix)
	rest   string // Prefix after its origin: "" is the whole origin
}

// ParseDayFilter reads the prefix query parameter; ok is false when there
// is none, and the error says why a prefix is refused.
func ParseDayFilter(q url.Values) (f DayFilter, ok bool, err error) {
	vs, ok := q["prefix"]
	if !ok {
		return DayFilter{}, false, nil
	}
	if len(vs) != 1 {
		return DayFilter{}, true, errors.New("one prefix only")
	}
	f, err = NewDayFilter(vs[0])
	return f, true, err
}

// NewDayFilter makes the filter of prefix, which must hold at least a
// scheme and a host.
func NewDayFilter(prefix string) (DayFilter, error) {
	if len(prefix) > maxPrefix {
		return DayFilter{}, fmt.Errorf("prefix longer than %d bytes", maxPrefix)
	}
	o := webevents.Origin(prefix)
	if o == "" || strings.ContainsAny(prefix, "\x00\r\n ") {
		return DayFilter{}, fmt.Errorf("prefix %q is not an absolute http or https URL prefix with a host", prefix)
	}
	rest := prefix[len(o):]
	if rest == "/" {
		rest = "" // every URL of an origin has a path
	}
	return DayFilter{Prefix: prefix, origin: o, rest: rest}, nil
}

// Match says whether a record's URL passes the filter.
func (f DayFilter) Match(u string) bool {
	o := webevents.Origin(u)
	return o == f.origin && strings.HasPrefix(u[len(o):], f.rest)
}

// Query is the filter as a query string, without the "?".
func (f DayFilter) Query() string { return "prefix=" + url.QueryEscape(f.Prefix) }

// tag tells the entity tags of filtered files apart.
func (f DayFilter) tag() string {
	h := fnv.New64a()
	h.Write([]byte(f.Prefix))
	return fmt.Sprintf("f%016x", h.Sum64())
}

// OriginStore is what a share server needs of a store to serve filtered
// day files from its origin index; a store without it is filtered by a
// read of the whole day.
type OriginStore interface {
	OriginDayInfo(day int64, origin string) (webevents.DayInfo, bool, error)
	ReadOriginDay(day int64, origin string, from int64, fn func(offset int64, e webevents.Event) error) error
}

// logReader reads a log from the record that holds byte from, as
// webevents.Store.ReadDay does.
type logReader func(from int64, fn func(offset int64, e webevents.Event) error) error

// dayView is a day file as one request serves it: the whole day or its
// records that pass a filter, with offsets of its own.
type dayView struct {
	info webevents.DayInfo
	read logReader
}

// openDay returns the view of day under f (nil: the whole day); ok is
// false when the day has no file. A filtered day that exists but has no
// record passing f is an empty file: a subscriber polls it as any other.
func (s *Server) openDay(day int64, f *DayFilter) (dayView, bool, error) {
	info, ok, err := s.store.DayInfo(day)
	if err != nil || !ok {
		return dayView{}, ok, err
	}
	whole := func(from int64, fn func(int64, webevents.Event) error) error { return s.store.ReadDay(day, from, fn) }
	if f == nil {
		return dayView{info: info, read: whole}, true, nil
	}
	under, fullScan := logReader(whole), true
	if of, ok := s.store.(originFollower); ok {
		v, ok, err := s.openFollowedDay(of, day, f, info, whole)
		if err == nil && ok && f.rest == "" {
			s.metrics.filter("origin")
			return v, true, nil
		}
		switch {
		case errors.Is(err, webevents.ErrDayNotIndexed): // the whole day is filtered below
		case err != nil:
			return dayView{}, false, err
		case !ok:
			return dayView{info: webevents.DayInfo{Day: day, Updated: info.Updated}, read: func(int64, func(int64, webevents.Event) error) error { return nil }}, true, nil
		default:
			under, fullScan = v.read, false
			info.Updated = v.info.Updated
		}
	} else if os, ok := s.store.(OriginStore); ok {
		oi, found, err := os.OriginDayInfo(day, f.origin)
		switch {
		case errors.Is(err, webevents.ErrDayNotIndexed):
		case err != nil:
			return dayView{}, false, err
		case !found:
			return dayView{info: webevents.DayInfo{Day: day, Updated: info.Updated}, read: func(int64, func(int64, webevents.Event) error) error { return nil }}, true, nil
		case f.rest == "":
			s.metrics.filter("origin")
			return dayView{info: oi, read: func(from int64, fn func(int64, webevents.Event) error) error {
				return os.ReadOriginDay(day, f.origin, from, fn)
			}}, true, nil
		default:
			under, fullScan = func(from int64, fn func(int64, webevents.Event) error) error {
				return os.ReadOriginDay(day, f.origin, from, fn)
			}, false
			info.Updated = oi.Updated
		}
	}
	// The measure reads one origin's records, or a whole day begun before
	// the index: it takes a stream slot, as sending a day file would.
	select {
	case s.slots <- struct{}{}:
		defer func() { <-s.slots }()
	default:
		return dayView{}, false, errNoSlot
	}
	fl := &filteredLog{under: under, match: f.Match}
	size, records, err := fl.measure()
	if err != nil {
		return dayView{}, false, err
	}
	if fullScan {
		s.metrics.filter("day")
	} else {
		s.metrics.filter("prefix")
	}
	return dayView{info: webevents.DayInfo{Day: day, Size: size, Records: records, Updated: info.Updated}, read: fl.read}, true, nil
}

// openFollowedDay is the view of day's records of f's origin in a store
// whose origin index runs behind its day log: what the index holds, then
// the day log's records past it (originTail). It does not bring the index
// up to the log, as OriginDayInfo would at each request: a subscriber
// that pulls filtered files every 30 s, one of many, would write the
// index in passes of a few records. It reads what the index has not
// reached (the last seconds of the day, up to 16 MiB) for the size, and
// takes a stream slot for that read. ok is false when the day has no
// record of the origin; info is the whole day's, as the caller read it.
func (s *Server) openFollowedDay(of originFollower, day int64, f *DayFilter, info webevents.DayInfo, whole logReader) (dayView, bool, error) {
	oi, through, err := of.ReadOriginDayIndexed(day, f.origin, math.MaxInt64, nil)
	if err != nil {
		return dayView{}, false, err
	}
	if through < info.Size { // a day the index has not reached the end of
		select {
		case s.slots <- struct{}{}:
			defer func() { <-s.slots }()
		default:
			return dayView{}, false, errNoSlot
		}
	}
	tailed := false
	err = whole(through, func(off int64, e webevents.Event) error {
		if off >= through && webevents.Origin(e.URL) == f.origin {
			oi.Size += int64(webevents.RecordLen(&e))
			oi.Records++
			tailed = true
		}
		return nil
	})
	if err != nil {
		return dayView{}, false, err
	}
	if tailed {
		// Records past the index: the day's last update, read again, is
		// no earlier than theirs.
		oi.Updated = info.Updated
		if now, ok, err := s.store.DayInfo(day); err == nil && ok {
			oi.Updated = now.Updated
		}
	}
	oi.Day = day
	return dayView{info: oi, read: newOriginTail(of, day, f.origin, whole).read}, oi.Records > 0, nil
}

// filteredLog is a log's records that pass match, with offsets counted
// over them alone. Written here, as no store index serves a prefix
// beyond the origin: it reads the underlying log from its start, and
// keeps where its last read stopped, so the chunks of one response read
// on from there rather than from the start again.
type filteredLog struct {
	under logReader
	match func(url string) bool
	// The resume point: the filtered file's byte at is the underlying
	// log's byte underAt, both record boundaries.
	at, underAt int64
}

func (l *filteredLog) measure() (size, records int64, err error) {
	err = l.under(0, func(_ int64, e webevents.Event) error {
		if l.match(e.URL) {
			size += int64(webevents.RecordLen(&e))
			records++
		}
		return nil
	})
	return size, records, err
}

func (l *filteredLog) read(from int64, fn func(int64, webevents.Event) error) error {
	if from < l.at {
		l.at, l.underAt = 0, 0
	}
	return l.under(l.underAt, func(off int64, e webevents.Event) error {
		n := int64(webevents.RecordLen(&e))
		if off < l.underAt {
			return nil
		}
		l.underAt = off + n
		if !l.match(e.URL) {
			return nil
		}
		at := l.at
		l.at += n
		if l.at <= from {
			return nil
		}
		return fn(at, e)
	})
}

// openError answers a day that openDay could not open: 503 when no stream
// slot was free for a filter's read, 500 for the store.
func (s *Server) openError(w http.ResponseWriter, day int64, err error) {
	if errors.Is(err, errNoSlot) {
		w.Header().Set("Retry-After", "1")
		http.Error(w, "too many transfers, retry", http.StatusServiceUnavailable)
		return
	}
	s.log.Error("share: day info", "day", day, "err", err)
	http.Error(w, "store error", http.StatusInternalServerError)
}

// requestFilter reads a request's prefix query (spec 7.7), nil for none,
// and names it in the Share-Filter header; ok is false when a bad one was
// answered with 400.
func requestFilter(w http.ResponseWriter, r *http.Request) (*DayFilter, bool) {
	f, ok, err := ParseDayFilter(r.URL.Query())
	switch {
	case err != nil:
		http.Error(w, "bad filter: "+err.Error(), http.StatusBadRequest)
		return nil, false
	case !ok:
		return nil, true
	}
	w.Header().Set(FilterHeader, f.Query())
	return &f, true
}
