package crawl

import (
	"cmp"
	"errors"
	"math"
	"math/rand/v2"
	"slices"
	"sync"
	"sync/atomic"
	"time"

	"github.com/cocrawl/cocrawl/crawl/revisit"
	"github.com/cocrawl/cocrawl/internal/fpmap"
)

// Parking keeps on disk the revisits a frontier cannot afford to keep in
// memory. Once a crawl has polled most of what it knows, the URLs waiting
// for a revisit are most of the frontier, and each cost some 350 bytes of
// Go heap as a URLState, and the garbage collector's time to scan them.
// With parking, a host keeps at most Config.RevisitsInMemory revisits
// resident (its head, in a heap by due time as before). A URL polled when
// the head is full is parked: its whole state goes to the store, keyed by
// host and due time, and leaves memory. When the earliest parked revisit
// of a host falls due, the earliest come back a batch at a time.
//
// What stays in memory per parked URL is an entry of parked.at: its 8-byte
// fingerprint (the URL-seen test) with its due time and its last look (8
// bytes). The host keeps the sums its revisit fit needs of the URLs it
// parked (parkedFit): the fit of the host's rates (revisit.PriorFit) is
// additive and exact; a parked URL with an estimate spends the rate of
// the interval it was parked with (the fit plans only the URLs in memory,
// whose due times it can move), and its rate as the host's prior pulled
// it then is kept in bins for the rate statistics; a parked URL without
// an estimate spends its adaptive interval's rate, summed, where a
// resident one spends at most an even share of the budget.
//
// Written by hand: the store is the peer's Badger, as for the backlog; no
// Go module keeps a per-host due-time queue in a key-value store.

// ParkedURL is a revisit kept on disk: where it is (Host, Due, FP), its
// state, and its rate as the host's fit took it (Lambda, <0: none).
type ParkedURL struct {
	Host   string
	Due    uint32 // Unix seconds of State.Due: the order in the store
	FP     uint64
	Lambda float64
	State  URLState
	// uncounted: parked before a restart, and taken before its host's fit
	// counted it (countParked).
	uncounted bool
}

// ParkStore keeps a frontier's parked revisits. A FrontierStore that is
// also a ParkStore (StoredFrontier with its Revisits table) gets a crawler
// that keeps only a head of each host's revisits in memory.
type ParkStore interface {
	// WriteParked stores the URLs parked, then deletes their frontier
	// states (SaveFrontier's; none for a state stored as none,
	// URLState.noTable) and the backlog entries they still had
	// and parked entries a take left of them (URLState.left): a crash
	// between leaves a URL in both, and the parked one wins.
	WriteParked(parked []ParkedURL) error
	// ReadParked returns up to n of the host's parked URLs due at or
	// before due that still wait there, earliest first from from on (the
	// zero ParkedFrom: the first), and leaves them
	// stored: a URL's entry goes when its next place is written
	// (URLState.left; SaveFrontier and WriteParked delete it). waiting
	// says, by a key's due time and fingerprint, which entries still wait:
	// the others are in memory, and their values are not read. next is
	// the due time of the earliest one waiting after them (0: none).
	// Entries that do not decode are deleted.
	ReadParked(host string, from ParkedFrom, n int, due uint32, waiting func(due uint32, fp uint64) bool) (taken []ParkedURL, next uint32, err error)
	// DropParked deletes the entries of these parked URLs (those a
	// restart found twice).
	DropParked(parked []ParkedURL) error
	// ParkedOne reads one parked URL and leaves it stored: a take of one
	// (a sampled poll's, a hint's) leaves its entry as ReadParked does.
	ParkedOne(host string, due uint32, fp uint64) (ParkedURL, bool, error)
	// NthParked is where the host's nth parked URL due at or after from
	// is, in key order, counting only those still waiting (ReadParked).
	NthParked(host string, from uint32, n int, waiting func(due uint32, fp uint64) bool) (due uint32, fp uint64, ok bool, err error)
	// EachParkedKey calls fn with where every parked URL is, reading no
	// values: what a restart needs.
	EachParkedKey(fn func(host string, due uint32, fp uint64) error) error
	// EachParkedOf calls fn with each of the host's parked URLs, earliest
	// first.
	EachParkedOf(host string, fn func(ParkedURL) error) error
}

