package protocol

import (
	"cmp"
	"compress/gzip"
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"net/url"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/cocrawl/cocrawl/internal/iolimit"
	"github.com/cocrawl/cocrawl/webevents"
)

// MergeStore is what the merge client needs of a store.
type MergeStore interface {
	Cursor(peer string) (webevents.Cursor, bool, error)
	Merge(events []webevents.Event, c *webevents.Cursor) (webevents.MergeResult, error)
}

// Merger merges peers' share repositories into a store (spec section 4).
// The zero values of its optional fields are sensible defaults.
type Merger struct {
	Store  MergeStore
	Client *http.Client // nil: NewHTTPClient with private addresses refused
	Limits Limits       // per file; Limits.MaxBytes also bounds wire bytes
	// BackDays is how many days, today included, a first merge with a peer
	// reaches back; 0 means 7.
	BackDays int
	// MaxDays caps the days fetched in one merge after a long absence; 0
	// means 30.
	MaxDays int
	// Recheck is how many past days are re-checked with conditional
	// requests on every merge, for records a peer appended late; 0 means 1
	// (yesterday). Negative means none.
	Recheck int
	// BatchSize is how many records are committed at once; 0 means 4096.
	BatchSize int
	// MaxDuration bounds one whole merge, every request included; 0 means
	// 10 minutes. What was committed before it passed is kept.
	MaxDuration time.Duration
	// MinSpeed is the slowest average a day file may arrive at, in bytes per
	// second, once MinSpeedAfter has passed since its request; 0 means 1,024
	// and 30 s. A peer that trickles its files is given up, not waited for.
	MinSpeed      int64
	MinSpeedAfter time.Duration
	// DayQuota is how many records one peer's file of one day may bring
	// in all; the rest are not merged. 0 means 1,000,000.
	DayQuota int64
	// Filter, when set, keeps only the records it accepts (a peer that
	// merges only URLs within its own scope); the others are counted as
	// Filtered.
	Filter func(*webevents.Event) bool
	// Prefix, when set, asks for day files filtered to it (spec 7.7); a
	// server that sends whole files has them filtered here, with offsets
	// in the whole files. Records it leaves out count as Filtered.
	Prefix *DayFilter
	// CheckControl, when set, may refuse a peer's robots.shr before anything
	// is merged; a libp2p client uses it to reject a file whose peer-id is
	// not the peer the connection authenticated.
	CheckControl func(*ShareControl) error
	UserAgent    string // default "cocrawl/<version>"
	From         string // the operator's e-mail, sent in the From header
	// Merged, when set, is called after each batch of a peer's records is
	// committed, with the records as decoded (before attribution) and what
	// the store did with them: a peer learns from it which URLs another
	// peer polled, and samples what to spot-check.
	Merged  func(peer string, batch []webevents.Event, res webevents.MergeResult)
	Now     func() time.Time
	Logger  *slog.Logger
	Metrics *Metrics // nil: not counted
}

// MergeReport says what one merge did.
type MergeReport struct {
	Peer       string
	Control    *ShareControl
	Days       []DayReport
	Records    int64 // good records decoded
	BadRecords int64 // records skipped as malformed
	WireBytes  int64 // bytes received, compressed or not
	Result     webevents.MergeResult
}

// DayReport is the outcome for one day file.
type DayReport struct {
	Day        int64
	Status     int // HTTP status of the last response
	Records    int64
	BadRecords int64
	WireBytes  int64
	Result     webevents.MergeResult
	Filtered   int64 // records Merger.Filter left out
	OverQuota  bool  // the day's quota was reached: the rest is not merged
	Err        error // a fatal error for this day; later days were still tried
}

// ErrBadResponse is wrapped by errors about a peer's HTTP responses.
var ErrBadResponse = errors.New("protocol: bad response from peer")

// The defaults are read, never written: a Merger's zero value works and
// one Merger is safe for concurrent merges (as http.Client.transport).

// defaultClient is shared by Mergers without a Client, as http.Client
// shares http.DefaultTransport.
var defaultClient = NewHTTPClient(ClientOptions{})

func (m *Merger) client() *http.Client {
	if m.Client == nil {
		return defaultClient
	}
	return m.Client
}

func (m *Merger) backDays() int  { return positiveOr(m.BackDays, 7) }
func (m *Merger) maxDays() int   { return positiveOr(m.MaxDays, 30) }
func (m *Merger) batchSize() int { return positiveOr(m.BatchSize, 4096) }

