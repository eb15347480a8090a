package protocol

import (
	"bufio"
	"cmp"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"net/http"
	"strings"
	"time"

	"github.com/cocrawl/cocrawl/webevents"
)

// Subscriber follows one peer's web-events, filtered by a prefix: over
// the peer's live stream (/events, spec 7.8) or, from a peer without one,
// by pulling its day files (filtered where the peer filters, spec 7.7,
// and filtered here where it does not). It delivers events at least once
// and in the peer's order, and keeps where it stands in a state that
// Save persists, so that a subscriber restarted from it goes on where it
// stopped.
type Subscriber struct {
	Base   string     // the peer's share address: http(s)://host:port
	Prefix *DayFilter // nil: every event
	Client *http.Client
	// PullEvery is the time between pulls from a peer without a stream;
	// 0 means 30 s.
	PullEvery time.Duration
	// Deliver takes each event; an error stops Run, and the event is
	// delivered again by the next Run from the saved state.
	Deliver func(SubscribedEvent) error
	// FromNow starts a new subscription with the events recorded after it
	// began; without it, a new subscription starts with today's and
	// yesterday's (a stream's and a pull's first start alike).
	FromNow bool
	// State is where the subscription stands; Run updates it, and calls
	// Save with it after delivered events, at most every SaveEvery (0:
	// after each event) and when it returns.
	State     *SubscriptionState
	Save      func(*SubscriptionState) error
	SaveEvery time.Duration
	Logger    *slog.Logger
	// idle bounds the wait for a line of the stream, whose server sends one
	// every 15 s; 0 means 60 s.
	idle time.Duration
}

// SubscriptionState is where a subscription stands.
type SubscriptionState struct {
	Peer       string            `json:"peer"`
	Prefix     string            `json:"prefix,omitempty"`
	Generation string            `json:"generation,omitempty"` // of the stream's offsets
	Stream     string            `json:"stream,omitempty"`     // the stream's cursor (StreamCursor)
	Pull       *webevents.Cursor `json:"pull,omitempty"`       // the pulls' cursor
}

// SubscribedEvent is an event as a subscriber delivers it: the record,
// its day, and its offset in the (filtered) day file when it came by the
// stream.
type SubscribedEvent struct {
	webevents.Event
	Day    int64  `json:"day"`
	Offset *int64 `json:"offset,omitempty"`
}

// errNoStream: the peer has no live stream; pull.
var errNoStream = errors.New("protocol: the peer has no live stream")

// Run follows the peer until ctx ends (nil then) or Deliver or Save
// fails. Connection failures are retried with a backoff up to 30 s.
func (s *Subscriber) Run(ctx context.Context) error {
	lg := cmp.Or(s.Logger, slog.Default())
	if s.State == nil {
		s.State = &SubscriptionState{}
	}
	s.State.Peer = strings.TrimRight(s.Base, "/")
	if s.Prefix != nil {
		s.State.Prefix = s.Prefix.Prefix
	}
	sv := &saver{s: s}
	defer sv.flush()
	backoff := time.Second
	for {
		delivered, err := s.follow(ctx, sv)
		if errors.Is(err, errNoStream) {
			lg.Info("subscribe: the peer has no live stream; pulling its day files", "peer", s.Base, "every", cmp.Or(s.PullEvery, 30*time.Second))
			err = s.pull(ctx, sv, lg)
		}
		if ctx.Err() != nil {
			return nil
		}
		var de deliverError
		if errors.As(err, &de) {
			return de.err
		}
		if delivered {
			backoff = time.Second
		}
		lg.Warn("subscribe: stream ended; reconnecting", "peer", s.Base, "in", backoff, "err", err)
		select {
		case <-ctx.Done():
			return nil
		case <-time.After(backoff):
		}
		backoff = min(2*backoff, 30*time.Second)
	}
}

// deliverError is Deliver's or Save's: it ends Run.
type deliverError struct{ err error }

func (e deliverError) Error() string { return e.err.Error() }

// saver calls Save at most every SaveEvery.
type saver struct {
	s     *Subscriber
	last  time.Time
	dirty bool
}

func (v *saver) changed() error {
	v.dirty = true
	if time.Since(v.last) < v.s.SaveEvery {
		return nil
	}
	return v.flush()
}

func (v *saver) flush() error {
	if !v.dirty || v.s.Save == nil {
		return nil
	}
	v.dirty, v.last = false, time.Now()
	if err := v.s.Save(v.s.State); err != nil {
		return deliverError{fmt.Errorf("subscribe: save state: %w", err)}
	}
	return nil
}