// ParkedFrom is where a take of a host's parked URLs starts, in key order:
// no parked URL of the host waits before it.
type ParkedFrom struct {
	Due uint32
	FP  uint64
}

func (a ParkedFrom) less(b ParkedFrom) bool {
	return a.Due < b.Due || a.Due == b.Due && a.FP < b.FP
}

// DefaultRevisitsInMemory is the head of revisits a host keeps in memory
// when the frontier parks: about 20 KB per host. Small, because the
// collector walks every URL state in memory at each cycle (in a scale run
// of 3,000 hosts with heads of 256 it took a third of the CPU).
const DefaultRevisitsInMemory = 64

// parking is the frontier's side of the parked revisits. at is read and
// written under the crawler's lock; the queued writes have a lock of their
// own, so the persister can take them without that lock; io serialises
// the store's writes and reads, so a take sees every write queued before
// it.
type parking struct {
	store ParkStore
	head  int
	// at holds every parked URL: fingerprint -> due (Unix s) << 32 | last
	// look (Unix s).
	// A parked URL loaded at a restart has a last look of 0 until its
	// host's values are read (countParked).
	at *fpmap.Map[uint64]

	// toCount are the hosts a restart loaded parked URLs of, to be counted
	// into their fits; counting says some may not be yet.
	toCount  []string
	counting atomic.Bool

	queue *pendingWrites[ParkedURL]

	// weights are the hosts by their parked URLs, to draw one of those at
	// random (drawParked). c.mu.
	weights hostWeights

	// from is where each host's next take of due URLs starts (the
	// backlog's from says why): the last URL a take kept from the store,
	// or lower, where a URL is parked or waits to be written below it. A
	// take from a host's first key stepped over the entries takes had
	// left and deleted, until a compaction dropped them: on a crawl of
	// revisits, 8 of its 10.2 µs a poll. A host not in it starts at its
	// first key, as after a restart. c.mu.
	from map[string]ParkedFrom

	io sync.Mutex
}

// weigh makes the host's weight its parked URLs, after they changed.
// c.mu held.
func (p *parking) weigh(h *host) {
	if p == nil {
		return // no parking: unparkAll finds nothing
	}
	n := 0
	if h.parkFit != nil {
		n = h.parkFit.n
	}
	p.weights.set(h, n)
}

func newParking(store ParkStore, head int) *parking {
	return &parking{store: store, head: max(head, 1), at: fpmap.New[uint64](), from: map[string]ParkedFrom{},
		queue: newPendingWrites(func(s *ParkedURL) (string, uint64) { return s.Host, s.FP })}
}

// parkedFit is what a host keeps of its parked URLs: how many, when the
// earliest may be due (never later than it is), and the sums of their
// part in the host's revisit fit.
type parkedFit struct {
	n       int
	due     time.Time // no parked URL is due before
	retryAt time.Time // a take found the store busy: not before
	prior   revisit.PriorFit
	bins    *revisit.Bins // made at the first URL with an estimate: 14 KiB
	// URLs without an estimate: how many, and their adaptive intervals'
	// rates summed.
	unestimated int
	intervalHz  float64
	// plannedHz sums the rates of the parked URLs with an estimate, by the
	// intervals they were parked with: what the host's fit counts them
	// to spend (bins only describes them). Counted at the rate a new fit
	// would give them instead, they were planned visits their due times,
	// on disk, did not send: on pages 25 times faster than a host's cycle
	// with 200 pages a host (64 in memory), a lone crawler sent a fifth
	// of its budget.
	plannedHz float64
	// uncounted are the URLs loaded at a restart, by key, that are among n
	// but not yet in the sums.
	uncounted int
	// byDue counts the parked URLs (queued or stored) by due time, in
	// buckets of 2^shift seconds, those that hold any in order: a uniform
	// draw of one (drawParked) seeks to its bucket and skips only within
	// it, where counting from the host's first key skipped half of them
	// (about 5% of a scale crawl's CPU at 15 million URLs).
	byDue []dueCount
	// shift is the width of byDue's buckets, as a power of two seconds:
	// 0 at first, wider each time the host has more buckets than
	// maxDueBuckets. With fixed 64 s buckets, on a crawl without delays
	// (a worker polls one host many times a second) a draw skipped 860
	// keys on average in a run's first 150 s, and the draws cost 13 µs a
	// poll at 15 million URLs; a polite crawl's one URL a second wants
	// them wide.
	shift uint8
}

