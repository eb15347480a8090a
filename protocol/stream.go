package protocol

import (
	"bufio"
	"cmp"
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"math"
	"net/http"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/cocrawl/cocrawl/webevents"
)

// StreamPath is where a share server streams its web-events as they are
// recorded, as Server-Sent Events (spec section 7.8).
const StreamPath = "/events"

// Stream defaults: see ServerOptions.
const (
	defaultSubscribers          = 256
	defaultSubscribersPerClient = 4
	defaultStreamWriteTimeout   = 30 * time.Second
	streamHeartbeat             = 15 * time.Second
	// streamPass is the least time between two reads of the store for one
	// stream: a busy store appends many times a second, and a stream
	// gathers what they appended rather than reading after each.
	streamPass = 100 * time.Millisecond
	// streamPoll is how often a stream reads a store that cannot say when
	// it appended.
	streamPoll = time.Second
	// maxCursor bounds a Last-Event-ID's text.
	maxCursor = 256
)

// StreamCursor is where a stream stands: for each day it follows, the
// bytes of that day's file (filtered, when the stream is) already sent.
// A stream follows yesterday's file as well as today's, as records merged
// from a peer after midnight may be of a poll before it. Written as the
// SSE event id, "D-N" per day joined by ".", it is what a subscriber sends
// back in Last-Event-ID to resume.
type StreamCursor map[int64]int64

// ParseStreamCursor reads a cursor written by String.
func ParseStreamCursor(s string) (StreamCursor, error) {
	if len(s) > maxCursor {
		return nil, errors.New("stream cursor too long")
	}
	c := StreamCursor{}
	for part := range strings.SplitSeq(s, ".") {
		d, n, ok := strings.Cut(part, "-")
		day, err1 := strconv.ParseInt(d, 10, 64)
		off, err2 := strconv.ParseInt(n, 10, 64)
		if !ok || err1 != nil || err2 != nil || day < 0 || day > 1<<31 || off < 0 || strings.ContainsAny(part, "+ ") {
			return nil, fmt.Errorf("bad stream cursor %q", s)
		}
		c[day] = off
	}
	if len(c) > 8 {
		return nil, errors.New("stream cursor of too many days")
	}
	return c, nil
}

func (c StreamCursor) String() string {
	days := slices.Sorted(maps.Keys(c))
	parts := make([]string, len(days))
	for i, d := range days {
		parts[i] = fmt.Sprintf("%d-%d", d, c[d])
	}
	return strings.Join(parts, ".")
}

// StreamEvent is one web-event as a stream sends it: the record's fields
// as a day file has them (spec 4.2), with the day file and the offset it
// is at (of the filtered file, when the stream is filtered).
type StreamEvent struct {
	webevents.Event
	Day    int64 `json:"day"`
	Offset int64 `json:"offset"`
}

// appender is a store that says when it appended (webevents.BadgerStore,
// MemStore).
type appender interface{ Appended() <-chan struct{} }

