package crawl

import (
	"cmp"
	"errors"
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
	// SaveFrontier writes the given states, replacing older ones, then
	// deletes the backlog or parked entries a take left of them
	// (URLState.left), if the store keeps them.
	SaveFrontier(states []URLState) error
	// DeleteFrontier removes the states of urls.
	DeleteFrontier(urls []string) error
}

// StoredFrontier keeps the frontier in a table of the peer's store (a
// *webevents.Table, which reaches only the frontier's keys), one entry per
// URL (statecodec.go); and, with Backlog set, the first visits beyond each host's head
// in a table of their own (backlog.go); and, with Revisits set, the
// revisits beyond each host's head in another (parking.go). A crawler
// with both keeps only the heads in memory.
type StoredFrontier struct {
	Table    webevents.KeyValues
	Backlog  BacklogTable
	Revisits ParkTable
}

// tableEstimator is a FrontierStore that can say, before a load, about
// how many keys its parked and backlog tables hold.
type tableEstimator interface{ estimateKeys() (parked, spilled int) }

// keyEstimator is a table that can say so (webevents.Table.EstimateKeys).
type keyEstimator interface{ EstimateKeys() int }

func (f StoredFrontier) estimateKeys() (parked, spilled int) {
	if t, ok := f.Revisits.(keyEstimator); ok {
		parked = t.EstimateKeys()
	}
	if t, ok := f.Backlog.(keyEstimator); ok {
		spilled = t.EstimateKeys()
	}
	return parked, spilled
}

func (f StoredFrontier) LoadFrontier(fn func(URLState) error) error {
	return f.Table.Each(func(key string, v []byte) error {
		s, err := decodeState(key, v)
		if err != nil {
			return err
		}
		return fn(s)
	})
}

func (f StoredFrontier) SaveFrontier(states []URLState) error {
	entries := make([]webevents.Entry, len(states))
	for i := range states {
		entries[i] = webevents.Entry{Key: states[i].URL, Value: appendState(nil, &states[i])}
	}
	if err := f.Table.Put(entries...); err != nil {
		return err
	}
	return f.deleteLeftEntries(func(yield func(*URLState) bool) {
		for i := range states {
			if !yield(&states[i]) {
				return
			}
		}
	})
}

func (f StoredFrontier) DeleteFrontier(urls []string) error { return f.Table.Delete(urls...) }

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