// maxDueBuckets bounds a host's buckets of due times by its parked count
// n: 16 URLs a bucket on average, so a draw skips few keys, and the
// buckets cost at most half a byte a parked URL and 128 bytes a host.
func maxDueBuckets(n int) int { return 16 + n/16 }

type dueCount struct {
	bucket uint32 // due >> parkedFit.shift
	n      uint32
}

// countDue counts a parked URL due at due in (delta 1) or out (-1).
func (p *parkedFit) countDue(due uint32, delta int) {
	defer p.coarsen()
	b := due >> p.shift
	i, found := slices.BinarySearchFunc(p.byDue, b, func(c dueCount, b uint32) int { return cmp.Compare(c.bucket, b) })
	switch {
	case found && delta > 0:
		p.byDue[i].n++
	case found && p.byDue[i].n > 1:
		p.byDue[i].n--
	case found:
		p.byDue = slices.Delete(p.byDue, i, i+1)
	case delta > 0:
		p.byDue = slices.Insert(p.byDue, i, dueCount{bucket: b, n: 1})
	}
}

// coarsen doubles the buckets' width until they are few enough for the
// host's parked count. A bucket is never split again (that takes a read
// of its keys), except when the host has no parked URL left.
func (p *parkedFit) coarsen() {
	if len(p.byDue) == 0 {
		p.shift = 0
		return
	}
	for len(p.byDue) > maxDueBuckets(p.n) && p.shift < 32 {
		p.shift++
		merged := p.byDue[:0]
		for _, c := range p.byDue {
			c.bucket >>= 1
			if last := len(merged) - 1; last >= 0 && merged[last].bucket == c.bucket {
				merged[last].n += c.n
				continue
			}
			merged = append(merged, c)
		}
		p.byDue = merged
	}
}

// locate is the bucket of the host's ith parked URL in due order, and
// its place in the bucket; ok is false past the last.
func (p *parkedFit) locate(i int) (bucket uint32, j int, ok bool) {
	for _, c := range p.byDue {
		if i < int(c.n) {
			return c.bucket, i, true
		}
		i -= int(c.n)
	}
	return 0, 0, false
}

// add counts a parked URL in.
func (p *parkedFit) add(s *ParkedURL) {
	p.n++
	p.countDue(s.Due, 1)
	if due := time.Unix(int64(s.Due), 0); p.n == 1 || due.Before(p.due) {
		p.due = due
	}
	p.addSums(s)
}

// addLoaded counts in a URL a restart found parked, by its key alone.
func (p *parkedFit) addLoaded(due uint32) {
	p.n++
	p.countDue(due, 1)
	p.uncounted++
	if t := time.Unix(int64(due), 0); p.n == 1 || t.Before(p.due) {
		p.due = t
	}
}

// addSums adds a parked URL's part to the sums of the fit.
func (p *parkedFit) addSums(s *ParkedURL) {
	p.prior.Add(s.State.Rate)
	if s.Lambda >= 0 {
		if p.bins == nil {
			p.bins = new(revisit.Bins)
		}
		p.bins.Add(s.Lambda)
		if s.State.Interval > 0 {
			p.plannedHz += 1 / s.State.Interval.Seconds()
		}
	} else if s.State.Interval > 0 {
		p.unestimated++
		p.intervalHz += 1 / s.State.Interval.Seconds()
	}
}

