package crawl

import (
	"errors"
	"math/bits"
	"slices"
	"sync"
	"sync/atomic"
	"time"

	"github.com/cespare/xxhash/v2"

	"github.com/cocrawl/cocrawl/internal/fpmap"
)

// The backlog keeps on disk the first visits a frontier cannot afford to
// keep in memory. A crawl finds URLs faster than it polls them (each page
// links to several new ones), so on a large web most known URLs are ones
// never polled; each costs some 350 bytes of Go heap as a URLState. With a
// backlog, a host keeps at most Config.FirstVisitsInMemory of them
// resident (its "head", ordered exactly as today); the others wait in the
// store, in the order of their rank, and come back a batch at a time when
// the head runs low (Mercator's back queues, kept on disk with a small
// buffer in memory). What stays in memory per spilled URL is an entry of
// ranked: its 8-byte fingerprint, the URL-seen test (Mercator's), and its
// backlinks so far, from which its rank follows.
//
// Two things differ from a URL kept in memory. The rank of a spilled URL
// is the power-of-two class of its backlinks (or its depth, breadth-first),
// not the exact count, and URLs of one class come back in fingerprint
// order, not by due time and depth. And a URL whose 64-bit fingerprint
// equals a spilled one's is taken as known: about one pair in 3,700 at
// 100 million spilled URLs.

// SpilledURL is a first visit kept on disk: where it is (Host, Rank, FP)
// and what its URLState needs back.
type SpilledURL struct {
	Host     string // hostKey of URL
	Rank     uint16 // lower comes back first
	FP       uint64 // fingerprint of URL
	URL      string
	Depth    int
	Due      time.Time
	Interval time.Duration
	// Links is the URL's backlinks, which the frontier keeps in memory
	// (the store keeps only their class, in Rank).
	Links uint32
	// ValueRank is the rank the URL's value is stored at, when a read
	// found it through moves (BacklogMove): Rank to ValueRank is the range
	// of ranks its entries are at. 0 when it did not move.
	ValueRank uint16
	// Held says that the URL's last move was not written (backlog.held):
	// no entry is at Rank, and its entries run from HeldFrom (the rank
	// the move was from) to ValueRank.
	Held     bool
	HeldFrom uint16
}

// entryRanks is the range of ranks s's entries are at, lowest first.
func (s SpilledURL) entryRanks() (lo, hi uint16) {
	if s.Held {
		return min(s.HeldFrom, s.ValueRank), max(s.HeldFrom, s.ValueRank)
	}
	if s.ValueRank == 0 {
		return s.Rank, s.Rank
	}
	return min(s.Rank, s.ValueRank), max(s.Rank, s.ValueRank)
}

// BacklogMove moves a spilled URL to rank To. A move writes there a
// pointer to rank From (moveValue), and reads and deletes nothing: a
// URL's value stays where it was spilled, and a read follows the pointer
// to it. From is the value's rank where the frontier knows it (rankedAt),
// so one read leads to it; after a restart, the rank the URL had before,
// whose pointer leads on. A move was a read, a deletion and a write of
// the whole value before, and a crawl makes about one a poll.
type BacklogMove struct {
	Host     string
	FP       uint64
	From, To uint16
}

// BacklogFrom is where a take of a host's stored backlog starts, in key
// order: no spilled URL of the host is stored before it.
type BacklogFrom struct {
	Rank uint16
	FP   uint64
}

func (a BacklogFrom) less(b BacklogFrom) bool {
	return a.Rank < b.Rank || a.Rank == b.Rank && a.FP < b.FP
}

// BacklogStore keeps a frontier's spilled first visits. A FrontierStore
// that is also a BacklogStore (StoredFrontier) gets a crawler that keeps
// only a head of each host's first visits in memory.
type BacklogStore interface {
	// WriteBacklog writes the URLs spilled, then the moves' pointers
	// (BacklogMove).
	WriteBacklog(spilled []SpilledURL, moves []BacklogMove) error
	// ReadBacklog returns up to n of the host's spilled URLs still
	// waiting, lowest rank first from from on (the zero BacklogFrom: the
	// first), and leaves them stored: a URL's entries go when its next
	// place is written (URLState.left; SaveFrontier and WriteParked
	// delete them). waiting says, by a key's rank and fingerprint, which
	// entries still wait: not those of URLs being polled, nor those a move
	// left behind; their values are not read. Entries that do not decode,
	// and pointers that lead nowhere, are deleted.
	ReadBacklog(host string, from BacklogFrom, n int, waiting func(rank uint16, fp uint64) bool) ([]SpilledURL, error)
	// ReadMoved reads the values of moved URLs whose moves were not
	// written, each where From leads (Held set); a URL not found there is
	// left out.
	ReadMoved(host string, moves []BacklogMove) ([]SpilledURL, error)
	// TakeSpilled removes one spilled URL, storing it as a frontier state
	// (state gives it) before it leaves the backlog.
	TakeSpilled(host string, rank uint16, fp uint64, state func(SpilledURL) URLState) (SpilledURL, bool, error)
	// DropSpilled deletes the entries of these spilled URLs (those a
	// restart found stored elsewhere too).
	DropSpilled(spilled []SpilledURL) error
	// EachSpilled calls fn with where every spilled URL is, reading no
	// values: what a restart needs.
	EachSpilled(fn func(host string, rank uint16, fp uint64) error) error
}

