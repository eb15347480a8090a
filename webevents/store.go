package webevents

import (
	"errors"
	"time"
)

// Store keeps a peer's view of the web: the current state of every URL, the
// append-only log of each day, and a merge cursor per peer. Implementations
// are safe for concurrent use; writes are serialised.
type Store interface {
	// ID is a random identifier made when the store was created; share
	// servers put it in ETags so a rebuilt store never matches an old tag.
	ID() string
	// Get returns the current state of url.
	Get(url string) (Event, bool, error)
	// Record writes the peer's own observations: each becomes the current
	// state of its URL and is appended to the log of its day. Their From
	// is cleared: they are this peer's.
	Record(events []Event) error
	// Merge resolves each event against the current state (earlier events
	// of the same batch included) with Resolve and commits the outcome.
	// When c is not nil the cursor is written with the last part of the
	// batch, so it is never durable before the events it covers, and every
	// event is attributed to c.Peer (Event.From); without a cursor the
	// events keep the From they carry.
	Merge(events []Event, c *Cursor) (MergeResult, error)
	// Cursor returns the stored merge cursor of a peer.
	Cursor(peer string) (Cursor, bool, error)
	// Current calls fn with the current state of every URL in URL order.
	Current(fn func(Event) error) error
	// DayInfo describes the log of day; ok is false when the day has none.
	DayInfo(day int64) (info DayInfo, ok bool, err error)
	// ReadDay calls fn, in log order, with every entry of day whose record
	// text ends after byte from of the day file, and the entry's offset.
	ReadDay(day int64, from int64, fn func(offset int64, e Event) error) error
	// OriginDayInfo is DayInfo for the records of day whose URLs have
	// origin (Origin), the day file filtered to one site; it returns
	// ErrDayNotIndexed for a day an older build began, whose records of
	// one origin only a read of the whole day finds.
	OriginDayInfo(day int64, origin string) (info DayInfo, ok bool, err error)
	// ReadOriginDay is ReadDay over those records, with offsets in the
	// filtered day file.
	ReadOriginDay(day int64, origin string, from int64, fn func(offset int64, e Event) error) error
	// Expire drops what is older than day keepFrom: the logs of earlier
	// days (their day files are no longer served), the current states of
	// URLs deleted before it (long gone; a later poll or merge of them
	// starts afresh) and the cursors of peers not merged from since (a
	// peer back after that long starts as a first merge). It is retention:
	// without it a store grows for ever.
	Expire(keepFrom int64) (Expired, error)
	// Close flushes and closes the store.
	Close() error
}

// Expired counts what Store.Expire dropped.
type Expired struct {
	Days    int   // day logs
	Records int64 // their entries
	URLs    int   // current states of long-deleted URLs
	Cursors int   // cursors of peers not merged from since
}

// DayInfo describes one day's log.
type DayInfo struct {
	Day     int64
	Size    int64     // bytes of the day file: the sum of the record lengths
	Records int64     // number of entries
	Updated time.Time // when the last entry was appended
}

// MergeResult counts what Store.Merge did.
type MergeResult struct {
	Accepted, Restated, Ignored int
	// ByStat splits Accepted by the kind of the event recorded: CREATE,
	// UPDATE and DELETE, in that order (Stat.Index).
	ByStat [3]int
	// Polls lists URLs whose events broke the lifecycle order; the spec
	// says the merging peer should poll them.
	Polls []string
}

// Add folds o into r.
func (r *MergeResult) Add(o MergeResult) {
	r.Accepted += o.Accepted
	r.Restated += o.Restated
	r.Ignored += o.Ignored
	for i := range r.ByStat {
		r.ByStat[i] += o.ByStat[i]
	}
	r.Polls = append(r.Polls, o.Polls...)
}

// Cursor records how far a peer's share repository has been merged. Marks
// holds, for each day still worth re-checking, the byte offset already
// merged and the ETag last seen, so the next merge asks only for new bytes.
type Cursor struct {
	Peer    string    `json:"peer"` // the peer's robots.shr URL
	LastDay int64     `json:"last_day"`
	Marks   []DayMark `json:"marks,omitempty"`
	Updated time.Time `json:"updated"`
}

// DayMark is the merge position within one day file.
type DayMark struct {
	Day    int64  `json:"day"`
	Offset int64  `json:"offset"`
	ETag   string `json:"etag,omitempty"`
	// Records is how many records of the day file were taken so far: a
	// merge stops at a quota per peer and day.
	Records int64 `json:"records,omitempty"`
	// Gen is the server's generation (Share-Generation) the offset counts
	// in: from another generation, the day is read again from the start.
	Gen string `json:"gen,omitempty"`
}

// Mark returns the mark of day, or a zero mark for it.
func (c *Cursor) Mark(day int64) DayMark {
	for _, m := range c.Marks {
		if m.Day == day {
			return m
		}
	}
	return DayMark{Day: day}
}

// SetMark stores m, replacing any mark of the same day.
func (c *Cursor) SetMark(m DayMark) {
	for i := range c.Marks {
		if c.Marks[i].Day == m.Day {
			c.Marks[i] = m
			return
		}
	}
	c.Marks = append(c.Marks, m)
}

// ErrClosed is returned by a store used after Close.
var ErrClosed = errors.New("webevents: store closed")

// resolver applies Resolve over a batch, seeing earlier events of the same
// batch through a local map before the store's committed state. Both stores
// use it so their merge semantics cannot drift apart.
type resolver struct {
	get     func(url string) (Event, bool, error)
	pending map[string]Event
	result  MergeResult
	from    string // the source every event is attributed to; "" keeps theirs
}

func newResolver(get func(string) (Event, bool, error), c *Cursor) *resolver {
	r := &resolver{get: get, pending: make(map[string]Event)}
	if c != nil {
		r.from = c.Peer
	}
	return r
}

// resolve returns the decision for in; the caller writes Accept and Restate.
func (r *resolver) resolve(in Event) (Decision, error) {
	if r.from != "" {
		in.From = r.from
	}
	cur, ok := r.pending[in.URL]
	if !ok {
		var err error
		if cur, ok, err = r.get(in.URL); err != nil {
			return Decision{}, err
		}
	}
	var d Decision
	if ok {
		d = Resolve(&cur, in)
	} else {
		d = Resolve(nil, in)
	}
	if d.Violation {
		r.result.Polls = append(r.result.Polls, in.URL)
	}
	switch d.Action {
	case Accept:
		r.result.Accepted++
		r.result.ByStat[d.Result.Stat.Index()]++
		r.pending[in.URL] = d.Result
	case Restate:
		r.result.Restated++
		r.pending[in.URL] = d.Result
	default:
		r.result.Ignored++
	}
	return d, nil
}

// validate checks every event before a store writes any of them.
func validate(events []Event) error {
	for i := range events {
		if err := events[i].Validate(); err != nil {
			return err
		}
	}
	return nil
}