// remove counts a parked URL out.
func (p *parkedFit) remove(s *ParkedURL) {
	p.n = max(p.n-1, 0)
	p.countDue(s.Due, -1)
	switch {
	case s.uncounted:
		p.uncounted = max(p.uncounted-1, 0) // not in the sums
	case s.Lambda >= 0:
		p.prior.Remove(s.State.Rate)
		if p.bins != nil {
			p.bins.Remove(s.Lambda)
		}
		if s.State.Interval > 0 {
			p.plannedHz = max(0, p.plannedHz-1/s.State.Interval.Seconds())
		}
	default:
		p.prior.Remove(s.State.Rate)
		if s.State.Interval > 0 && p.unestimated > 0 {
			p.unestimated--
			p.intervalHz = max(0, p.intervalHz-1/s.State.Interval.Seconds())
		}
	}
	if p.n == 0 {
		*p = parkedFit{bins: p.bins}
	}
}

// spend is what the parked URLs take of a budget of which share is each
// URL's even part: those without an estimate their adaptive intervals'
// rates, at most an even share each; those with one the rates of the
// intervals they were parked with.
func (p *parkedFit) spend(share float64) float64 {
	return min(float64(p.unestimated)*share, p.intervalHz) + p.plannedHz
}

func parkedAt(due uint32, seen int64) uint64 {
	return uint64(due)<<32 | uint64(clampUnix(seen/1000))
}

// dueSecond is a parked URL's due time in the store: the second at or
// after it, so a parked URL is never taken for due before it is (it may
// come back up to a second late).
func dueSecond(t time.Time) uint32 {
	s := t.Unix()
	if t.Nanosecond() > 0 {
		s++
	}
	return clampUnix(s)
}

func clampUnix(s int64) uint32 { return uint32(min(max(s, 0), math.MaxUint32)) }

// has says whether the URL of fingerprint fp is parked.
func (p *parking) has(fp uint64) bool {
	return p.at.Has(fp)
}

// waiting says whether the parked entry of due and fp is where the URL
// waits: not one a take read and left (its URL is in memory), nor one a
// crash left behind. c.mu held.
func (p *parking) waiting(due uint32, fp uint64) bool {
	at, ok := p.at.Get(fp)
	return ok && uint32(at>>32) == due
}

// parkable says whether a polled URL st goes to disk rather than back in
// its host's revisit heap: the heap is full, and nothing kept only in
// memory waits on it (a recheck, a sample, a sitemap's claim).
func (f *frontier) parkable(h *host, st *URLState) bool {
	return f.park != nil && st.Polls > 0 && !st.Gone && !st.checking && !st.sampling &&
		st.lastmodClaim == claimNone && st.qi == 0 && h.queue.Len() >= f.park.head
}

// parkState moves st, polled and in no heap, from memory to the parking
// queue. c.mu held.
func (f *frontier) parkState(h *host, st *URLState) {
	lambda := -1.0
	if l, ok := h.fit.prior.Estimate(st.Rate); ok {
		lambda = l
	}
	fp := urlFingerprint(st.URL)
	p := ParkedURL{Host: h.key, Due: dueSecond(st.Due), FP: fp, Lambda: lambda, State: *st}
	p.State.qi, p.State.ai, p.State.inFirst = 0, 0, false
	f.drop(st)
	h.known++ // drop counted it out; it is still the host's
	f.park.at.Set(fp, parkedAt(p.Due, st.Seen))
	f.park.lower(h.key, ParkedFrom{p.Due, fp})
	if h.parkFit == nil {
		h.parkFit = &parkedFit{}
	}
	h.parkFit.add(&p)
	f.park.weigh(h)
	f.park.queue.push(p)
	f.placeHost(h)
}

// flush writes what is queued. A failed write keeps it queued, before
// what came since, to be written again.
func (p *parking) flush() error {
	p.io.Lock()
	defer p.io.Unlock()
	return p.flushLocked()
}

