package webevents

import "sync"

// appendSignal wakes those waiting for records to be appended, such as a
// share server's live streams: they wait on the channel Appended returns,
// which the next append closes, and read the store again.
type appendSignal struct {
	mu sync.Mutex
	ch chan struct{}
}

func (a *appendSignal) wait() <-chan struct{} {
	a.mu.Lock()
	defer a.mu.Unlock()
	if a.ch == nil {
		a.ch = make(chan struct{})
	}
	return a.ch
}

func (a *appendSignal) signal() {
	a.mu.Lock()
	defer a.mu.Unlock()
	if a.ch != nil {
		close(a.ch)
		a.ch = nil
	}
}

// Appended returns a channel closed when records are next appended to a
// day log (committed and readable).
func (s *BadgerStore) Appended() <-chan struct{} { return s.appended.wait() }

// Appended returns a channel closed when records are next appended.
func (s *MemStore) Appended() <-chan struct{} { return s.appended.wait() }