func (m *Merger) dayQuota() int64 { return cmp.Or(max(m.DayQuota, 0), 1_000_000) }

// recheck is the days re-checked before today: Recheck, 1 when zero, none
// when negative.
func (m *Merger) recheck() int {
	if m.Recheck == 0 {
		return 1
	}
	return max(m.Recheck, 0)
}

func (m *Merger) userAgent() string {
	if m.UserAgent == "" {
		return "cocrawl/" + CurrentVersion
	}
	return m.UserAgent
}

func (m *Merger) now() time.Time {
	if m.Now == nil {
		return time.Now()
	}
	return m.Now()
}

func (m *Merger) logger() *slog.Logger {
	if m.Logger == nil {
		return slog.Default()
	}
	return m.Logger
}

func positiveOr(v, def int) int {
	if v > 0 {
		return v
	}
	return def
}

// Merge fetches the robots.shr at shrURL and every day file due since the
// last merge with that peer, and commits the resolved events and the cursor
// in batches. An error for one day file is reported in its DayReport and the
// merge goes on with the next day; Merge returns an error only when nothing
// could be merged (robots.shr unusable, store failing, context done).
func (m *Merger) Merge(ctx context.Context, shrURL string) (*MergeReport, error) {
	lim := m.Limits.withDefaults()
	ctx, cancel := context.WithTimeoutCause(ctx, cmp.Or(m.MaxDuration, 10*time.Minute), ErrMergeTooLong)
	defer cancel()
	rep := &MergeReport{Peer: shrURL}
	base, err := url.Parse(shrURL)
	if err != nil || (base.Scheme != "http" && base.Scheme != "https") || base.Host == "" {
		return rep, fmt.Errorf("protocol: %q is not an http(s) URL of a robots.shr", shrURL)
	}
	sc, err := m.fetchControl(ctx, shrURL, lim, rep)
	if err != nil {
		return rep, err
	}
	rep.Control = sc
	if m.CheckControl != nil {
		if err := m.CheckControl(sc); err != nil {
			return rep, err
		}
	}
	repo, err := sc.RepositoryURL(base)
	if err != nil {
		return rep, err
	}

	cur, known, err := m.Store.Cursor(shrURL)
	if err != nil {
		return rep, fmt.Errorf("protocol: read cursor: %w", err)
	}
	cur.Peer = shrURL
	today := webevents.Today(m.now())
	first := today - int64(m.backDays()) + 1
	if known {
		first = min(cur.LastDay, today-int64(m.recheck()))
	}
	first = max(first, today-int64(m.maxDays())+1)
	// The next merge starts from the first day that did not finish (a
	// timeout, a 5xx, a broken file), or from today's re-checks: a day is
	// only passed once it was merged to its end.
	next := today
	for day := first; day <= today; day++ {
		if ctx.Err() != nil {
			return rep, context.Cause(ctx) // shut down, or ErrMergeTooLong
		}
		dr, err := m.mergeDay(ctx, repo, day, &cur, lim, rep)
		rep.Days = append(rep.Days, dr)
		if err != nil { // the store failed: stop, the cursor is safe
			return rep, err
		}
		if dr.Err != nil {
			next = min(next, day)
		}
		if errors.Is(dr.Err, ErrTooSlow) {
			// The next days would come as slowly: give the slot back.
			return rep, dr.Err
		}
	}
	// Keep marks only for days that will be fetched again.
	keep := cur.Marks[:0]
	for _, mk := range cur.Marks {
		if mk.Day >= min(next, today-int64(m.recheck())) {
			keep = append(keep, mk)
		}
	}
	cur.Marks, cur.LastDay, cur.Updated = keep, next, m.now()
	if _, err := m.Store.Merge(nil, &cur); err != nil {
		return rep, fmt.Errorf("protocol: write cursor: %w", err)
	}
	if ctx.Err() != nil { // the deadline cut the last day short
		return rep, context.Cause(ctx)
	}
	return rep, nil
}

func (m *Merger) newRequest(ctx context.Context, u string) (*http.Request, error) {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, u, nil)
	if err != nil {
		return nil, err
	}
	req.Header.Set("User-Agent", m.userAgent())
	if m.From != "" {
		req.Header.Set("From", m.From)
	}
	return req, nil
}