func (m *MemFrontier) DeleteFrontier(urls []string) error {
	m.mu.Lock()
	defer m.mu.Unlock()
	for _, u := range urls {
		delete(m.m, u)
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

// persistQueue hands events and frontier states to the persister without
// ever blocking: the crawler queues states while it holds its lock, and a
// store that stalls (a full disk) must not stall that lock, and with it
// the API and Ctrl-C. Poll sends no request while the events queued pass
// maxBacklog, so what waits stays bounded.
type persistQueue struct {
	mu     sync.Mutex
	events []webevents.Event
	states map[string]URLState
	// latest is each URL's last event queued or being written: the
	// crawler's view of its own state until the store has it, so a URL
	// polled again that soon is compared with what it saw last.
	latest map[string]webevents.Event
	closed bool
	notify chan struct{}
}

func newPersistQueue() *persistQueue {
	return &persistQueue{states: map[string]URLState{}, latest: map[string]webevents.Event{}, notify: make(chan struct{}, 1)}
}

func (q *persistQueue) wake() {
	select {
	case q.notify <- struct{}{}:
	default:
	}
}

func (q *persistQueue) addEvent(e webevents.Event) {
	q.mu.Lock()
	q.events = append(q.events, e)
	q.latest[e.URL] = e
	n := len(q.events) + len(q.states)
	q.mu.Unlock()
	if n >= 512 {
		q.wake()
	}
}

func (q *persistQueue) addState(st URLState) {
	q.mu.Lock()
	if older, ok := q.states[st.URL]; ok {
		st.keepLeftEntry(&older)
	}
	q.states[st.URL] = st
	n := len(q.events) + len(q.states)
	q.mu.Unlock()
	if n >= 512 {
		q.wake()
	}
}

// dropState unqueues the state of url not yet taken for writing (one a
// parked entry now holds), and returns it.
func (q *persistQueue) dropState(url string) (URLState, bool) {
	q.mu.Lock()
	defer q.mu.Unlock()
	st, ok := q.states[url]
	delete(q.states, url)
	return st, ok
}

// putBack queues again what a failed write held, before what came since;
// a state queued since is newer and wins.
func (q *persistQueue) putBack(events []webevents.Event, states map[string]URLState) {
	q.mu.Lock()
	defer q.mu.Unlock()
	q.events = append(events, q.events...)
	for u, st := range states {
		if newer, ok := q.states[u]; !ok {
			q.states[u] = st
		} else {
			newer.keepLeftEntry(&st)
			q.states[u] = newer
		}
	}
}

// pending returns the URL's last event not yet in the store.
func (q *persistQueue) pending(url string) (webevents.Event, bool) {
	q.mu.Lock()
	defer q.mu.Unlock()
	e, ok := q.latest[url]
	return e, ok
}

// written forgets events the store now has (or refused): a URL's later
// event, queued since, stays.
func (q *persistQueue) written(events []webevents.Event) {
	q.mu.Lock()
	defer q.mu.Unlock()
	for _, e := range events {
		if q.latest[e.URL] == e {
			delete(q.latest, e.URL)
		}
	}
}

// backlog is how many events wait for the store.
func (q *persistQueue) backlog() int {
	q.mu.Lock()
	defer q.mu.Unlock()
	return len(q.events)
}

// take returns what is queued, and whether the queue is closed.
func (q *persistQueue) take() ([]webevents.Event, map[string]URLState, bool) {
	q.mu.Lock()
	defer q.mu.Unlock()
	events, states := q.events, q.states
	q.events, q.states = nil, map[string]URLState{}
	return events, states, q.closed
}

func (q *persistQueue) close() {
	q.mu.Lock()
	q.closed = true
	q.mu.Unlock()
	q.wake()
}

// save queues a copy of st for the persister; c.mu held. The copy's
// write stores the URL's frontier state and deletes its backlog entry, if
// it had one, so the state in memory no longer has one.
func (c *Crawler) save(st *URLState) {
	c.queue.addState(*st)
	st.left, st.noTable = leftNowhere, false
}

// persister writes events and frontier states in batches: every 100 ms or
// 512 items, and once more when the crawler stops.
func (c *Crawler) persister() error {
	flush := func(events []webevents.Event, states map[string]URLState) {
		all := slices.Clone(events) // DeleteFunc below clears what it drops
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
		// A failed write (a full disk) keeps what it held queued, to be
		// written again: Poll pauses while the backlog is long, so nothing
		// polled is lost unless the process stops first.
		if len(events) > 0 {
			if err := c.store.Record(events); err != nil {
				c.queue.putBack(events, nil)
				c.storeFailed(fmt.Errorf("crawl: record events: %w", err))
				return
			}
		}
		c.queue.written(all)
		if len(states) > 0 {
			batch := make([]URLState, 0, len(states))
			for _, s := range states {
				batch = append(batch, s)
			}
			if err := c.fstore.SaveFrontier(batch); err != nil {
				c.queue.putBack(nil, states)
				c.storeFailed(fmt.Errorf("crawl: save frontier: %w", err))
				return
			}
		}
		if len(all)+len(states) > 0 {
			c.persisted.Add(1)
		}
		c.storeOK()
	}
	tick := time.NewTicker(100 * time.Millisecond)
	defer tick.Stop()
	for {
		select {
		case <-c.queue.notify:
		case <-tick.C:
		}
		events, states, closed := c.queue.take()
		flush(events, states)
		c.flushBacklog()
		c.flushParked()
		if closed {
			if events, states, _ := c.queue.take(); len(events)+len(states) > 0 {
				flush(events, states)
			}
			c.flushBacklog()
			c.flushParked()
			if n := c.queue.backlog(); n > 0 {
				return fmt.Errorf("crawl: %d events not stored: %w", n, cmp.Or(c.StoreError(), errors.New("the store took no writes")))
			}
			return nil
		}
	}
}

// flushBacklog writes the first visits spilled since the last time.
func (c *Crawler) flushBacklog() {
	if c.f.spill == nil {
		return
	}
	if err := c.f.spill.flush(); err != nil {
		c.storeFailed(fmt.Errorf("crawl: backlog: %w", err))
	}
}

// flushParked writes the revisits parked since the last time, after the
// states saved before them (so a state queued before its URL was parked
// does not come back to the frontier's table after it left).
func (c *Crawler) flushParked() {
	if c.f.park == nil {
		return
	}
	if err := c.f.park.flush(); err != nil {
		c.storeFailed(fmt.Errorf("crawl: parked revisits: %w", err))
	}
}

// storeFailed notes a failed write: logged when a run of failures starts,
// counted as the "store" error kind every time.
func (c *Crawler) storeFailed(err error) {
	c.errMu.Lock()
	first := c.storeErr == nil
	c.storeErr = err
	c.errs["store"]++
	c.errMu.Unlock()
	if first {
		c.cfg.Logger.Error("the store refuses writes; polling pauses once the backlog is full", "err", err)
	}
}

func (c *Crawler) storeOK() {
	c.errMu.Lock()
	recovered := c.storeErr != nil
	c.storeErr = nil
	c.errMu.Unlock()
	if recovered {
		c.cfg.Logger.Info("the store takes writes again")
	}
}

// StoreError is the error of the store's last failed write while writes
// still fail (a full disk), nil once one succeeds.
func (c *Crawler) StoreError() error {
	c.errMu.Lock()
	defer c.errMu.Unlock()
	return c.storeErr
}