// DefaultFirstVisitsInMemory is the head of first visits a host keeps in
// memory when the frontier has a backlog: about 20 KB per host
// (DefaultRevisitsInMemory says why so few).
const DefaultFirstVisitsInMemory = 64

// backlog is the frontier's side of the spilled first visits. ranked is
// read and written under the crawler's lock; the queued writes (spilled,
// and moves under movesMu) have locks of their own, so the persister can
// take them without that lock; io serialises the store's writes and
// reads, so a take sees every write queued before it.
type backlog struct {
	store   BacklogStore
	head    int
	breadth bool // ranked holds depths (breadth-first order), not backlinks
	// ranked holds every spilled URL: fingerprint -> backlinks and the
	// class of the rank its value is stored at (rankedAt), or its
	// depth, breadth-first.
	ranked *fpmap.Map[uint32]

	spilled *pendingWrites[SpilledURL]
	movesMu sync.Mutex
	moves   []BacklogMove // to be written (releaseHeld)
	// writes counts the store writes a flush made, each of at most
	// flushChunk entries: the crawler's stop waits while it grows.
	writes atomic.Uint64

	// held are the moves not written, by host, each host's lowest place
	// first (heldMoves), and heldN how many in all. A take reads a held
	// URL's value where it is (ReadMoved) and puts it in rank order with
	// what it read of the store. A move was a pointer written and, once its
	// URL was polled, deleted: 2.4 of the 8.5 keys a poll wrote at 1.9
	// million URLs, each a key for the compactions to carry to the last
	// level. Written past maxHeld (releaseLargest), for a hint (takeOne),
	// and when the crawler stops (a crash loses them: those URLs wait at
	// the rank they had). c.mu.
	held  map[string]*heldMoves
	heldN int
	// released says that held moves were written before the crawler
	// stopped (releaseHeld): a URL taken through a held move may have a
	// pointer at a rank between, so all are deleted (unwritten).
	released bool

	// from is where each host's next take starts. A take deletes the
	// front of the host's range, and Badger steps over each deleted key
	// there until a compaction drops it: a scan from the host's first key
	// spent most of its time on them (2% of a scale crawl's CPU at 15
	// million URLs). A take moves it to the last key taken, or to the
	// lowest of the host's URLs waiting to be written if below; a URL
	// spilled or moved below it lowers it. It skips most once a host finds
	// no new URLs: a new one falls at a random place in its rank (keys are
	// by fingerprint there) and lowers it again. A host not in it starts
	// at its first key, as after a restart. c.mu.
	from map[string]BacklogFrom

	// reading are the hosts a read ahead is reading (readAhead), and
	// flushedLow the lowest place a flush wrote to of each since its read
	// began: what the read may have missed. movesMu.
	reading    map[string]bool
	flushedLow map[string]BacklogFrom

	io sync.Mutex
}

func newBacklog(store BacklogStore, head int, breadth bool) *backlog {
	return &backlog{store: store, head: max(head, 1), breadth: breadth, ranked: fpmap.New[uint32](), from: map[string]BacklogFrom{},
		reading: map[string]bool{}, flushedLow: map[string]BacklogFrom{}, held: map[string]*heldMoves{},
		spilled: newPendingWrites(func(s *SpilledURL) (string, uint64) { return s.Host, s.FP })}
}

// urlFingerprint is the 64-bit fingerprint of a URL (xxhash: stable across
// runs and machines, which Go's maphash is not).
func urlFingerprint(u string) uint64 { return xxhash.Sum64String(u) }

// A value of ranked, by backlinks, packs the URL's backlinks (their low
// linkBits bits: they stop counting at 67 million) and one more than the
// class of the rank its value is stored at (0: not known, as after a
// restart). A move's pointer leads to the value at once (BacklogMove),
// not to the rank before, which pointed on: a read followed 8 µs of
// pointers a poll at 15 million URLs. Packed in the 32 bits the map held
// already: nothing added per URL.
const (
	linkBits  = 26
	linksMask = 1<<linkBits - 1
)

// links is the backlinks (or depth) a value of ranked holds.
func (b *backlog) links(v uint32) uint32 {
	if b.breadth {
		return v
	}
	return v & linksMask
}

// valueRank is the rank a URL's value is stored at, when ranked knows it.
func (b *backlog) valueRank(v uint32) (uint16, bool) {
	if b.breadth || v>>linkBits == 0 {
		return 0, false
	}
	return 0xffff - uint16(v>>linkBits-1), true
}