func (p *parking) flushLocked() error {
	queue := p.queue.drain()
	if len(queue) == 0 {
		return nil
	}
	err := p.store.WriteParked(queue)
	if err != nil {
		p.queue.putBack(queue)
		return err
	}
	p.queue.written(queue)
	return nil
}

// errParkingBusy says the store is being written: a take waits a little
// rather than hold the crawler's lock through the write.
var errParkingBusy = errors.New("crawl: parked revisits are being written")

// takeDue removes up to n of the host's parked URLs due at or before due
// from the store (stored back as frontier states there), and up to n of
// those still queued (which the caller saves): the earliest of each, so
// the earliest of all is among them. next is the earliest due time left
// (0: none). It does not wait for a write in progress. c.mu held.
func (p *parking) takeDue(host string, n int, due uint32) (stored, queued []ParkedURL, next uint32, err error) {
	if !p.io.TryLock() {
		return nil, nil, 0, errParkingBusy
	}
	defer p.io.Unlock()
	from := p.from[host]
	stored, next, err = p.store.ReadParked(host, from, n, due, p.waiting)
	if err == nil && from != (ParkedFrom{}) && len(stored) < n && next == 0 {
		// None waits past where takes start: the host's first key once
		// more, so that no start set too far can hide a parked URL.
		delete(p.from, host)
		stored, next, err = p.store.ReadParked(host, ParkedFrom{}, n, due, p.waiting)
	}
	if p.queue.pending(host) > 0 {
		queued, next = p.takeQueued(host, n, due, next)
		stored, queued, next = p.earliest(n, stored, queued, next)
	}
	if last := len(stored) - 1; err == nil && last >= 0 {
		p.from[host] = p.lowest(host, ParkedFrom{stored[last].Due, stored[last].FP})
	}
	for _, list := range [][]ParkedURL{stored, queued} {
		for i := range list {
			at, _ := p.at.Get(list[i].FP)
			list[i].uncounted = uint32(at) == 0
			p.at.Delete(list[i].FP)
		}
	}
	return stored, queued, next, err
}

// lower makes the host's takes start at or before at. c.mu held.
func (p *parking) lower(host string, at ParkedFrom) {
	if from, ok := p.from[host]; ok && at.less(from) {
		p.from[host] = at
	}
}

// lowest is the least of at and the keys of the host's URLs waiting to be
// written. p.io held, so no flush takes them meanwhile; c.mu held, so
// none is added.
func (p *parking) lowest(host string, at ParkedFrom) ParkedFrom {
	p.queue.eachOf(host, func(s *ParkedURL) {
		if k := (ParkedFrom{s.Due, s.FP}); k.less(at) {
			at = k
		}
	})
	return at
}

// earliest keeps the earliest n of the URLs taken from the store and from
// the queue, and queues the others from the queue again (the store's are
// still there), so a take brings no more than n into memory. p.io held.
func (p *parking) earliest(n int, stored, queued []ParkedURL, next uint32) ([]ParkedURL, []ParkedURL, uint32) {
	if len(stored)+len(queued) <= n {
		return stored, queued, next
	}
	type taken struct {
		s      ParkedURL
		queued bool
	}
	all := make([]taken, 0, len(stored)+len(queued))
	for _, s := range stored {
		all = append(all, taken{s, false})
	}
	for _, s := range queued {
		all = append(all, taken{s, true})
	}
	slices.SortStableFunc(all, func(a, b taken) int { return cmp.Compare(a.s.Due, b.s.Due) })
	stored, queued = stored[:0], queued[:0]
	for i, t := range all {
		switch {
		case i >= n:
			if t.queued { // one read from the store is still there
				p.queue.push(t.s)
			}
			if next == 0 || t.s.Due < next {
				next = t.s.Due
			}
		case t.queued:
			queued = append(queued, t.s)
		default:
			stored = append(stored, t.s)
		}
	}
	return stored, queued, next
}