func (m *Merger) fetchControl(ctx context.Context, u string, lim Limits, rep *MergeReport) (*ShareControl, error) {
	req, err := m.newRequest(ctx, u)
	if err != nil {
		return nil, err
	}
	resp, err := m.client().Do(req)
	if err != nil {
		m.Metrics.fetch("shr_error")
		return nil, fmt.Errorf("protocol: fetch robots.shr: %w", err)
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		m.Metrics.fetch("shr_error")
		return nil, fmt.Errorf("%w: robots.shr: %s", ErrBadResponse, resp.Status)
	}
	cr := &countingReader{r: io.LimitReader(resp.Body, 1<<20+1)}
	sc, err := ParseShareControl(cr, lim)
	rep.WireBytes += cr.n
	m.Metrics.received(cr.n)
	if err != nil {
		m.Metrics.bad("shr", err)
		m.Metrics.fetch("shr_bad")
		return nil, err
	}
	m.Metrics.fetch("shr_ok")
	return sc, nil
}

// mergeDay fetches one day file from the cursor's mark and merges it. It
// returns an error only for store failures; peer problems go in the report.
func (m *Merger) mergeDay(ctx context.Context, repo *url.URL, day int64, cur *webevents.Cursor, lim Limits, rep *MergeReport) (DayReport, error) {
	dr := DayReport{Day: day}
	mark := cur.Mark(day)
	if mark.Records >= m.dayQuota() {
		dr.OverQuota = true // finished: nothing more is taken from this file
		return dr, nil
	}
	u := repo.JoinPath(strconv.FormatInt(day, 10) + ".dat").String()
	if m.Prefix != nil {
		u += "?" + m.Prefix.Query()
	}
	for attempt := 0; attempt < 2; attempt++ {
		req, err := m.newRequest(ctx, u)
		if err != nil {
			dr.Err = err
			return dr, nil
		}
		req.Header.Set("Accept-Encoding", "gzip")
		if mark.Offset > 0 {
			req.Header.Set("Range", fmt.Sprintf("bytes=%d-", mark.Offset))
		}
		if mark.ETag != "" {
			req.Header.Set("If-None-Match", mark.ETag)
		}
		resp, err := m.client().Do(req)
		if err != nil {
			m.Metrics.fetch("dat_error")
			dr.Err = fmt.Errorf("protocol: fetch %s: %w", u, err)
			return dr, nil
		}
		dr.Status = resp.StatusCode
		var base int64
		switch resp.StatusCode {
		case http.StatusNotModified:
			resp.Body.Close()
			m.Metrics.fetch("dat_not_modified")
			return dr, nil
		case http.StatusNotFound:
			resp.Body.Close()
			m.Metrics.fetch("dat_missing")
			cur.SetMark(webevents.DayMark{Day: day}) // no data for that day
			return dr, nil
		case http.StatusRequestedRangeNotSatisfiable:
			// The file is shorter than what we merged: it was rebuilt.
			// Fetch it whole once; resolution makes re-merging harmless.
			resp.Body.Close()
			m.Metrics.fetch("dat_range_reset")
			mark = webevents.DayMark{Day: day}
			continue
		case http.StatusOK:
			// Whole file, also when the server ignored our Range.
		case http.StatusPartialContent:
			if g := generation(resp); mark.Gen != "" && g != "" && g != mark.Gen {
				// The server's offsets are not the ones we counted in:
				// its store was rebuilt or restarted after a crash.
				resp.Body.Close()
				m.Metrics.fetch("dat_generation_reset")
				mark = webevents.DayMark{Day: day}
				continue
			}
			start, ok := contentRangeStart(resp.Header.Get("Content-Range"))
			if !ok || start != mark.Offset {
				resp.Body.Close()
				m.Metrics.fetch("dat_bad")
				dr.Err = fmt.Errorf("%w: Content-Range %q for offset %d", ErrBadResponse, resp.Header.Get("Content-Range"), mark.Offset)
				return dr, nil
			}
			base = start
		default:
			resp.Body.Close()
			m.Metrics.fetch("dat_error")
			dr.Err = fmt.Errorf("%w: %s: %s", ErrBadResponse, u, resp.Status)
			return dr, nil
		}
		err = m.decodeDay(resp, day, base, cur, lim, &dr)
		resp.Body.Close()
		rep.Records += dr.Records
		rep.BadRecords += dr.BadRecords
		rep.WireBytes += dr.WireBytes
		rep.Result.Add(dr.Result)
		return dr, m.account(err, &dr)
	}
	dr.Err = fmt.Errorf("%w: %s: range not satisfiable twice", ErrBadResponse, u)
	return dr, nil
}