// rankedAt is the value of ranked for links backlinks and a value stored
// at rank.
func rankedAt(links uint32, rank uint16) uint32 {
	return min(links, linksMask) | (uint32(0xffff-rank)+1)<<linkBits
}

// rank orders spilled URLs: more backlinks first (by power-of-two class),
// or shallower first, breadth-first.
func (b *backlog) rank(v uint32) uint16 {
	if b.breadth {
		return uint16(min(v, 0xfffe))
	}
	return 0xffff - uint16(bits.Len32(v&linksMask))
}

// rankedValue is what a restart can know of a spilled URL from its rank:
// the least backlinks of its class, or its depth.
func (b *backlog) rankedValue(r uint16) uint32 {
	if b.breadth {
		return uint32(r)
	}
	switch c := 0xffff - uint32(r); {
	case c > linkBits:
		return linksMask // past what ranked counts: no URL has so many
	case c > 0:
		return 1 << (c - 1)
	}
	return 0
}

// waiting says whether the backlog entry of rank and fp is where a
// spilled URL waits: the fingerprint is spilled, and at that rank (one
// that moved left pointers at its ranks before). c.mu held.
func (b *backlog) waiting(rank uint16, fp uint64) bool {
	v, ok := b.ranked.Get(fp)
	return ok && b.rank(v) == rank
}

// has says whether u is spilled.
func (b *backlog) has(fp uint64) bool {
	return b.ranked.Has(fp)
}

// spill queues s for the store. c.mu held.
func (b *backlog) spill(host string, fp uint64, s *URLState) {
	v := uint32(min(s.Depth, 0xfffe))
	if !b.breadth {
		v = rankedAt(s.Links, b.rank(min(s.Links, linksMask)))
	}
	b.ranked.Set(fp, v)
	r := b.rank(v)
	b.lower(host, BacklogFrom{r, fp})
	b.spilled.push(SpilledURL{Host: host, Rank: r, FP: fp, URL: s.URL, Depth: s.Depth, Due: s.Due, Interval: s.Interval})
}

// lower makes the host's takes start at or before at. c.mu held.
func (b *backlog) lower(host string, at BacklogFrom) {
	if from, ok := b.from[host]; ok && at.less(from) {
		b.from[host] = at
	}
}

// linked counts a backlink of u, when it is spilled: one not yet written
// takes its new rank in the queue; a written one moves when its class
// changes. c.mu held.
func (b *backlog) linked(u string) {
	fp := urlFingerprint(u)
	v, ok := b.ranked.Get(fp)
	if !ok || b.breadth || v&linksMask == linksMask {
		return
	}
	b.ranked.Set(fp, v+1)
	from, to := b.rank(v), b.rank(v+1)
	if from == to {
		return
	}
	host := hostKey(u)
	b.lower(host, BacklogFrom{to, fp})
	if b.spilled.update(fp, func(s *SpilledURL) { s.Rank = to }) {
		b.ranked.Set(fp, rankedAt((v+1)&linksMask, to)) // its value goes to the new rank
		return
	}
	// Not queued, so written, or being written (a read of held moves
	// holds b.io, so it waits for the write). Its value's rank is kept from its
	// first move on, as a spill keeps it: after a restart, the rank the
	// restart found it at, which no held move of it has left.
	if at, ok := b.valueRank(v); ok {
		from = at
	} else {
		b.ranked.Set(fp, rankedAt((v+1)&linksMask, from))
	}
	b.hold(host, heldMove{fp: fp, from: from, to: to})
	if b.heldN > maxHeld {
		b.releaseLargest()
	}
}

// maxHeld bounds the held moves (16 bytes each): past it, those of the
// hosts that hold the most are written (a variable for tests).
var maxHeld = 1 << 21

// releaseLargest writes the held moves of the hosts that hold the most,
// until an eighth of maxHeld is written: a release checks each move
// under the crawler's lock, so not all at once. c.mu held.
func (b *backlog) releaseLargest() {
	for b.heldN > maxHeld-maxHeld/8 {
		largest, most := "", 0
		for host, h := range b.held {
			if len(*h) > most {
				largest, most = host, len(*h)
			}
		}
		if most == 0 {
			return
		}
		b.releaseHeld(largest)
	}
}

// heldMove is a move not written (BacklogMove, its host the key of held).
type heldMove struct {
	fp       uint64
	from, to uint16
}

func (m heldMove) less(o heldMove) bool { return m.to < o.to || m.to == o.to && m.fp < o.fp }

// heldMoves is a host's held moves, a binary heap by rank and fingerprint:
// a take needs the lowest few of up to thousands. By hand rather than
// with container/heap, whose Push and Pop box each 16-byte move in an
// interface: an allocation a move, about one a poll.
type heldMoves []heldMove

