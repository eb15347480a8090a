package webevents

import (
	"context"
	"log/slog"
	"time"

	"github.com/bits-and-blooms/bloom/v3"
	"github.com/dgraph-io/badger/v4"
)

// knownURLs answers "may the store hold a current state for this URL?"
// with no false negatives, so a merge skips the Badger read of a URL the
// store has never held. In a first merge from a peer that is most of its
// URLs, and a point read is about a third of a merge's work. The filters
// are Bloom filters (github.com/bits-and-blooms/bloom); one cannot grow,
// so a full one is kept and a new one twice its size is added: about 12
// bits per URL, 1.5 MB per million.
type knownURLs struct {
	filters []*bloom.BloomFilter
	size    uint // URLs the last filter was made for
	room    uint // adds left in the last filter
	// While a store's filters fill in the background (loadKnownInBackground)
	// every URL may be held, and what is added goes to pending's filters,
	// which join the loaded ones (a large merge during the load costs
	// bits, not strings). A load that failed leaves every URL held for
	// good (unavailable): a merge reads each URL, as it would without
	// filters.
	loading, unavailable bool
	pending              *knownURLs
}

// knownFalsePositives is each filter's rate of false "may hold": a wasted
// read, nothing worse.
const knownFalsePositives = 0.005

func newKnownURLs() *knownURLs {
	k := &knownURLs{}
	k.grow(1 << 16)
	return k
}

func (k *knownURLs) grow(n uint) {
	k.filters = append(k.filters, bloom.NewWithEstimates(n, knownFalsePositives))
	k.size, k.room = n, n
}

// add records that the store holds (or is about to hold) a state of u.
// A URL that may be held already is not added again: every write of a
// known URL would otherwise use up room, and the filters would grow with
// the writes of months rather than with the URLs.
func (k *knownURLs) add(u string) {
	if k.loading {
		if !k.unavailable {
			k.pending.add(u)
		}
		return
	}
	if k.mayHold(u) {
		return
	}
	if k.room == 0 {
		k.grow(2 * k.size)
	}
	k.filters[len(k.filters)-1].AddString(u)
	k.room--
}

// addNew adds a URL known not to be in the filters: a load's, whose keys
// are unique. It skips add's test, which at ten million URLs took half of
// the load's time (every filter of the chain is tested).
func (k *knownURLs) addNew(u []byte) {
	if k.room == 0 {
		k.grow(2 * k.size)
	}
	k.filters[len(k.filters)-1].Add(u)
	k.room--
}

// mayHold is false only for a URL never added.
func (k *knownURLs) mayHold(u string) bool {
	if k.loading {
		return true
	}
	// The URL's hash locations are computed once for the whole chain, not
	// once per filter (Test hashes the URL again each time): at 15 million
	// URLs the chain is eight filters, and a URL never recorded is tested
	// against each. They depend on the filters' k only, which their one
	// false-positive rate sets. The newest filter, the largest, is tested
	// first: it holds up to half of the URLs.
	var locs []uint64
	for i := len(k.filters) - 1; i >= 0; i-- {
		f := k.filters[i]
		if uint(len(locs)) != f.K() {
			locs = bloom.Locations([]byte(u), f.K())
		}
		if f.TestLocations(locs) {
			return true
		}
	}
	return false
}

// mayHold is false only for a URL the store has never held a state of.
func (s *BadgerStore) mayHold(u string) bool {
	s.knownMu.RLock()
	defer s.knownMu.RUnlock()
	return s.known.mayHold(u)
}

// loadingKnownURLs is a store's filter while its load runs.
func loadingKnownURLs() *knownURLs { return &knownURLs{loading: true, pending: newKnownURLs()} }

// loadKnownURLs fills filters from the current states that txn reads,
// keys only, until ctx ends.
func loadKnownURLs(ctx context.Context, txn *badger.Txn) (*knownURLs, error) {
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	k := newKnownURLs()
	it := txn.NewIterator(badger.IteratorOptions{Prefix: prefixURL})
	defer it.Close()
	n := 0
	for it.Rewind(); it.Valid(); it.Next() {
		if n++; n%4096 == 0 && ctx.Err() != nil {
			return nil, ctx.Err()
		}
		k.addNew(it.Item().Key()[len(prefixURL):])
	}
	return k, nil
}

// loadKnownInBackground fills the store's filter of known URLs while the
// store is in use: at 13 million URLs the load took 3.4 s of CPU, and
// nothing but a merge's choice of what to read waits for it. The
// load reads a snapshot opened before Open returns, so every URL written
// later reaches the filters through pending. done is closed when it ends.
func (s *BadgerStore) loadKnownInBackground(ctx context.Context, lg *slog.Logger, done chan<- struct{}) {
	s.known = loadingKnownURLs()
	txn := s.db.NewTransaction(false)
	go func() {
		defer close(done)
		defer txn.Discard()
		start := time.Now()
		loaded, err := loadKnownURLs(ctx, txn)
		s.knownMu.Lock()
		defer s.knownMu.Unlock()
		if err != nil {
			s.known.unavailable, s.known.pending = true, nil
			if ctx.Err() == nil {
				lg.Warn("the filter of known URLs did not load: every merge reads each URL's state", "err", err)
			}
			return
		}
		// The last filter takes the adds from now on: the loaded one,
		// sized for the store.
		loaded.filters = append(s.known.pending.filters, loaded.filters...)
		s.known = loaded
		lg.Debug("the filter of known URLs loaded", "took", time.Since(start), "filters", len(loaded.filters))
	}()
}