// takeQueued removes the earliest n of the host's queued URLs due at or
// before due, and lowers next to the earliest left. p.io held, so no
// flush drains them meanwhile.
func (p *parking) takeQueued(host string, n int, due, next uint32) ([]ParkedURL, uint32) {
	cand := p.queue.ofHostInOrder(host)
	slices.SortFunc(cand, func(a, b ParkedURL) int { return cmp.Compare(a.Due, b.Due) })
	taken := map[uint64]bool{}
	var got []ParkedURL
	for _, s := range cand {
		if len(got) < n && s.Due <= due {
			got = append(got, s)
			taken[s.FP] = true
		} else {
			if next == 0 || s.Due < next {
				next = s.Due
			}
			break
		}
	}
	p.queue.remove(taken)
	return got, next
}

// takeOne takes one parked URL, by its fingerprint; queued says it was
// never written. A stored one is read and its entry left in the store, as
// takeDue leaves them, until the URL's next write (URLState.left). It was
// moved to a frontier state and deleted, two writes the crawler's lock
// waited for: a sampled poll draws one in about 50 polls late in a crawl.
// c.mu held.
func (p *parking) takeOne(host string, fp uint64) (s ParkedURL, ok, queued bool, err error) {
	at, ok := p.at.Get(fp)
	if !ok {
		return ParkedURL{}, false, false, nil
	}
	p.io.Lock()
	defer p.io.Unlock()
	if s, ok := p.queue.takeOne(fp); ok {
		p.at.Delete(fp)
		s.uncounted = uint32(at) == 0
		return s, true, true, nil
	}
	s, ok, err = p.store.ParkedOne(host, uint32(at>>32), fp)
	s.uncounted = uint32(at) == 0
	if err == nil || ok || errors.Is(err, errParkedDropped) {
		p.at.Delete(fp) // taken, or not there to take
	}
	return s, ok, false, err
}

// nth is where the host's nth parked URL is, counting by the buckets of
// due times its fit keeps: in a bucket, those queued first, then the
// store's in key order. c.mu held.
func (p *parking) nth(host string, pk *parkedFit, n int) (fp uint64, ok bool, err error) {
	bucket, n, ok := pk.locate(n)
	if !ok {
		return 0, false, nil
	}
	p.io.Lock()
	defer p.io.Unlock()
	for _, q := range p.queue.ofHostInOrder(host) {
		if q.Due>>pk.shift != bucket {
			continue
		}
		if n == 0 {
			return q.FP, true, nil
		}
		n--
	}
	due, fp, ok, err := p.store.NthParked(host, bucket<<pk.shift, n, p.waiting)
	if !ok || due>>pk.shift != bucket {
		return 0, false, err // the counts and the store disagree (a crash)
	}
	return fp, true, err
}

// unparkDue brings the host's parked URLs that are due back into its
// revisit heap, up to what refills its head (and at least a quarter of
// it). h is busy; c.mu held.
func (f *frontier) unparkDue(h *host, now time.Time) {
	defer f.park.weigh(h)
	pk := h.parkFit
	want := max(f.park.head-h.queue.Len(), f.park.head/4, 1)
	stored, queued, next, err := f.park.takeDue(h.key, want, clampUnix(now.Unix()))
	if errors.Is(err, errParkingBusy) {
		pk.retryAt = now.Add(10 * time.Millisecond)
		return
	}
	if err != nil {
		f.parkFailed(err)
		pk.retryAt = now.Add(time.Second)
	}
	for _, s := range stored {
		f.unparked(h, &s, false)
	}
	for _, s := range queued {
		f.unparked(h, &s, true)
	}
	if h.parkFit == nil || h.parkFit.n == 0 {
		return
	}
	switch {
	case next > 0:
		h.parkFit.due = time.Unix(int64(next), 0)
	case err == nil && len(stored)+len(queued) < want:
		// The store holds no more of the host: a count kept too high (a
		// URL parked twice after a crash) ends here.
		*h.parkFit = parkedFit{bins: h.parkFit.bins}
	}
}