// serveStream streams the web-events recorded from the cursor in
// Last-Event-ID (or the last-event-id query, which a browser's first
// EventSource request can send), or from now, filtered by a prefix query
// as day files are. It reads the store, never a queue: a subscriber that
// stops reading holds nothing but its connection, and is dropped when a
// write waits longer than the write timeout.
func (s *Server) serveStream(w http.ResponseWriter, r *http.Request) {
	filter, ok := requestFilter(w, r)
	if !ok {
		return
	}
	if r.Method == http.MethodHead {
		w.Header().Set("Content-Type", "text/event-stream; charset=utf-8")
		return
	}
	today := webevents.DayOf(s.now().Unix())
	var cur StreamCursor
	if id := cmp.Or(r.Header.Get("Last-Event-ID"), r.URL.Query().Get("last-event-id")); id != "" {
		c, err := ParseStreamCursor(id)
		if err != nil {
			http.Error(w, err.Error(), http.StatusBadRequest)
			return
		}
		cur = c
	}
	client := s.subscribers.key(r)
	if !s.subscribers.take(client) {
		s.metrics.streamDrop("limit")
		w.Header().Set("Retry-After", "5")
		http.Error(w, "too many subscriptions", http.StatusServiceUnavailable)
		return
	}
	defer s.subscribers.give(client)
	select {
	case s.streams <- struct{}{}:
		defer func() { <-s.streams }()
	default:
		s.metrics.streamDrop("limit")
		w.Header().Set("Retry-After", "5")
		http.Error(w, "too many subscriptions", http.StatusServiceUnavailable)
		return
	}
	st := &stream{s: s, filter: filter, readers: map[int64]logReader{}, batch: 256}
	st.emit = st.send
	if cur == nil {
		// From now: what today's and yesterday's files hold is not sent.
		cur = StreamCursor{}
		for _, d := range []int64{today - 1, today} {
			if size, ok := st.size(d); ok {
				cur[d] = size
			}
		}
	}
	st.cur = cur
	h := w.Header()
	h.Set("Content-Type", "text/event-stream; charset=utf-8")
	h.Set("Cache-Control", "no-cache")
	h.Set("X-Accel-Buffering", "no")
	h.Set(GenerationHeader, s.store.ID())
	rc := http.NewResponseController(w)
	st.bw = bufio.NewWriterSize(w, 16<<10)
	st.flush = func() error {
		_ = rc.SetWriteDeadline(time.Now().Add(s.streamWrite))
		if err := st.bw.Flush(); err != nil {
			return err
		}
		return rc.Flush()
	}
	w.WriteHeader(http.StatusOK)
	fmt.Fprintf(st.bw, "retry: 2000\n: cocrawl web-events, generation %s\n\n", s.store.ID())
	if err := st.flush(); err != nil {
		return
	}
	var wake <-chan struct{}
	ap, _ := s.store.(appender)
	heartbeat := time.NewTicker(streamHeartbeat)
	defer heartbeat.Stop()
	poll := time.NewTicker(streamPoll)
	defer poll.Stop()
	for {
		if ap != nil {
			wake = ap.Appended() // before the pass: an append during it wakes the next
		}
		if err := st.pass(); err != nil {
			if !errors.Is(err, errStreamClosed) {
				s.metrics.streamDrop("slow")
				s.log.Debug("share: stream dropped", "client", client, "err", err)
			}
			return
		}
		select {
		case <-r.Context().Done():
			return
		case <-s.closing:
			return
		case <-heartbeat.C:
			st.bw.WriteString(": keep-alive\n\n")
			if err := st.flush(); err != nil {
				s.metrics.streamDrop("slow")
				return
			}
			continue
		case <-wake:
		case <-poll.C:
		}
		select {
		case <-time.After(streamPass):
		case <-r.Context().Done():
			return
		}
	}
}

var errStreamClosed = errors.New("protocol: stream closed")

// stream is one subscriber's place in the store: an SSE stream, or a
// WebSub subscription (websub.go). A pass hands each record past the
// cursor to emit, and calls flush after every batch records and at its
// end.
type stream struct {
	s       *Server
	filter  *DayFilter
	cur     StreamCursor
	readers map[int64]logReader // per day, kept: a filtered log keeps where it stopped
	emit    func(day, off int64, e webevents.Event) error
	flush   func() error
	batch   int
	bw      *bufio.Writer // the SSE stream's
	buf     []byte
}

// size is a day's (filtered) file size; false when the day has no file.
//
// The store's day and origin infos say it without a read (with an index
// behind its log, what the log holds past it is read); a prefix with a
// path, or a day begun before the origin index, is read.
func (st *stream) size(day int64) (int64, bool) {
	info, ok, err := st.s.store.DayInfo(day)
	if err != nil || !ok {
		return 0, false
	}
	if st.filter == nil {
		return info.Size, true
	}
	if of, ok := st.s.store.(originFollower); ok && st.filter.rest == "" {
		whole := func(from int64, fn func(int64, webevents.Event) error) error {
			return st.s.store.ReadDay(day, from, fn)
		}
		if v, _, err := st.s.openFollowedDay(of, day, st.filter, info, whole); err == nil {
			return v.info.Size, true // 0 when the day has none of the origin
		}
	}
	if os, ok := st.s.store.(OriginStore); ok && st.filter.rest == "" {
		oi, _, err := os.OriginDayInfo(day, st.filter.origin)
		if err == nil {
			return oi.Size, true // 0 when the day has none of the origin
		}
	}
	var n int64
	read, ok := st.reader(day)
	if !ok {
		return 0, false
	}
	err = read(0, func(off int64, e webevents.Event) error {
		n = off + int64(webevents.RecordLen(&e))
		return nil
	})
	return n, err == nil
}