func (h *heldMoves) push(m heldMove) {
	*h = append(*h, m)
	s := *h
	for i := len(s) - 1; i > 0; {
		p := (i - 1) / 2
		if !s[i].less(s[p]) {
			break
		}
		s[i], s[p] = s[p], s[i]
		i = p
	}
}

func (h *heldMoves) pop() heldMove {
	s := *h
	top := s[0]
	last := len(s) - 1
	s[0] = s[last]
	s = s[:last]
	for i := 0; ; {
		l, least := 2*i+1, i
		if l < len(s) && s[l].less(s[least]) {
			least = l
		}
		if r := l + 1; r < len(s) && s[r].less(s[least]) {
			least = r
		}
		if least == i {
			break
		}
		s[i], s[least] = s[least], s[i]
		i = least
	}
	*h = s
	return top
}

// hold keeps a move of the host's unwritten. c.mu held.
func (b *backlog) hold(host string, m heldMove) {
	h := b.held[host]
	if h == nil {
		h = &heldMoves{}
		b.held[host] = h
	}
	h.push(m)
	b.heldN++
}

// popHeld takes up to n of the host's held moves whose URLs still wait
// where they moved to, lowest first, and below bound if given; the others
// (moved again since, or taken) are dropped. c.mu held.
func (b *backlog) popHeld(host string, n int, bound *BacklogFrom) []BacklogMove {
	h := b.held[host]
	var got []BacklogMove
	for h != nil && len(*h) > 0 && len(got) < n {
		if top := (*h)[0]; bound != nil && !(BacklogFrom{top.to, top.fp}).less(*bound) {
			break
		}
		m := h.pop()
		b.heldN--
		if b.waiting(m.to, m.fp) {
			got = append(got, BacklogMove{Host: host, FP: m.fp, From: m.from, To: m.to})
		}
	}
	if h != nil && len(*h) == 0 {
		delete(b.held, host)
	}
	return got
}

// releaseHeld queues the held moves of a host ("": of every host) to be
// written, as pointers (BacklogMove), and makes the host's takes start at
// or before them. c.mu held.
func (b *backlog) releaseHeld(host string) {
	var moves []BacklogMove
	release := func(hk string, h *heldMoves) {
		for _, m := range *h {
			if b.waiting(m.to, m.fp) {
				moves = append(moves, BacklogMove{Host: hk, FP: m.fp, From: m.from, To: m.to})
				b.lower(hk, BacklogFrom{m.to, m.fp})
			}
		}
		b.heldN -= len(*h)
		delete(b.held, hk)
	}
	if host != "" {
		if h := b.held[host]; h != nil {
			release(host, h)
		}
	} else {
		for hk, h := range b.held {
			release(hk, h)
		}
	}
	b.released = b.released || len(moves) > 0
	b.movesMu.Lock()
	b.moves = append(b.moves, moves...)
	b.movesMu.Unlock()
}

// mergeHeld puts the URLs of held moves a take read (moved, in rank order)
// among those it read of the store (stored, in key order), and keeps the
// n first: the URLs taken, the held moves of those left (to hold again),
// and how many of stored were kept.
func mergeHeld(stored, moved []SpilledURL, n int) (taken []SpilledURL, left []SpilledURL, keptStored int) {
	if len(moved) == 0 {
		return stored, nil, len(stored)
	}
	taken = make([]SpilledURL, 0, min(n, len(stored)+len(moved)))
	i, j := 0, 0
	for len(taken) < n && (i < len(stored) || j < len(moved)) {
		if j == len(moved) || i < len(stored) && (BacklogFrom{stored[i].Rank, stored[i].FP}).less(BacklogFrom{moved[j].Rank, moved[j].FP}) {
			taken = append(taken, stored[i])
			i++
		} else {
			taken = append(taken, moved[j])
			j++
		}
	}
	return taken, moved[j:], i
}

// unwritten drops the Held mark of the URLs taken through held moves when
// a pointer may have been written for one before (released), so that their
// next write deletes every rank between too.
func (b *backlog) unwritten(taken []SpilledURL) {
	if !b.released {
		return
	}
	for i := range taken {
		taken[i].Held = false
	}
}

// requeueMissing handles the held moves whose URLs a read did not find:
// a URL whose write failed is queued again (pendingWrites.putBack), and
// takes its new rank there, as a move of a queued URL does (linked). The
// others led nowhere, as a pointer may after a crash. c.mu and b.io held.
func (b *backlog) requeueMissing(moves []BacklogMove, found []SpilledURL) {
	if len(found) == len(moves) {
		return
	}
	got := make(map[uint64]bool, len(found))
	for _, s := range found {
		got[s.FP] = true
	}
	for _, m := range moves {
		if got[m.FP] {
			continue
		}
		if b.spilled.update(m.FP, func(s *SpilledURL) { s.Rank = m.To }) {
			if v, ok := b.ranked.Get(m.FP); ok {
				b.ranked.Set(m.FP, rankedAt(b.links(v), m.To))
			}
		}
	}
}

