package crawl

import (
	"fmt"
	"slices"
	"sync"
	"time"

	"github.com/cocrawl/cocrawl/webevents"
)

// FrontierStore persists the frontier so a restarted crawler resumes.
type FrontierStore interface {
	// LoadFrontier calls fn with every stored URL state.
	LoadFrontier(fn func(URLState) error) error
	// SaveFrontier writes the given states, replacing older ones.
	SaveFrontier(states []URLState) error
}

// StoredFrontier keeps the frontier in a table of the peer's store (a
// *webevents.Table, which reaches only the frontier's keys), one JSON entry
// per URL.
type StoredFrontier struct{ Table webevents.KeyValues }

func (f StoredFrontier) json() webevents.JSONTable[URLState] {
	return webevents.JSONTable[URLState]{KV: f.Table, Key: func(s *URLState) string { return s.URL }}
}

func (f StoredFrontier) LoadFrontier(fn func(URLState) error) error { return f.json().Each(fn) }

func (f StoredFrontier) SaveFrontier(states []URLState) error { return f.json().Put(states...) }

// MemFrontier is a FrontierStore in memory, for tests.
type MemFrontier struct {
	mu sync.Mutex
	m  map[string]URLState
}

func (m *MemFrontier) LoadFrontier(fn func(URLState) error) error {
	m.mu.Lock()
	all := make([]URLState, 0, len(m.m))
	for _, s := range m.m {
		all = append(all, s)
	}
	m.mu.Unlock()
	for _, s := range all {
		if err := fn(s); err != nil {
			return err
		}
	}
	return nil
}

func (m *MemFrontier) SaveFrontier(states []URLState) error {
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.m == nil {
		m.m = map[string]URLState{}
	}
	for _, s := range states {
		m.m[s.URL] = s
	}
	return nil
}

type persistItem struct {
	event *webevents.Event
	state *URLState
}

// save queues a copy of st for the persister; c.mu held.
func (c *Crawler) save(st *URLState) {
	cp := *st
	c.persist <- persistItem{state: &cp}
}

// persister writes events and frontier states in batches: every 100 ms or
// 512 items, and once more when the crawler stops.
func (c *Crawler) persister() error {
	var events []webevents.Event
	states := map[string]URLState{}
	var firstErr error
	flush := func() {
		// Each event on its own: one the store would refuse must not take
		// the others of its batch down with it (the crawler checks them
		// before queueing; this is the second line).
		events = slices.DeleteFunc(events, func(e webevents.Event) bool {
			if err := e.Validate(); err != nil {
				c.cfg.Logger.Warn("event refused", "url", e.URL, "err", err)
				c.errMu.Lock()
				c.errs["refused"]++
				c.errMu.Unlock()
				return true
			}
			return false
		})
		if len(events) > 0 {
			if err := c.store.Record(events); err != nil && firstErr == nil {
				firstErr = fmt.Errorf("crawl: record events: %w", err)
			}
			events = events[:0]
		}
		if len(states) > 0 {
			batch := make([]URLState, 0, len(states))
			for _, s := range states {
				batch = append(batch, s)
			}
			if err := c.fstore.SaveFrontier(batch); err != nil && firstErr == nil {
				firstErr = fmt.Errorf("crawl: save frontier: %w", err)
			}
			clear(states)
		}
	}
	tick := time.NewTicker(100 * time.Millisecond)
	defer tick.Stop()
	for {
		select {
		case it, ok := <-c.persist:
			if !ok {
				flush()
				return firstErr
			}
			if it.event != nil {
				events = append(events, *it.event)
			}
			if it.state != nil {
				states[it.state.URL] = *it.state
			}
			if len(events)+len(states) >= 512 {
				flush()
			}
		case <-tick.C:
			flush()
		}
	}
}
