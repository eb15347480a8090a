package webevents

import (
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
	for _, f := range k.filters {
		if f.TestString(u) {
			return true
		}
	}
	return false
}

// loadKnownURLs fills the filters from the store's current states, keys
// only.
func loadKnownURLs(db *badger.DB) (*knownURLs, error) {
	k := newKnownURLs()
	err := db.View(func(txn *badger.Txn) error {
		it := txn.NewIterator(badger.IteratorOptions{Prefix: prefixURL})
		defer it.Close()
		for it.Rewind(); it.Valid(); it.Next() {
			k.addNew(it.Item().Key()[len(prefixURL):])
		}
		return nil
	})
	return k, err
}