// holdAgain holds again the moves of URLs a take read and left.
func (b *backlog) holdAgain(host string, left []SpilledURL) {
	for _, s := range left {
		b.hold(host, heldMove{fp: s.FP, from: s.HeldFrom, to: s.Rank})
	}
}

// flush writes what is queued. A failed write keeps it queued, before
// what came since, to be written again.
func (b *backlog) flush() error {
	b.io.Lock()
	defer b.io.Unlock()
	return b.flushLocked()
}

func (b *backlog) flushLocked() error {
	// Drained and noted for the reads ahead at once, under movesMu: a
	// read's end (finishRead) finds each URL queued, or noted.
	b.movesMu.Lock()
	spilled := b.spilled.drain()
	moves := b.moves
	b.moves = nil
	if len(b.reading) > 0 {
		for _, s := range spilled {
			b.noteFlushed(s.Host, BacklogFrom{s.Rank, s.FP})
		}
		for _, m := range moves {
			b.noteFlushed(m.Host, BacklogFrom{m.To, m.FP})
		}
	}
	b.movesMu.Unlock()
	if len(spilled)+len(moves) == 0 {
		return nil
	}
	// In writes of flushChunk entries: the stop writes every held move (up
	// to maxHeld), which took more than the stop's 30 s in one write in a
	// crawl at 18 million URLs, with the store compacting.
	all := spilled
	for len(spilled)+len(moves) > 0 {
		ns := min(len(spilled), flushChunk)
		nm := min(len(moves), flushChunk-ns)
		if err := b.store.WriteBacklog(spilled[:ns], moves[:nm]); err != nil {
			b.spilled.putBack(spilled)
			b.movesMu.Lock()
			b.moves = append(moves, b.moves...)
			b.movesMu.Unlock()
			return err
		}
		spilled, moves = spilled[ns:], moves[nm:]
		b.writes.Add(1)
	}
	b.spilled.written(all)
	return nil
}

// flushChunk is the most entries one backlog write holds.
var flushChunk = 1 << 16

// noteFlushed notes that a flush wrote the host's URL at at, when a read
// ahead of the host is under way. movesMu held.
func (b *backlog) noteFlushed(host string, at BacklogFrom) {
	if !b.reading[host] {
		return
	}
	if low, ok := b.flushedLow[host]; !ok || at.less(low) {
		b.flushedLow[host] = at
	}
}

// A read ahead is a refill's store read made without the crawler's lock.
// A refill read the backlog under that lock, and the crawler's workers
// waited for it: in the last minute of a crawl to 11.6 million URLs, 20
// of its 64 workers waited for the lock on average, and the refills' reads
// were 13.0 µs of the about 43 µs of CPU a poll spent under it. A host whose head of first
// visits runs low (but not out) is read after its worker lets the lock
// go, before its fetch (the host is its worker's until then, so no other
// take of the host's head runs meanwhile), and what the read found is
// taken under the lock after it: only what still waits then (the waiting
// test needs the lock, so the read takes every entry and the test comes
// after). Writes meanwhile are what the read may have missed: URLs still
// queued, and those a flush wrote (flushedLow), keep the host's next take
// at or before them.
type backlogRead struct {
	host  string
	from  BacklogFrom
	n     int
	moves []BacklogMove // the host's lowest held moves (held)
}

// startRead begins a read ahead of up to n of the host's spilled URLs.
// c.mu held.
func (b *backlog) startRead(host string, n int) backlogRead {
	b.movesMu.Lock()
	b.reading[host] = true
	delete(b.flushedLow, host)
	b.movesMu.Unlock()
	return backlogRead{host: host, from: b.from[host], n: n, moves: b.popHeld(host, n, nil)}
}

// read makes the read: no lock held. The values of held moves are read
// under b.io, so that none is read while a flush writes it, and only
// those of moves that rank before the last entry read when the read
// filled up: the others would be left (finishRead holds them again).
func (b *backlog) read(r backlogRead) (got, moved []SpilledURL, err error) {
	got, err = b.store.ReadBacklog(r.host, r.from, r.n, func(uint16, uint64) bool { return true })
	if moves := r.movesToRead(got); err == nil && len(moves) > 0 {
		b.io.Lock()
		moved, err = b.store.ReadMoved(r.host, moves)
		b.io.Unlock()
	}
	return got, moved, err
}

// movesToRead are the read's held moves whose values it reads: those
// before the last entry got, when it read its n (the moves are in
// order).
func (r backlogRead) movesToRead(got []SpilledURL) []BacklogMove {
	if len(got) < r.n {
		return r.moves
	}
	last := BacklogFrom{got[len(got)-1].Rank, got[len(got)-1].FP}
	i := 0
	for i < len(r.moves) && (BacklogFrom{r.moves[i].To, r.moves[i].FP}).less(last) {
		i++
	}
	return r.moves[:i]
}

