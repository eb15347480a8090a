package webevents

import (
	"encoding/json"
	"errors"
	"fmt"
	"sync"

	"github.com/dgraph-io/badger/v4"
)

// mergePart is how many events of a Merge are resolved per transaction:
// while one part commits (Badger writes on its own goroutine), the current
// states of the next part are read, so the two overlap.
const mergePart = 1024

func (s *BadgerStore) Merge(events []Event, c *Cursor) (MergeResult, error) {
	if err := validateParallel(events); err != nil {
		return MergeResult{}, err
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if err := s.space.check(); err != nil {
		return MergeResult{}, err
	}
	// Every read of this call is made at the state before it: the
	// resolver's pending map holds every state this call has written and is
	// consulted first, and Badger would make a read opened later wait for
	// this call's commits in flight.
	var readers [2]*badger.Txn
	for i := range readers {
		readers[i] = s.db.NewTransaction(false)
		defer readers[i].Discard()
	}
	w := s.newWriter()
	defer func() { w.txn.Discard() }()
	committed := false
	defer func() { s.infos.keep(w, committed); s.index.wrote(w) }()
	var commits commitGroup
	known := prefetch(readers, s.mayHold, events[:min(len(events), mergePart)])
	if known.err != nil {
		return MergeResult{}, fmt.Errorf("webevents: merge: %w", known.err)
	}
	at := 0 // the index in known of the event being resolved
	r := newResolver(func(string) (Event, bool, error) {
		return known.states[at], known.have[at], nil
	}, c)
	fail := func(err error) (MergeResult, error) {
		commits.wait()
		return r.result, fmt.Errorf("webevents: merge: %w", err)
	}
	for lo := 0; lo < len(events); lo += mergePart {
		part := events[lo:min(len(events), lo+mergePart)]
		var next chan prefetched
		if rest := events[lo+len(part):]; len(rest) > 0 {
			next = make(chan prefetched, 1)
			go func() { next <- prefetch(readers, s.mayHold, rest[:min(len(rest), mergePart)]) }()
		}
		if err := resolvePart(w, r, &commits, part, &at); err != nil {
			<-orClosed(next)
			return fail(err)
		}
		if next == nil {
			break
		}
		if err := w.commitAsync(&commits); err != nil {
			<-next
			return fail(err)
		}
		known = <-next
		if known.err != nil {
			return fail(known.err)
		}
	}
	if c != nil {
		v, err := json.Marshal(c)
		if err != nil {
			return fail(err)
		}
		if err := w.set(cursorKey(c.Peer), v); err != nil {
			return fail(fmt.Errorf("cursor: %w", err))
		}
	}
	// The last part commits after every earlier one: Badger applies
	// commits in the order they were sent, so the cursor is never durable
	// before the events it covers.
	if err := w.commit(false); err != nil {
		return fail(err)
	}
	if err := commits.wait(); err != nil {
		return r.result, fmt.Errorf("webevents: merge: %w", err)
	}
	committed = true
	if r.result.Accepted > 0 {
		s.appended.signal()
	}
	return r.result, nil
}

// resolvePart resolves one part's events in order and writes what they
// decide, committing (without waiting) whenever the transaction is full;
// *at is the event's index in the part, for the resolver's reads of the
// part's prefetched states. The next part's prefetch may be running
// meanwhile: its URLs are learnt when it is done, before anything reads
// again.
func resolvePart(w *writer, r *resolver, commits *commitGroup, part []Event, at *int) error {
	for i, in := range part {
		if w.full() {
			if err := w.commitAsync(commits); err != nil {
				return err
			}
		}
		*at = i
		d, err := r.resolve(in)
		if err != nil {
			return err
		}
		switch d.Action {
		case Accept:
			err = w.appendLog(&d.Result)
		case Restate:
			err = w.current(&d.Result)
		}
		if err != nil {
			return err
		}
	}
	return nil
}

// prefetched is the current state of each event's URL before the merge,
// in the order of the events.
type prefetched struct {
	states []Event
	have   []bool
	err    error
}

// orClosed lets a failing merge wait for a prefetch it started, or for
// nothing when it started none.
func orClosed(c chan prefetched) <-chan prefetched {
	if c == nil {
		closed := make(chan prefetched)
		close(closed)
		return closed
	}
	return c
}

// commitGroup waits for asynchronous commits and keeps the first error.
type commitGroup struct {
	wg  sync.WaitGroup
	mu  sync.Mutex
	err error
}

func (g *commitGroup) wait() error {
	g.wg.Wait()
	g.mu.Lock()
	defer g.mu.Unlock()
	return g.err
}

// validateParallel is validate on two goroutines: URL parsing is a
// noticeable share of a merge.
func validateParallel(events []Event) error {
	if len(events) < 2*mergePart {
		return validate(events)
	}
	half := len(events) / 2
	var err error
	done := make(chan struct{})
	go func() {
		defer close(done)
		err = validate(events[half:])
	}()
	first := validate(events[:half])
	<-done
	if first != nil {
		return first
	}
	return err
}

// prefetch reads the current state of every URL in events, in the order
// of events, on two goroutines with the readers' transactions: point reads
// are most of a merge's cost and they parallelise, while the writes after
// them cannot.
func prefetch(readers [2]*badger.Txn, mayHold func(string) bool, events []Event) prefetched {
	p := prefetched{states: make([]Event, len(events)), have: make([]bool, len(events))}
	var errs [len(readers)]error
	var wg sync.WaitGroup
	for w, txn := range readers {
		wg.Go(func() {
			for i := w; i < len(events); i += len(readers) {
				if !mayHold(events[i].URL) {
					continue // never held: no read needed
				}
				e, ok, err := getEvent(txn, events[i].URL)
				if err != nil {
					errs[w] = err
					return
				}
				p.states[i], p.have[i] = e, ok
			}
		})
	}
	wg.Wait()
	p.err = errors.Join(errs[:]...)
	return p
}
