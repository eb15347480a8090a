package webevents

import (
	"errors"
	"fmt"
	"net/url"
	"strconv"
	"time"
)

// Stat classifies a web-event: CREATE, UPDATE or DELETE.
type Stat byte

// The three kinds of web-event, with their wire letters.
const (
	Create Stat = 'C'
	Update Stat = 'U'
	Delete Stat = 'D'
)

// Valid reports whether s is one of C, U, D.
func (s Stat) Valid() bool { return s == Create || s == Update || s == Delete }

func (s Stat) String() string {
	if s.Valid() {
		return string(rune(s))
	}
	return "Stat(" + strconv.Itoa(int(s)) + ")"
}

// order gives the lifecycle position: CREATE before UPDATE before DELETE.
func (s Stat) order() int {
	switch s {
	case Create:
		return 0
	case Update:
		return 1
	}
	return 2
}

// Index is 0 for CREATE, 1 for UPDATE and 2 for DELETE: the lifecycle
// order, handy for arrays of counters.
func (s Stat) Index() int { return s.order() }

// MarshalText writes the wire letter, so JSON shows "C", not 67.
func (s Stat) MarshalText() ([]byte, error) {
	if !s.Valid() {
		return nil, fmt.Errorf("%w: %d", ErrBadStat, s)
	}
	return []byte{byte(s)}, nil
}

// UnmarshalText reads a wire letter.
func (s *Stat) UnmarshalText(b []byte) error {
	v, err := ParseStat(string(b))
	*s = v
	return err
}

// ParseStat parses a wire letter.
func ParseStat(s string) (Stat, error) {
	if len(s) == 1 && Stat(s[0]).Valid() {
		return Stat(s[0]), nil
	}
	return 0, fmt.Errorf("%w: %q", ErrBadStat, s)
}

// Event is one web-event record. Times are seconds since 1970-01-01 UTC.
// Its JSON form (cocrawl events --format jsonl) uses the wire field names.
type Event struct {
	URL  string `json:"url"`  // the web object's URL (absolute http or https)
	Size int64  `json:"size"` // object size in bytes
	LMD  int64  `json:"lmd"`  // last-modified date; for a DELETE, when the deletion was detected
	LPD  int64  `json:"lpd"`  // last-polled date, by the crawler named in CID
	CID  string `json:"cid"`  // "host:port Moniker" of the crawler that first observed the event
	Stat Stat   `json:"stat"`
	TTL  int64  `json:"ttl,omitempty"` // seconds after LPD during which the record holds; 0 means not given

	// Optional fields of protocol 1.1; empty means not given.
	Digest string `json:"digest,omitempty"` // content digest, "algorithm:hex"
	ETag   string `json:"etag,omitempty"`   // the object's HTTP entity tag, as the server sent it
	// Fingerprint of the object's visible text, "simhash64:<16 hex>"
	// (crawl/fingerprint): two polls of one version agree on it even where
	// the bytes differ at every response.
	Fingerprint string `json:"fp,omitempty"`

	// From attributes the record: the peer it was merged from (its
	// robots.shr URL), who vouches for it; empty for this peer's own polls.
	// Unlike CID, which anyone can write, the merging peer sets it. It is
	// kept in the store and never sent on the wire.
	From string `json:"from,omitempty"`
}

// Limits on field values that Validate enforces. They bound what one record
// can cost a peer that stores it.
const (
	MaxURLBytes   = 8192
	MaxCIDBytes   = 512
	MaxExtraBytes = 512 // digest, etag
	MaxSize       = 1 << 50
)

// Errors returned by validation. Callers classify with errors.Is.
var (
	ErrBadStat     = errors.New("webevents: stat is not C, U or D")
	ErrBadURL      = errors.New("webevents: url is not an absolute http(s) URL")
	ErrBadField    = errors.New("webevents: field value out of range")
	ErrDateTooOld  = errors.New("webevents: date before 1993-01-01")
	ErrDateFuture  = errors.New("webevents: date more than 24 h in the future")
	ErrLMDAfterLPD = errors.New("webevents: lmd after lpd")
)