// finishRead takes what the read found that still waits, entries read and
// held moves, with their backlinks, and moves the host's next take past
// the read, but not past a URL the read may have missed. c.mu held.
func (b *backlog) finishRead(r backlogRead, read, moved []SpilledURL, err error) []SpilledURL {
	if err != nil {
		for _, m := range r.moves {
			b.hold(r.host, heldMove{fp: m.FP, from: m.From, to: m.To})
		}
		moved = nil
	} else {
		readMoves := r.movesToRead(read)
		for _, m := range r.moves[len(readMoves):] {
			b.hold(r.host, heldMove{fp: m.FP, from: m.From, to: m.To})
		}
		if len(moved) < len(readMoves) {
			b.io.Lock() // no flush drains the queue of spilled URLs meanwhile
			b.requeueMissing(readMoves, moved)
			b.io.Unlock()
		}
	}
	var next BacklogFrom
	if last := len(read) - 1; last >= 0 {
		next = BacklogFrom{read[last].Rank, read[last].FP}
	}
	// What still waits (not taken meanwhile, moved, or an entry left
	// behind) of the entries read and the held moves found: the n lowest
	// are taken, the others left (an entry read stays in the store, a held
	// move is held again).
	var waiting, movedWaiting []SpilledURL
	for _, s := range read {
		if b.waiting(s.Rank, s.FP) {
			waiting = append(waiting, s)
		}
	}
	for _, s := range moved {
		if b.waiting(s.Rank, s.FP) {
			movedWaiting = append(movedWaiting, s)
		}
	}
	kept, left, keptRead := mergeHeld(waiting, movedWaiting, r.n)
	b.holdAgain(r.host, left)
	b.unwritten(kept)
	if keptRead < len(waiting) {
		// Entries read that wait were left: the next take starts at the
		// last one taken, or where this read started.
		next = r.from
		if keptRead > 0 {
			next = BacklogFrom{waiting[keptRead-1].Rank, waiting[keptRead-1].FP}
		}
	}
	for i, s := range kept {
		if v, ok := b.ranked.Get(s.FP); ok && !b.breadth {
			kept[i].Links = b.links(v)
		}
		b.ranked.Delete(s.FP)
	}
	b.movesMu.Lock()
	defer b.movesMu.Unlock()
	low, flushed := b.flushedLow[r.host]
	delete(b.reading, r.host)
	delete(b.flushedLow, r.host)
	if len(read) > 0 {
		if flushed && low.less(next) {
			next = low
		}
		b.from[r.host] = b.lowestLocked(r.host, next)
	}
	if len(kept) > 0 {
		taken := make(map[uint64]bool, len(kept))
		for _, s := range kept {
			taken[s.FP] = true
		}
		b.moves = slices.DeleteFunc(b.moves, func(m BacklogMove) bool { return m.Host == r.host && taken[m.FP] })
	}
	return kept
}

// errBacklogBusy says the store is being written: a refill waits a little
// rather than hold the crawler's lock through the write.
var errBacklogBusy = errors.New("crawl: the backlog is being written")

// take takes up to n of the host's spilled URLs, and their ranks: those
// written, read from the store (where they stay until the URL's next
// write: URLState.left), then those still queued (which the caller
// saves). It does not wait for a write in progress (errBacklogBusy), nor
// make one. c.mu held.
func (b *backlog) take(host string, n int) (stored, queued []SpilledURL, err error) {
	if !b.io.TryLock() {
		return nil, nil, errBacklogBusy
	}
	defer b.io.Unlock()
	read, err := b.store.ReadBacklog(host, b.from[host], n, b.waiting)
	stored, keptRead := read, len(read)
	var bound *BacklogFrom // past the n read, a held move would be left
	if len(read) == n {
		bound = &BacklogFrom{read[n-1].Rank, read[n-1].FP}
	}
	if moves := b.popHeld(host, n, bound); len(moves) > 0 {
		var moved, left []SpilledURL
		if err == nil {
			moved, err = b.store.ReadMoved(host, moves)
		}
		if err != nil {
			for _, m := range moves {
				b.hold(host, heldMove{fp: m.FP, from: m.From, to: m.To})
			}
		} else {
			b.requeueMissing(moves, moved)
			stored, left, keptRead = mergeHeld(read, moved, n)
			b.holdAgain(host, left)
			b.unwritten(stored)
		}
	}
	if len(stored) < n {
		queued = b.takeQueued(host, n-len(stored))
	}
	if last := keptRead - 1; err == nil && last >= 0 {
		b.from[host] = b.lowest(host, BacklogFrom{read[last].Rank, read[last].FP})
	}
	for _, list := range [][]SpilledURL{stored, queued} {
		for i, s := range list {
			if v, ok := b.ranked.Get(s.FP); ok && !b.breadth {
				list[i].Links = b.links(v)
			}
			b.ranked.Delete(s.FP)
		}
	}
	if len(stored) > 0 {
		// A move queued for a URL now taken would carry its entry, which
		// the URL's next write deletes where it was read, to another rank.
		taken := make(map[uint64]bool, len(stored))
		for _, s := range stored {
			taken[s.FP] = true
		}
		b.movesMu.Lock()
		b.moves = slices.DeleteFunc(b.moves, func(m BacklogMove) bool { return m.Host == host && taken[m.FP] })
		b.movesMu.Unlock()
	}
	return stored, queued, err
}