// IsStoreError says whether a merge failed because the merging peer's own
// store did (a full disk), not because of the peer merged from.
func IsStoreError(err error) bool {
	var se storeError
	return errors.As(err, &se)
}

// generation is a day file's Share-Generation, "" when absent or longer
// than a store ID could be: it is kept in the cursor for every day.
func generation(resp *http.Response) string {
	if g := resp.Header.Get(GenerationHeader); len(g) <= 128 {
		return g
	}
	return ""
}

// storeError marks failures of the local store, which stop a merge.
type storeError struct{ err error }

func (e storeError) Error() string { return "protocol: store: " + e.err.Error() }
func (e storeError) Unwrap() error { return e.err }

// account sorts an error of decodeDay into the report or a returned error.
func (m *Merger) account(err error, dr *DayReport) error {
	var se storeError
	if errors.As(err, &se) {
		return se
	}
	if err != nil {
		dr.Err = err
		m.Metrics.fetch("dat_bad")
		m.Metrics.bad("dat", err)
		return nil
	}
	m.Metrics.fetch("dat_ok")
	return nil
}

// decodeDay streams a response body through the decoder into the store in
// batches, moving the cursor's mark with each batch. Memory is one batch.
func (m *Merger) decodeDay(resp *http.Response, day, base int64, cur *webevents.Cursor, lim Limits, dr *DayReport) error {
	slow := &iolimit.MinSpeed{R: resp.Body, Start: time.Now(), Min: cmp.Or(m.MinSpeed, 1024),
		After: cmp.Or(m.MinSpeedAfter, 30*time.Second), TooSlow: ErrTooSlow}
	wire := &countingReader{r: io.LimitReader(slow, lim.MaxBytes+1)}
	defer func() {
		dr.WireBytes = wire.n
		m.Metrics.received(wire.n)
	}()
	var body io.Reader = wire
	switch enc := strings.ToLower(strings.TrimSpace(resp.Header.Get("Content-Encoding"))); enc {
	case "", "identity":
	case "gzip", "x-gzip":
		zr, err := gzip.NewReader(wire)
		if err != nil {
			return fmt.Errorf("protocol: gzip: %w", err)
		}
		defer zr.Close()
		body = zr
	default:
		return fmt.Errorf("%w: Content-Encoding %q", ErrBadResponse, enc)
	}
	dec := NewDatReader(body, DatOptions{Limits: lim, Now: m.Now})
	// Decoding runs one batch ahead of the store, on its own goroutine, so
	// the network and the decoder overlap the store's commits.
	batches := make(chan decoded, 1)
	stop := make(chan struct{})
	// The decoder must be gone before this returns: the caller closes the
	// body, and the gzip reader closes below, under a Read of its own
	// otherwise (a store failure ends the loop early). Closing the body
	// first ends a Read waiting on the network.
	defer func() {
		resp.Body.Close()
		close(stop)
		for range batches {
		}
	}()
	go m.decodeBatches(dec, batches, stop, func(err error) {
		m.logger().Debug("merge: bad record skipped", "day", day, "err", err)
	})
	taken := cur.Mark(day).Records
	for b := range batches {
		dr.Records += b.records
		dr.BadRecords += b.bad
		if left := m.dayQuota() - taken; int64(len(b.events)) >= left {
			b.events, dr.OverQuota = b.events[:left], true
			m.Metrics.fetch("dat_over_quota")
			m.logger().Warn("merge: a peer's day file passed the quota", "peer", cur.Peer, "day", day, "quota", m.dayQuota())
		}
		taken += int64(len(b.events))
		if m.Filter != nil || m.Prefix != nil {
			n := len(b.events)
			b.events = slices.DeleteFunc(b.events, func(e webevents.Event) bool {
				return (m.Filter != nil && !m.Filter(&e)) || (m.Prefix != nil && !m.Prefix.Match(e.URL))
			})
			dr.Filtered += int64(n - len(b.events))
		}
		mk := webevents.DayMark{Day: day, Offset: base + b.offset, Records: taken, Gen: generation(resp)}
		if b.err == io.EOF && !dr.OverQuota {
			if etag := resp.Header.Get("ETag"); len(etag) <= 256 { // kept in the cursor
				mk.ETag = etag // the file was read whole
			}
		}
		cur.SetMark(mk)
		res, err := m.Store.Merge(b.events, cur)
		if err != nil {
			return storeError{err}
		}
		m.Metrics.merged(res)
		dr.Result.Add(res)
		if m.Merged != nil && len(b.events) > 0 {
			m.Merged(cur.Peer, b.events, res)
		}
		if dr.OverQuota {
			return nil // the decoder goroutine stops when stop closes
		}
		if b.err != nil && b.err != io.EOF {
			// Fatal: what was decoded before stands, without the ETag, so
			// the rest is asked for next time.
			return fmt.Errorf("day %d: %w", day, b.err)
		}
	}
	return nil
}