// follow reads the live stream from the state's cursor; delivered says
// whether an event came.
func (s *Subscriber) follow(ctx context.Context, sv *saver) (delivered bool, err error) {
	u := strings.TrimRight(s.Base, "/") + StreamPath
	if s.Prefix != nil {
		u += "?" + s.Prefix.Query()
	}
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, u, nil)
	if err != nil {
		return false, err
	}
	req.Header.Set("Accept", "text/event-stream")
	last := s.State.Stream
	if last == "" && s.State.Pull == nil && !s.FromNow {
		today := webevents.Today(time.Now())
		last = StreamCursor{today - 1: 0, today: 0}.String()
	}
	if last != "" {
		req.Header.Set("Last-Event-ID", last)
	}
	client := *cmp.Or(s.Client, defaultClient)
	client.Timeout = 0 // a stream lasts; idle below bounds its silences
	resp, err := client.Do(req)
	if err != nil {
		return false, err
	}
	defer resp.Body.Close()
	switch {
	case resp.StatusCode == http.StatusNotFound || resp.StatusCode == http.StatusMethodNotAllowed || resp.StatusCode == http.StatusNotImplemented:
		return false, errNoStream
	case resp.StatusCode != http.StatusOK:
		return false, fmt.Errorf("%w: %s: %s", ErrBadResponse, u, resp.Status)
	case !strings.HasPrefix(resp.Header.Get("Content-Type"), "text/event-stream"):
		return false, errNoStream
	}
	gen := resp.Header.Get(GenerationHeader)
	if old := s.State.Generation; old != "" && gen != old && s.State.Stream != "" {
		// The peer's offsets are not those the cursor counted: its days
		// are read again from their starts (spec 7.8).
		if c, err := ParseStreamCursor(s.State.Stream); err == nil {
			for d := range c {
				c[d] = 0
			}
			s.State.Stream = c.String()
		}
		s.State.Generation = gen
		return false, errors.New("protocol: the peer's generation changed; its days are read again")
	}
	s.State.Generation = gen
	localFilter := s.Prefix != nil && resp.Header.Get(FilterHeader) == ""
	idle := cmp.Or(s.idle, 60*time.Second)
	timer := time.AfterFunc(idle, cancel)
	defer timer.Stop()
	sc := bufio.NewScanner(resp.Body)
	sc.Buffer(make([]byte, 0, 64<<10), 1<<20)
	var id, data string
	for sc.Scan() {
		timer.Reset(idle)
		line := sc.Text()
		switch {
		case strings.HasPrefix(line, "id:"):
			id = strings.TrimPrefix(strings.TrimPrefix(line, "id:"), " ")
		case strings.HasPrefix(line, "data:"):
			data = strings.TrimPrefix(strings.TrimPrefix(line, "data:"), " ")
		case line == "" && data != "":
			var ev StreamEvent
			if err := json.Unmarshal([]byte(data), &ev); err != nil {
				return delivered, fmt.Errorf("%w: event %q: %v", ErrBadResponse, truncate(data, 80), err)
			}
			if _, err := ParseStreamCursor(id); err != nil {
				return delivered, fmt.Errorf("%w: event id: %v", ErrBadResponse, err)
			}
			if !localFilter || s.Prefix.Match(ev.URL) {
				off := ev.Offset
				if err := s.Deliver(SubscribedEvent{Event: ev.Event, Day: ev.Day, Offset: &off}); err != nil {
					return delivered, deliverError{err} // the cursor stays before it
				}
				delivered = true
			}
			s.State.Stream = id
			if err := sv.changed(); err != nil {
				return delivered, err
			}
			id, data = "", ""
		case line == "":
			id, data = "", ""
		}
	}
	if err := sv.flush(); err != nil {
		return delivered, err
	}
	return delivered, cmp.Or(sc.Err(), errors.New("protocol: the stream ended"))
}

func truncate(s string, n int) string {
	if len(s) > n {
		return s[:n] + "..."
	}
	return s
}

// pull merges the peer's day files into Deliver every PullEvery, with the
// merge client: robots.shr, ranges, entity tags, limits and all.
func (s *Subscriber) pull(ctx context.Context, sv *saver, lg *slog.Logger) error {
	m := &Merger{Store: &pullStore{s: s, sv: sv}, Client: s.Client, Prefix: s.Prefix, BackDays: 2, Logger: lg}
	shr := strings.TrimRight(s.Base, "/") + "/robots.shr"
	for {
		rep, err := m.Merge(ctx, shr)
		var de deliverError
		if errors.As(err, &de) {
			return de
		}
		var se storeError
		if errors.As(err, &se) {
			if errors.As(se.err, &de) {
				return de
			}
		}
		if err != nil && ctx.Err() == nil {
			lg.Warn("subscribe: pull failed", "peer", shr, "err", err)
		} else if rep != nil {
			lg.Debug("subscribe: pulled", "peer", shr, "records", rep.Records, "bytes", rep.WireBytes)
		}
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-time.After(cmp.Or(s.PullEvery, 30*time.Second)):
		}
	}
}

// pullStore is the merge client's store for a subscriber: every record is
// delivered, and the cursor is the subscription's.
type pullStore struct {
	s  *Subscriber
	sv *saver
}

func (p *pullStore) Cursor(peer string) (webevents.Cursor, bool, error) {
	if c := p.s.State.Pull; c != nil && c.Peer == peer {
		return *c, true, nil
	}
	return webevents.Cursor{}, false, nil
}

func (p *pullStore) Merge(events []webevents.Event, c *webevents.Cursor) (webevents.MergeResult, error) {
	for _, e := range events {
		if err := p.s.Deliver(SubscribedEvent{Event: e, Day: e.Day()}); err != nil {
			return webevents.MergeResult{}, deliverError{err} // the cursor stays before the batch
		}
	}
	if c != nil {
		cc := *c
		cc.Marks = append([]webevents.DayMark(nil), c.Marks...)
		p.s.State.Pull = &cc
		if err := p.sv.changed(); err != nil {
			return webevents.MergeResult{}, err
		}
	}
	return webevents.MergeResult{Accepted: len(events)}, nil
}