// lowest is the least of at and where the host's URLs waiting to be
// written will be: spilled, or moved. b.io held, so no flush takes them
// meanwhile; c.mu held, so none is added.
func (b *backlog) lowest(host string, at BacklogFrom) BacklogFrom {
	b.movesMu.Lock()
	defer b.movesMu.Unlock()
	return b.lowestLocked(host, at)
}

// lowestLocked is lowest with movesMu held (a flush drains under it).
func (b *backlog) lowestLocked(host string, at BacklogFrom) BacklogFrom {
	b.spilled.eachOf(host, func(s *SpilledURL) {
		if p := (BacklogFrom{s.Rank, s.FP}); p.less(at) {
			at = p
		}
	})
	for _, m := range b.moves {
		if p := (BacklogFrom{m.To, m.FP}); m.Host == host && p.less(at) {
			at = p
		}
	}
	return at
}

// takeQueued removes up to n of the host's URLs not yet written, in the
// order they were spilled. b.io held, so no flush drains them meanwhile.
func (b *backlog) takeQueued(host string, n int) []SpilledURL {
	got := b.spilled.ofHostInOrder(host)
	got = got[:min(n, len(got))]
	taken := make(map[uint64]bool, len(got))
	for _, s := range got {
		taken[s.FP] = true
	}
	b.spilled.remove(taken)
	return got
}

// drained says whether the host has no URL queued for the store, nor a
// move held or waiting to be written: a URL whose move waits to be
// written is at neither rank for a read (its old entry is not where it
// waits, and the new one is not written yet).
func (b *backlog) drained(host string) bool {
	if b.spilled.pending(host) > 0 || b.held[host] != nil {
		return false
	}
	b.movesMu.Lock()
	defer b.movesMu.Unlock()
	for _, m := range b.moves {
		if m.Host == host {
			return false
		}
	}
	return true
}

// takeOne removes one spilled URL, by its fingerprint. c.mu held.
func (b *backlog) takeOne(host string, fp uint64, state func(SpilledURL) URLState) (SpilledURL, bool, error) {
	v, ok := b.ranked.Get(fp)
	if !ok {
		return SpilledURL{}, false, nil
	}
	b.io.Lock()
	defer b.io.Unlock()
	if s, ok := b.spilled.takeOne(fp); ok {
		b.ranked.Delete(fp)
		s.Links = b.links(v)
		if b.breadth {
			s.Links = 0
		}
		return s, true, nil
	}
	// A move of it may be held, or wait to be written: the store has its
	// entry at its rank after this.
	b.releaseHeld(host)
	if err := b.flushLocked(); err != nil {
		return SpilledURL{}, false, err
	}
	s, ok, err := b.store.TakeSpilled(host, b.rank(v), fp, state)
	if at, moved := b.valueRank(v); err == nil && !ok && moved && at != b.rank(v) {
		// A read ahead holds its move (startRead): its value is where it
		// was.
		s, ok, err = b.store.TakeSpilled(host, at, fp, state)
	}
	if err == nil || ok {
		// Taken, or not there to take.
		b.ranked.Delete(fp)
	}
	if ok && !b.breadth {
		s.Links = b.links(v)
	}
	return s, ok, err
}

// backlogger is a FrontierStore that can keep a backlog: StoredFrontier
// with its Backlog table set.
type backlogger interface{ backlogStore() BacklogStore }

// loadBacklog counts what the store's backlog holds, by host, reading keys
// only (keys, the store's EachSpilled read ahead): a restart loads no
// spilled URL. c.mu held.
func (f *frontier) loadBacklog(keys *keysAhead) error {
	var h *host // the keys come host by host
	var stale []SpilledURL
	err := keys.each(func(host string, rank uint32, fp uint64) error {
		if f.spill.has(fp) {
			return nil
		}
		if f.residentFP.Has(fp) || f.park != nil && f.park.has(fp) {
			// Polled, and stored as such, before a crash took the
			// process between that write and the deletion of its entry.
			stale = append(stale, SpilledURL{Host: host, Rank: uint16(rank), FP: fp})
			return nil
		}
		f.spill.ranked.Set(fp, f.spill.rankedValue(uint16(rank)))
		if h == nil || h.key != host {
			h = f.host(host)
		}
		h.spilled++
		h.known++
		h.unpolled++
		f.placeHost(h)
		return nil
	})
	if err == nil && len(stale) > 0 {
		err = f.spill.store.DropSpilled(stale)
	}
	return err
}