// ImportSource is the attribution (webevents.Event.From) of records that
// MergeFile imports.
const ImportSource = "import"

// ImportReport says what MergeFile did.
type ImportReport struct {
	Records    int64 // good records decoded
	BadRecords int64 // records skipped as malformed
	Result     webevents.MergeResult
}

// MergeFile merges the records of a day file read from r into the store,
// without a cursor: a file that came another way than from a peer
// (`cocrawl events import`). It decodes and commits in batches, as Merge
// does; malformed records are skipped and handed to onBad. A fatal error
// of the stream ends it after what was decoded before it is merged.
func (m *Merger) MergeFile(r io.Reader, onBad func(error)) (ImportReport, error) {
	var rep ImportReport
	batches := make(chan decoded, 1)
	stop := make(chan struct{})
	defer func() { // the decoder is gone before the caller's reader is
		close(stop)
		for range batches {
		}
	}()
	go m.decodeBatches(NewDatReader(r, DatOptions{Limits: m.Limits.withDefaults(), Now: m.Now}), batches, stop, onBad)
	for b := range batches {
		rep.Records += b.records
		rep.BadRecords += b.bad
		for i := range b.events {
			b.events[i].From = ImportSource // nobody vouches: an own poll wins
		}
		res, err := m.Store.Merge(b.events, nil)
		rep.Result.Add(res)
		m.Metrics.merged(res)
		if err != nil {
			return rep, storeError{err}
		}
		if b.err != nil && b.err != io.EOF {
			return rep, b.err
		}
	}
	return rep, nil
}

// decoded is one batch of records and the decoder's state after it.
type decoded struct {
	events  []webevents.Event
	records int64
	bad     int64
	offset  int64 // DatReader.Offset after the batch
	err     error // io.EOF after the last batch, or a fatal error
}

// decodeBatches sends batches of decoded records until the file ends or a
// fatal error; the last batch carries io.EOF or that error. Each malformed
// record is counted and handed to onBad.
func (m *Merger) decodeBatches(dec *DatReader, out chan<- decoded, stop <-chan struct{}, onBad func(error)) {
	defer close(out)
	b := decoded{events: make([]webevents.Event, 0, m.batchSize())}
	for {
		e, err := dec.Next()
		switch {
		case err == nil:
			b.records++
			b.events = append(b.events, e)
			if len(b.events) < m.batchSize() {
				continue
			}
		case IsRecordError(err):
			b.bad++
			m.Metrics.bad("dat", err)
			onBad(err)
			continue
		default:
			b.err = err
		}
		b.offset = dec.Offset()
		select {
		case out <- b:
		case <-stop:
			return
		}
		if b.err != nil {
			return
		}
		b = decoded{events: make([]webevents.Event, 0, m.batchSize())}
	}
}

// contentRangeStart parses "bytes N-M/L".
func contentRangeStart(h string) (int64, bool) {
	v, ok := strings.CutPrefix(h, "bytes ")
	if !ok {
		return 0, false
	}
	a, _, ok := strings.Cut(v, "-")
	if !ok {
		return 0, false
	}
	n, err := strconv.ParseInt(a, 10, 64)
	return n, err == nil && n >= 0
}

type countingReader struct {
	r io.Reader
	n int64
}

func (c *countingReader) Read(p []byte) (int, error) {
	n, err := c.r.Read(p)
	c.n += int64(n)
	return n, err
}