// Validate checks the fields that do not depend on the clock.
func (e *Event) Validate() error {
	if len(e.URL) == 0 || len(e.URL) > MaxURLBytes || hasControl(e.URL) {
		return fmt.Errorf("%w: %.80q", ErrBadURL, e.URL)
	}
	u, err := url.Parse(e.URL)
	if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
		return fmt.Errorf("%w: %.80q", ErrBadURL, e.URL)
	}
	switch {
	case !e.Stat.Valid():
		return fmt.Errorf("%w: %v", ErrBadStat, e.Stat)
	case e.Size < 0 || e.Size > MaxSize:
		return fmt.Errorf("%w: size %d", ErrBadField, e.Size)
	case e.TTL < 0:
		return fmt.Errorf("%w: ttl %d", ErrBadField, e.TTL)
	case e.CID == "" || len(e.CID) > MaxCIDBytes || hasControl(e.CID):
		return fmt.Errorf("%w: cid %.80q", ErrBadField, e.CID)
	case len(e.Digest) > MaxExtraBytes || hasControl(e.Digest):
		return fmt.Errorf("%w: digest", ErrBadField)
	case len(e.ETag) > MaxExtraBytes || hasControl(e.ETag):
		return fmt.Errorf("%w: etag", ErrBadField)
	case len(e.Fingerprint) > MaxExtraBytes || hasControl(e.Fingerprint):
		return fmt.Errorf("%w: fp", ErrBadField)
	case len(e.From) > MaxURLBytes || hasControl(e.From):
		return fmt.Errorf("%w: from", ErrBadField)
	}
	return nil
}

// hasControl reports ASCII control characters, which would break the
// line-oriented wire format (a value with "\n" could inject a field).
func hasControl(s string) bool {
	for i := 0; i < len(s); i++ {
		if s[i] < 0x20 || s[i] == 0x7f {
			return true
		}
	}
	return false
}

// Date sanity, after Castillo (2004), appendix A.3.5: a date before 1993 is
// wrong; a date up to 24 h in the future is clock skew and is taken as now;
// a date further ahead is wrong.
const (
	MinSaneDate = 725846400 // 1993-01-01T00:00:00Z
	MaxSkew     = 24 * 60 * 60
)

// SaneDate applies the date rules to t given the current time now.
func SaneDate(t, now int64) (int64, error) {
	switch {
	case t < MinSaneDate:
		return 0, fmt.Errorf("%w: %d", ErrDateTooOld, t)
	case t > now+MaxSkew:
		return 0, fmt.Errorf("%w: %d", ErrDateFuture, t)
	case t > now:
		return now, nil
	}
	return t, nil
}

// CheckDates applies SaneDate to LMD and LPD, clamping small skews in place.
// An LMD later than the LPD is clamped to it when the gap is within the skew
// allowance and rejected otherwise: nobody can poll a version before it exists.
func (e *Event) CheckDates(now time.Time) error {
	n := now.Unix()
	lmd, err := SaneDate(e.LMD, n)
	if err != nil {
		return fmt.Errorf("lmd: %w", err)
	}
	lpd, err := SaneDate(e.LPD, n)
	if err != nil {
		return fmt.Errorf("lpd: %w", err)
	}
	if lmd > lpd {
		if lmd-lpd > MaxSkew {
			return fmt.Errorf("%w: lmd %d, lpd %d", ErrLMDAfterLPD, lmd, lpd)
		}
		lmd = lpd
	}
	e.LMD, e.LPD = lmd, lpd
	return nil
}

// SecondsPerDay is the length of a share-repository day.
const SecondsPerDay = 86400

// DayOf returns the day number (whole days since 1970-01-01 UTC) of a Unix time.
func DayOf(unix int64) int64 {
	d := unix / SecondsPerDay
	if unix < 0 && unix%SecondsPerDay != 0 {
		d--
	}
	return d
}

// Today returns the day number of now.
func Today(now time.Time) int64 { return DayOf(now.Unix()) }

// DayStart returns the Unix time of 00:00:00 UTC of day.
func DayStart(day int64) int64 { return day * SecondsPerDay }

// Day returns the day file the event belongs to: the day of its LPD.
func (e *Event) Day() int64 { return DayOf(e.LPD) }