// spilledState is the URLState of a spilled URL back in memory: the
// resident one when a crash left the URL in both.
func (f *frontier) spilledState(s SpilledURL) URLState {
	if old := f.get(s.URL); old != nil {
		return *old
	}
	st := URLState{URL: s.URL, Depth: s.Depth, Due: s.Due, Interval: s.Interval, Links: s.Links}
	if v, ok := f.spill.ranked.Get(s.FP); ok && !f.spill.breadth {
		st.Links = f.spill.links(v)
	}
	return st
}

// refill brings the host's head of first visits back to its size from
// the backlog. h is busy; c.mu held.
func (f *frontier) refill(h *host, now time.Time) {
	want := f.spill.head - h.first.Len()
	stored, queued, err := f.spill.take(h.key, want)
	if errors.Is(err, errBacklogBusy) {
		h.refillAfter = now.Add(10 * time.Millisecond)
		return
	}
	if err != nil {
		f.spillFailed(err)
	}
	f.addStored(h, stored)
	for _, s := range queued {
		f.unspilled(h)
		if !f.holds(s.URL) {
			f.saveState(f.addResident(f.spilledState(s), h)) // never written: now a frontier state
		}
	}
	if got := len(stored) + len(queued); err == nil && got < want && f.spill.drained(h.key) {
		// The store holds no more of the host: a count kept too high (a
		// URL stored twice after a crash) ends here.
		for h.spilled > 0 {
			f.unspilled(h)
		}
	}
	if len(stored)+len(queued) == 0 {
		h.refillAfter = now.Add(100 * time.Millisecond)
	}
}

// addStored puts first visits a take read from the store in memory, where
// their entries stay until their next write. c.mu held.
func (f *frontier) addStored(h *host, stored []SpilledURL) {
	for _, s := range stored {
		f.unspilled(h)
		if !f.holds(s.URL) {
			st := f.spilledState(s)
			st.left, st.leftAt, st.noTable = leftInBacklog, backlogLeftAt(s), true
			f.addResident(st, h)
		} else if old := f.get(s.URL); old != nil {
			// In memory already: its entries go with its state's next
			// write.
			old.keepLeftEntry(&URLState{left: leftInBacklog, leftAt: backlogLeftAt(s)})
		}
	}
}

// readWanted is the read ahead pop asked for the host, if any: begun
// now, to be made once the crawler's lock is let go (readAhead). c.mu
// held.
func (f *frontier) readWanted(h *host) (backlogRead, bool) {
	if !h.wantRead {
		return backlogRead{}, false
	}
	h.wantRead = false
	return f.spill.startRead(h.key, f.spill.head-h.first.Len()), true
}

// readAhead makes a read ahead of the host's backlog, with c.mu not held,
// and takes what it found under it.
func (c *Crawler) readAhead(h *host, r backlogRead) {
	got, moved, err := c.f.spill.read(r)
	c.mu.Lock()
	defer c.mu.Unlock()
	if err != nil {
		c.f.spillFailed(err)
	}
	got = c.f.spill.finishRead(r, got, moved, err)
	c.f.addStored(h, got)
	if len(got) == 0 {
		h.refillAfter = time.Now().Add(100 * time.Millisecond)
	}
}

// unspilled takes one URL out of the host's spilled counts.
func (f *frontier) unspilled(h *host) {
	h.spilled--
	h.unpolled--
	h.known--
}

// resident is the state of a normalised URL, brought back into memory
// when it is spilled or parked; nil when unknown. c.mu held.
func (f *frontier) resident(u string) *URLState {
	if f.holds(u) || f.spill == nil && f.park == nil {
		return f.get(u) // nil for another URL of its fingerprint
	}
	fp := urlFingerprint(u)
	if f.park != nil && f.park.has(fp) {
		if st := f.unparkOne(f.host(hostKey(u)), fp); st != nil && st.URL == u {
			return st
		}
		return nil // another URL of the same fingerprint, now in memory
	}
	if f.spill == nil || !f.spill.has(fp) {
		return nil
	}
	key := hostKey(u)
	s, ok, err := f.spill.takeOne(key, fp, f.spilledState)
	if err != nil {
		f.spillFailed(err)
	}
	if f.spill.has(fp) {
		return nil // left in the backlog by a failed read
	}
	h := f.host(key)
	f.unspilled(h)
	if !ok || f.holds(s.URL) {
		return nil
	}
	st := f.addResident(f.spilledState(s), h)
	f.saveState(st) // taken from the queue, it was never written
	if s.URL != u {
		return nil // another URL of the same fingerprint, now in memory
	}
	return st
}

// saveState hands a state back in memory to the crawler to write.
func (f *frontier) saveState(st *URLState) {
	if f.save != nil {
		f.save(st)
	}
}

func (f *frontier) spillFailed(err error) {
	if f.spillError != nil {
		f.spillError(err)
	}
}
