package crawl

import (
	"encoding/json"
	"fmt"
	"sync"

	"github.com/dgraph-io/badger/v4"
)

// FrontierStore persists the frontier so a restarted crawler resumes.
type FrontierStore interface {
	// LoadFrontier calls fn with every stored URL state.
	LoadFrontier(fn func(URLState) error) error
	// SaveFrontier writes the given states, replacing older ones.
	SaveFrontier(states []URLState) error
}

// prefixFrontier is the key prefix of frontier entries in a peer's Badger
// database, beside the webevents keys (u/, e/, d/, c/, m/).
var prefixFrontier = []byte("f/")

// BadgerFrontier keeps the frontier in a Badger database, one key per URL.
type BadgerFrontier struct{ DB *badger.DB }

func (b BadgerFrontier) LoadFrontier(fn func(URLState) error) error {
	return b.DB.View(func(txn *badger.Txn) error {
		it := txn.NewIterator(badger.IteratorOptions{Prefix: prefixFrontier, PrefetchValues: true, PrefetchSize: 256})
		defer it.Close()
		for it.Rewind(); it.Valid(); it.Next() {
			var s URLState
			if err := it.Item().Value(func(v []byte) error { return json.Unmarshal(v, &s) }); err != nil {
				return fmt.Errorf("crawl: frontier entry %q: %w", it.Item().Key(), err)
			}
			if err := fn(s); err != nil {
				return err
			}
		}
		return nil
	})
}

func (b BadgerFrontier) SaveFrontier(states []URLState) error {
	wb := b.DB.NewWriteBatch()
	defer wb.Cancel()
	for i := range states {
		v, err := json.Marshal(&states[i])
		if err != nil {
			return err
		}
		if err := wb.Set(append(append([]byte{}, prefixFrontier...), states[i].URL...), v); err != nil {
			return err
		}
	}
	return wb.Flush()
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