// unparked puts a URL taken from parking back in memory; a queued one was
// never written, and is saved as a frontier state now. c.mu held.
func (f *frontier) unparked(h *host, s *ParkedURL, queued bool) {
	if h.parkFit != nil {
		h.parkFit.remove(s)
	}
	h.known--
	if f.holds(s.State.URL) {
		// In memory too, after a crash: the resident state stands, and
		// its next write deletes the parked entry.
		if old := f.get(s.State.URL); old != nil && !queued {
			old.keepLeftEntry(&URLState{left: leftParked, leftAt: s.Due})
		}
		return
	}
	if !queued {
		// Read from the store, which keeps its entry until the URL's next
		// write (ReadParked).
		s.State.left, s.State.leftAt, s.State.noTable = leftParked, s.Due, true
	}
	st := f.addResident(s.State, h)
	if queued {
		f.saveState(st)
	}
}

// unparkOne brings one parked URL back into memory. c.mu held.
func (f *frontier) unparkOne(h *host, fp uint64) *URLState {
	defer f.park.weigh(h)
	at, parked := f.park.at.Get(fp)
	s, ok, queued, err := f.park.takeOne(h.key, fp)
	if err != nil {
		f.parkFailed(err)
	}
	if !ok {
		if !f.park.has(fp) && h.parkFit != nil && h.parkFit.n > 0 && err == nil {
			h.parkFit.n-- // not in the store: counted out
			if parked {
				h.parkFit.countDue(uint32(at>>32), -1)
			}
			h.known--
		}
		return nil
	}
	f.unparked(h, &s, queued)
	return f.get(s.State.URL)
}

// unparkAll brings every parked URL of the host back into memory: what a
// host whose sitemap lied needs (claims.go), once a day at most. c.mu
// held.
func (f *frontier) unparkAll(h *host) {
	defer f.park.weigh(h)
	for h.parkFit != nil && h.parkFit.n > 0 {
		stored, queued, _, err := f.park.takeDue(h.key, h.parkFit.n, math.MaxUint32)
		if errors.Is(err, errParkingBusy) {
			f.park.io.Lock() // wait for the write: rare, and the host must be whole
			f.park.io.Unlock()
			continue
		}
		for _, s := range stored {
			f.unparked(h, &s, false)
		}
		for _, s := range queued {
			f.unparked(h, &s, true)
		}
		if err != nil {
			f.parkFailed(err)
			return
		}
		if len(stored)+len(queued) == 0 {
			*h.parkFit = parkedFit{bins: h.parkFit.bins}
		}
	}
}

// drawParked brings a uniformly drawn parked URL back into memory for a
// sampled poll (selfcheck.go): a host by its parked count, then one of its
// URLs (it walks the host's keys: a sample is one poll in hundreds). c.mu
// held.
func (f *frontier) drawParked(rng *rand.Rand) *URLState {
	if f.park.weights.total <= 0 {
		return nil
	}
	h, i := f.park.weights.find(rng.IntN(f.park.weights.total))
	if h.parkFit == nil {
		return nil
	}
	fp, ok, err := f.park.nth(h.key, h.parkFit, i)
	if err != nil {
		f.parkFailed(err)
	}
	if !ok {
		return nil
	}
	return f.unparkOne(h, fp)
}

// loadParked reads every parked URL a restart finds, counting them into
// their hosts (keys, the store's EachParkedKey read ahead): none comes
// back into memory. c.mu held.
func (f *frontier) loadParked(keys *keysAhead) error {
	var h *host // the keys come host by host: weighed once each
	var twice []ParkedURL
	err := keys.each(func(host string, due uint32, fp uint64) error {
		if f.park.has(fp) {
			// Parked again before a crash took the process between that
			// write and the deletion of the entry a take had left.
			twice = append(twice, ParkedURL{Host: host, Due: due, FP: fp})
			return nil
		}
		f.park.at.Set(fp, uint64(due)<<32) // the last look: unknown until counted
		if h == nil || h.key != host {
			if h != nil {
				f.park.weigh(h)
			}
			h = f.host(host)
		}
		if h.parkFit == nil {
			h.parkFit = &parkedFit{}
		}
		if h.parkFit.uncounted == 0 {
			f.park.toCount = append(f.park.toCount, h.key)
		}
		h.parkFit.addLoaded(due)
		h.known++
		return nil
	})
	if h != nil {
		f.park.weigh(h)
	}
	f.park.counting.Store(len(f.park.toCount) > 0)
	if err == nil && len(twice) > 0 {
		// The first, earlier, stays: the URL comes back sooner, once.
		err = f.park.store.DropParked(twice)
	}
	return err
}