// reader is the day's log as the stream reads it: the whole day, its
// origin's log, or a filtered view.
func (st *stream) reader(day int64) (logReader, bool) {
	if r := st.readers[day]; r != nil {
		return r, true
	}
	s := st.s
	if _, ok, err := s.store.DayInfo(day); err != nil || !ok {
		return nil, false
	}
	read := logReader(func(from int64, fn func(int64, webevents.Event) error) error { return s.store.ReadDay(day, from, fn) })
	if f := st.filter; f != nil {
		indexed := false
		if of, ok := s.store.(originFollower); ok {
			if _, _, err := of.ReadOriginDayIndexed(day, f.origin, math.MaxInt64, nil); err == nil {
				indexed = true
				read = newOriginTail(of, day, f.origin, read).read
			}
		} else if os, ok := s.store.(OriginStore); ok {
			if _, _, err := os.OriginDayInfo(day, f.origin); err == nil {
				indexed = true
				read = func(from int64, fn func(int64, webevents.Event) error) error {
					return os.ReadOriginDay(day, f.origin, from, fn)
				}
			}
		}
		if !indexed || f.rest != "" {
			read = (&filteredLog{under: read, match: f.Match}).read
		}
	}
	st.readers[day] = read
	return read, true
}

// originFollower is a store whose origin index a stream can read as far
// as it runs, without making it catch up with the day log
// (webevents.BadgerStore, which writes the index behind its log).
type originFollower interface {
	ReadOriginDayIndexed(day int64, origin string, from int64, fn func(int64, webevents.Event) error) (info webevents.DayInfo, through int64, err error)
}

// originTail is one origin's records of a day as a stream follows them:
// those its index holds, then the day log's past them (a filteredLog that
// starts where the index ends), kept where the last pass stopped, so that
// a pass reads only what was appended since. Its offsets are those of the
// filtered day file (spec 7.7), as the index would give them once it
// caught up.
type originTail struct {
	indexed func(from int64, fn func(int64, webevents.Event) error) (info webevents.DayInfo, through int64, err error)
	tail    filteredLog // of the whole day's log
	started bool
}

// newOriginTail is origin's records of day in of, log being the day's.
func newOriginTail(of originFollower, day int64, origin string, log logReader) *originTail {
	return &originTail{
		indexed: func(from int64, fn func(int64, webevents.Event) error) (webevents.DayInfo, int64, error) {
			return of.ReadOriginDayIndexed(day, origin, from, fn)
		},
		tail: filteredLog{under: log, match: func(u string) bool { return webevents.Origin(u) == origin }},
	}
}

func (t *originTail) read(from int64, fn func(int64, webevents.Event) error) error {
	if !t.started || from < t.tail.at {
		info, through, err := t.indexed(from, fn)
		if err != nil {
			return err
		}
		// The filtered file's byte info.Size is the day log's byte through.
		t.tail.at, t.tail.underAt, t.started = info.Size, through, true
	}
	// What lies below the resume point was the index's to send.
	return t.tail.read(max(from, t.tail.at), fn)
}

// pass sends what the days followed hold past the cursor, in day order,
// and stops following days before yesterday once they are sent.
func (st *stream) pass() error {
	today := webevents.DayOf(st.s.now().Unix())
	days := slices.Sorted(maps.Keys(st.cur))
	for _, d := range []int64{today - 1, today} {
		if _, ok := st.cur[d]; !ok {
			days = append(days, d)
		}
	}
	slices.Sort(days)
	days = slices.Compact(days)
	sent := 0
	for _, day := range days {
		read, ok := st.reader(day)
		if !ok {
			continue
		}
		from := st.cur[day]
		err := read(from, func(off int64, e webevents.Event) error {
			if off < from {
				return nil
			}
			if e.From != "" && st.s.withhold != nil && st.s.withhold(e.From) {
				st.cur[day] = off + int64(webevents.RecordLen(&e))
				return nil
			}
			st.cur[day] = off + int64(webevents.RecordLen(&e))
			e.From = "" // attribution is the peer's own business, as in day files
			if err := st.emit(day, off, e); err != nil {
				return err
			}
			if sent++; sent%st.batch == 0 {
				return st.flush()
			}
			return nil
		})
		if err != nil {
			return err
		}
	}
	for day := range st.cur {
		if day < today-1 {
			delete(st.cur, day)
			delete(st.readers, day)
		}
	}
	if sent%st.batch != 0 {
		return st.flush()
	}
	return nil
}

// send writes one SSE event.
func (st *stream) send(day, off int64, e webevents.Event) error {
	var err error
	st.buf, err = json.Marshal(StreamEvent{Event: e, Day: day, Offset: off})
	if err != nil {
		return err
	}
	fmt.Fprintf(st.bw, "id: %s\ndata: %s\n\n", st.cur, st.buf)
	st.s.metrics.streamEvent()
	return nil
}

// CloseStreams ends every live stream, now and for good: an HTTP server's
// graceful shutdown would wait for them, as they never end by themselves.
func (s *Server) CloseStreams() { s.closeOnce.Do(func() { close(s.closing) }) }
