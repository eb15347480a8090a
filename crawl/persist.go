package crawl

import (
	"encoding/json"
	"fmt"
	"sync"

	"github.com/cocrawl/cocrawl/webevents"
)

// FrontierStore persists the frontier so a restarted crawler resumes.
type FrontierStore interface {
	// LoadFrontier calls fn with every stored URL state.
	LoadFrontier(fn func(URLState) error) error
	// SaveFrontier writes the given states, replacing older ones.
	SaveFrontier(states []URLState) error
}

// keyValues is what a stored frontier needs of a table in the peer's store
// (a *webevents.Table): it reaches only the frontier's own keys.
type keyValues interface {
	Each(fn func(key string, value []byte) error) error
	Put(entries ...webevents.Entry) error
}

// StoredFrontier keeps the frontier in a table of key values, one JSON
// entry per URL.
type StoredFrontier struct{ Table keyValues }

func (f StoredFrontier) LoadFrontier(fn func(URLState) error) error {
	return f.Table.Each(func(key string, v []byte) error {
		var s URLState
		if err := json.Unmarshal(v, &s); err != nil {
			return fmt.Errorf("crawl: frontier entry %q: %w", key, err)
		}
		return fn(s)
	})
}

func (f StoredFrontier) SaveFrontier(states []URLState) error {
	entries := make([]webevents.Entry, len(states))
	for i := range states {
		v, err := json.Marshal(&states[i])
		if err != nil {
			return err
		}
		entries[i] = webevents.Entry{Key: states[i].URL, Value: v}
	}
	if len(entries) == 0 {
		return nil
	}
	return f.Table.Put(entries...)
}

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