// countParked reads the values of the host's URLs parked before a restart
// and counts them into its revisit fit, with their last looks and the
// politeness their polls left (HostNext): a restart reads only keys, and
// a host's values are read before its first request, or by
// countAllParked. What cannot be read stays out of the fit. c.mu held.
func (f *frontier) countParked(h *host) {
	pk := h.parkFit
	if pk == nil || pk.uncounted == 0 {
		return
	}
	count := func(s ParkedURL) error {
		at, ok := f.park.at.Get(s.FP)
		if !ok || uint32(at) != 0 || uint32(at>>32) != s.Due {
			return nil // counted already, or taken
		}
		f.park.at.Set(s.FP, parkedAt(s.Due, s.State.Seen))
		pk.uncounted--
		pk.addSums(&s)
		if s.State.HostNext > 0 {
			h.nextAllowed = later(h.nextAllowed, time.UnixMilli(s.State.HostNext))
		}
		return nil
	}
	f.park.io.Lock() // no flush moves the queued to the store meanwhile
	defer f.park.io.Unlock()
	for _, s := range f.park.queue.ofHostInOrder(h.key) {
		_ = count(s) // never fails
	}
	if err := f.park.store.EachParkedOf(h.key, count); err != nil {
		f.parkFailed(err)
	}
	pk.uncounted = 0
}

// countAllParked counts what a restart parked into every host's fit, a
// host at a time under the crawler's lock, until stop is closed.
func (c *Crawler) countAllParked(stop <-chan struct{}) {
	c.mu.Lock()
	hosts := c.f.park.toCount
	c.f.park.toCount = nil
	c.mu.Unlock()
	for _, key := range hosts {
		select {
		case <-stop:
			return
		default:
		}
		c.mu.Lock()
		if h := c.f.hosts[key]; h != nil {
			c.f.countParked(h)
			c.f.placeHost(h) // nextAllowed may be later
		}
		c.mu.Unlock()
	}
	c.f.park.counting.Store(false)
}

// lookParked reads the state of u, parked, leaving it parked. c.mu held.
func (f *frontier) lookParked(u string) (URLState, bool) {
	if f.park == nil {
		return URLState{}, false
	}
	fp := urlFingerprint(u)
	at, ok := f.park.at.Get(fp)
	if !ok {
		return URLState{}, false
	}
	f.park.io.Lock() // a flush moves no queued URL to the store meanwhile
	defer f.park.io.Unlock()
	var s ParkedURL
	if f.park.queue.update(fp, func(q *ParkedURL) { s = *q }) {
		return s.State, s.State.URL == u
	}
	s, ok, err := f.park.store.ParkedOne(hostKey(u), uint32(at>>32), fp)
	if err != nil {
		f.parkFailed(err)
	}
	return s.State, ok && s.State.URL == u
}

// parkedSeen is when a parked URL was last looked at, and whether u is
// parked.
func (f *frontier) parkedSeen(u string) (time.Time, bool) {
	if f.park == nil {
		return time.Time{}, false
	}
	at, ok := f.park.at.Get(urlFingerprint(u))
	return time.Unix(int64(uint32(at)), 0), ok
}

func (f *frontier) parkFailed(err error) {
	if f.parkError != nil {
		f.parkError(err)
	}
}

// parkedCount is how many URLs are parked.
func (f *frontier) parkedCount() int {
	if f.park == nil {
		return 0
	}
	return f.park.at.Len()
}
