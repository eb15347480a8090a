package crawl

import (
	"container/heap"
	"iter"
	"math/bits"
	"net"
	"net/url"
	"slices"
	"strings"
	"time"

	"golang.org/x/net/publicsuffix"

	"github.com/cocrawl/cocrawl/crawl/revisit"
	"github.com/cocrawl/cocrawl/internal/fpmap"
)

// URLState is what the frontier knows of one URL; it is what persists.
type URLState struct {
	URL      string        `json:"u"`
	Depth    int           `json:"d"`           // links from a seed
	Due      time.Time     `json:"due"`         // when it should be polled next
	Interval time.Duration `json:"iv"`          // current revisit interval
	Polls    int           `json:"n,omitempty"` // successful polls
	Gone     bool          `json:"g,omitempty"` // deleted: not polled until linked again
	NotHTML  bool          `json:"b,omitempty"` // last seen as a non-HTML type: revisit with HEAD
	// Links counts the pages seen linking here (each at its first poll,
	// or when it named this URL first): the backlink estimate IB' of Cho,
	// Garcia-Molina and Page that orders first visits.
	Links    uint32 `json:"l,omitempty"`
	ETag     string `json:"e,omitempty"` // validators for conditional requests
	LastMod  string `json:"m,omitempty"`
	Excluded bool   `json:"x,omitempty"` // disallowed by robots.txt when last checked; asked again when it expires
	// HostNext is, as of this URL's last poll, when its host could next
	// be asked (Unix ms): after a restart the host waits until the latest
	// of its URLs' HostNext, so the delay holds across restarts.
	HostNext int64 `json:"hn,omitempty"`
	// Seen is when this crawler last looked at the URL (Unix ms), and
	// Rate what its looks have shown of how often it changes.
	Seen int64        `json:"s,omitempty"`
	Rate revisit.Rate `json:"cr,omitzero"`

	qi       int  // 1 + position in its host's queue or first-visit heap; 0 when in neither (being polled, gone)
	inFirst  bool // queued in the first-visit heap
	checking bool // Recheck asked for a poll: hints do not put it off
	sampling bool // drawn for a sampled poll (selfcheck.go): hints do not put it off either
	// ownFP is the fingerprint of the version this crawler's own last look
	// found, when hasOwnFP, and ownAt (unix ms) when its looks first found
	// it, in a row: a spot-check holds a peer's claim against it
	// (PollResult.OwnBefore).
	hasOwnFP   bool
	ownFP      uint64
	ownAt      int64
	ownMaskVer uint16 // the version of the host's noise mask ownFP was taken with
	// ai is 1 + the URL's position in frontier.all; sampleWeight a
	// pending sample's weight: the mean time between polls when it was
	// drawn (selfcheck.go). 8 bytes together.
	ai           int32
	sampleWeight float32
	// lastmodClaim is what a sitemap's lastmod said of the URL since its
	// last poll (changed, or unchanged): the next poll judges it.
	lastmodClaim uint8
	// left is the entry a take read and left in the store: the URL's
	// backlog entry (a first visit, at rank leftAt) or its parked entry
	// (due at leftAt). A take from the backlog or the parking reads URLs
	// and leaves their entries; the URL's next write (its frontier state,
	// or its parked entry) deletes the entry after it, so a crash before
	// leaves the URL where it was, and a poll costs the store two writes
	// rather than four. noTable: no frontier state of the URL is stored
	// (taken so, and not saved since), so parking it deletes none. In the
	// padding after lastmodClaim.
	left    leftIn
	noTable bool
	leftAt  uint32
}

// leftIn is where a take left a URL's entry (URLState.left).
type leftIn uint8

const (
	leftNowhere leftIn = iota
	leftInBacklog
	leftParked
)

// leftEntry is the entry a take left of s, which the next write of s must
// delete: its table, and its key's parts.
func (s *URLState) leftEntry() (in leftIn, host string, at uint32, fp uint64) {
	if s.left == leftNowhere {
		return leftNowhere, "", 0, 0
	}
	return s.left, hostKey(s.URL), s.leftAt, urlFingerprint(s.URL)
}

// keepLeftEntry gives s the entry older was to delete, when s has none: a
// state queued for writing replaced by a newer one, or dropped for a
// parked entry, hands it on.
func (s *URLState) keepLeftEntry(older *URLState) {
	if older.left != leftNowhere && s.left == leftNowhere {
		s.left, s.leftAt = older.left, older.leftAt
	}
}

// host is one host's queue and politeness state. Times are absolute.
type host struct {
	key         string         // scheme://host[:port]
	queue       urlQueue       // URLs to revisit (and any put off), by due time
	first       urlQueue       // URLs never looked at, by importance (firstVisitOrder)
	credit      float64        // first visits owed while revisits are due (frontier.explore)
	nextAllowed time.Time      // not before: the per-host delay, backoff
	busy        bool           // a fetch or robots.txt request is in flight
	robots      *Robots        // nil until fetched
	robotsUntil time.Time      // when the robots.txt must be fetched again
	lastFetch   time.Duration  // how long the last download took
	failures    int            // consecutive 429, 5xx or network errors
	unpolled    int            // queued URLs never polled: "larger sites first"
	fit         revisitFit     // the host's revisit schedule (schedule.go)
	signals     hostSignals    // its sitemaps and how true their lastmods were (signals.go)
	validators  hostValidators // whether its Last-Modified and ETags say anything (validators.go)
	notFound    notFoundProbe  // how it answers a path it does not have (notfound.go)
	noise       hostNoise      // its template noise (noise.go)
	known       int            // URLs of this host in the frontier, spilled ones too
	index       int            // position in the ready or waiting heap, -1 if in none
	inReady     bool
	// spilled counts the host's first visits in the backlog (backlog.go);
	// after a refill that found none ready, the next waits refillAfter.
	spilled     int
	refillAfter time.Time
	// wantRead: pop asked for a read ahead of the backlog
	// (backlogRead), which its worker makes once it lets the lock go.
	wantRead bool
	// server is the address that served the host's last request, holds
	// the one whose slot its request in flight takes (servers.go);
	// serverWait delays it for its server, parked keeps it out of the
	// heaps while its server is at its limit.
	server, holds *server
	serverWait    time.Time
	parked        bool
	overServerCap bool // its server has too many hosts: not polled
	// parkFit holds what the host keeps of its revisits parked on disk
	// (parking.go); nil until it parks one.
	parkFit *parkedFit
	// weightNo is the host's number in the parking's weights (0: none).
	weightNo int
}

// parkedRevisits is how many of the host's revisits are parked.
func (h *host) parkedRevisits() int {
	if h.parkFit == nil {
		return 0
	}
	return h.parkFit.n
}

// parkedDue is when the host's earliest parked revisit may be due, and
// whether it has one.
func (h *host) parkedDue() (time.Time, bool) {
	if h.parkFit == nil || h.parkFit.n == 0 {
		return time.Time{}, false
	}
	return later(h.parkFit.due, h.parkFit.retryAt), true
}

// hasFirst says whether the host has first visits, in memory or spilled.
func (h *host) hasFirst() bool { return h.first.Len() > 0 || h.spilled > 0 }

// readyAt is when the host could next send a request: a URL never looked
// at is always due.
func (h *host) readyAt() time.Time {
	allowed := later(h.nextAllowed, h.serverWait)
	if h.first.Len() > 0 {
		return allowed
	}
	if h.spilled > 0 {
		return later(allowed, h.refillAfter)
	}
	due, have := h.parkedDue()
	if h.queue.Len() > 0 && (!have || h.queue.items[0].Due.Before(due)) {
		due, have = h.queue.items[0].Due, true
	}
	if h.signals.enabled {
		if sd := h.signals.due(); !have || sd.Before(due) {
			due, have = sd, true
		}
	}
	if !have {
		return time.Time{}
	}
	return later(allowed, due)
}

// urlDue says whether a URL of the host may be polled at now.
func (h *host) urlDue(now time.Time) bool {
	if h.first.Len() > 0 || h.spilled > 0 && !h.refillAfter.After(now) || h.queue.Len() > 0 && !h.queue.items[0].Due.After(now) {
		return true
	}
	due, ok := h.parkedDue()
	return ok && !due.After(now)
}

// queued is how many URLs wait in the host's two heaps, spilled or
// parked.
func (h *host) queued() int { return h.queue.Len() + h.first.Len() + h.spilled + h.parkedRevisits() }

// planned is how many URLs the host's revisit budget is shared among:
// queued ones less those its last fit found held back (heldBack).
func (h *host) planned() int { return max(0, h.queued()-h.fit.held) }

// revisitCount is how many URLs wait for a revisit, parked ones too.
func (h *host) revisitCount() int { return h.queue.Len() + h.parkedRevisits() }

func later(a, b time.Time) time.Time {
	if a.After(b) {
		return a
	}
	return b
}

// frontier holds every known URL in per-host heaps: the URLs never looked
// at by importance (first visits), the others by due time (revisits); and
// the hosts in two heaps (the Mercator design): waiting, by the time a
// host may next be fetched, and ready, by the number of never-polled URLs
// so larger sites are crawled first (Castillo, chapter 4). It is not safe
// for concurrent use; the crawler serialises access.
type frontier struct {
	// residentFP finds the URLs in memory by urlFingerprint, not by the
	// URL: a map of strings gave the collector a pointer more to chase for
	// each URL at every cycle, and hashed and compared the whole URL at
	// each look-up. It maps a fingerprint to the URL's place in all (its
	// URLState.ai), outside the heap: a Go map of pointers was a table the
	// collector marked at every cycle, and each link a poll found missed
	// in it first (most are parked or spilled), at about a microsecond a
	// look-up at 11 million URLs known, under the crawler's lock. Of two
	// URLs of one fingerprint (among 10 million URLs a chance of about 3
	// in a million that any two share one) the first is kept, as the
	// backlog and the parking, keyed by it too, keep one.
	residentFP *fpmap.Map[uint32]
	all        []*URLState // every URL in memory, in no order: samples are drawn from it (selfcheck.go)
	hosts      map[string]*host
	domains    map[string]int // hosts per registrable domain
	waiting    hostHeap       // by readyAt
	ready      hostHeap       // by unpolled, descending

	// firstLess orders first visits (firstVisitOrder); explore is the
	// share of a host's requests kept for them while revisits are due;
	// grace is how far ahead a never-polled URL may be due and still count
	// as a first visit (the spread of new URLs); further, it was put off
	// (a backoff, a peer's poll) and waits with the revisits.
	firstLess func(a, b *URLState) bool
	explore   float64
	grace     time.Duration
	sitemaps  bool // hosts' sitemaps are read (signals.go): a host waits for its next round too

	// spill, when set, keeps first visits beyond each host's head on disk
	// (backlog.go); spillError hears of its failed reads and writes.
	spill *backlog
	// readAhead: a host whose head of first visits runs low is refilled
	// by a read ahead (backlogRead) its worker makes without the lock,
	// not by pop under it, while the head still holds one.
	readAhead  bool
	spillError func(error)
	// park, when set, keeps revisits beyond each host's head on disk
	// (parking.go); parkError hears of its failed reads and writes.
	park      *parking
	parkError func(error)
	save      func(*URLState) // the crawler's, for states the frontier makes

	// servers are the addresses hosts were served from (servers.go).
	servers      map[string]*server
	serverPolicy serverPolicy
	parkedHosts  int
	// placeLater holds hosts out of the heaps while a restart loads the
	// frontier, which places each once at the end (placeAll).
	placeLater bool
}

// placeAll places every host that is not busy.
func (f *frontier) placeAll() {
	f.placeLater = false
	for _, h := range f.hosts {
		f.placeHost(h)
	}
}

// First-visit orders: by backlinks seen so far (IB'), exactly or in
// classes of powers of two (so crawlers that spread their order still
// differ within a class), or breadth-first (by due time, then depth).
const (
	FirstByBacklinks = "backlinks"
	FirstByBreadth   = "breadth"
)

func firstVisitOrder(order string, classes bool) func(a, b *URLState) bool {
	if order == FirstByBreadth {
		return byDueThenDepth
	}
	weight := func(s *URLState) uint32 {
		if classes {
			return uint32(bits.Len32(s.Links))
		}
		return s.Links
	}
	return func(a, b *URLState) bool {
		if wa, wb := weight(a), weight(b); wa != wb {
			return wa > wb
		}
		return byDueThenDepth(a, b)
	}
}

func newFrontier() *frontier {
	f := &frontier{residentFP: fpmap.New[uint32](), hosts: map[string]*host{}, domains: map[string]int{}, servers: map[string]*server{},
		serverPolicy: serverPolicy{conns: 1, delayShare: DefaultServerDelayShare, maxHosts: DefaultMaxHostsPerServer},
		firstLess:    firstVisitOrder(FirstByBacklinks, false), explore: 0.1, grace: time.Second}
	f.waiting.less = func(a, b *host) bool { return a.readyAt().Before(b.readyAt()) }
	f.ready.less = func(a, b *host) bool {
		if a.unpolled != b.unpolled {
			return a.unpolled > b.unpolled
		}
		return a.readyAt().Before(b.readyAt())
	}
	return f
}

// hostKey returns scheme://host[:port] of a normalised URL: its prefix up
// to the path, without parsing it (a restart calls this once per URL, and
// url.Parse took a third of its time); anything unusual is parsed.
func hostKey(u string) string {
	if i := strings.Index(u, "://"); i > 0 {
		rest := u[i+3:]
		end := strings.IndexAny(rest, "/?#")
		if end < 0 {
			end = len(rest)
		}
		if auth := rest[:end]; auth != "" && !strings.ContainsAny(auth, "@%\\ ") && (u[:i] == "http" || u[:i] == "https") {
			return u[:i+3+end]
		}
	}
	return parsedHostKey(u)
}

// parsedHostKey is hostKey by url.Parse.
func parsedHostKey(u string) string {
	p, err := url.Parse(u)
	if err != nil {
		return ""
	}
	return p.Scheme + "://" + p.Host
}

// The frontier's reads, so the rest of the package need not know how it
// keeps URLs and hosts. c.mu held for all.

// get is the state of a normalised URL in memory, nil when unknown or
// spilled (resident fetches a spilled one).
func (f *frontier) get(u string) *URLState {
	if st := f.byFingerprint(urlFingerprint(u)); st != nil && st.URL == u {
		return st
	}
	return nil
}

// byFingerprint is the URL in memory of fingerprint fp, nil if none.
func (f *frontier) byFingerprint(fp uint64) *URLState {
	if ai, ok := f.residentFP.Get(fp); ok {
		return f.all[ai-1]
	}
	return nil
}

// holds says whether a URL of u's fingerprint is in memory: u, or one
// whose place it cannot take.
func (f *frontier) holds(u string) bool { return f.residentFP.Has(urlFingerprint(u)) }

// size is the number of URLs known, spilled ones too.
func (f *frontier) size() int {
	n := len(f.all) + f.parkedCount() // as len(urls)
	if f.spill != nil {
		n += f.spill.ranked.Len()
	}
	return n
}

// states are the URLs known in memory, in no order: spilled ones are not.
func (f *frontier) states() iter.Seq[*URLState] {
	return func(yield func(*URLState) bool) {
		// From the end: a URL dropped as it is yielded (drop) gets the
		// last one's place, which was yielded already.
		for i := len(f.all) - 1; i >= 0; i-- {
			if i >= len(f.all) {
				continue
			}
			if !yield(f.all[i]) {
				return
			}
		}
	}
}

// lookup is the host of a key, nil when unknown (host makes one).
func (f *frontier) lookup(key string) *host { return f.hosts[key] }

// hostCount is the number of hosts known.
func (f *frontier) hostCount() int { return len(f.hosts) }

// allHosts are the hosts known, in no order.
func (f *frontier) allHosts() iter.Seq[*host] {
	return func(yield func(*host) bool) {
		for _, h := range f.hosts {
			if !yield(h) {
				return
			}
		}
	}
}

// revisits are the host's URLs waiting for a revisit, in no order.
func (h *host) revisits() iter.Seq[*URLState] { return slices.Values(h.queue.items) }

// host is the host of a key, made when unknown.
func (f *frontier) host(key string) *host {
	h := f.hosts[key]
	if h == nil {
		h = &host{key: key, index: -1, queue: urlQueue{less: byDueThenDepth}, first: urlQueue{less: f.firstLess}}
		h.signals.enabled = f.sitemaps
		f.hosts[key] = h
		f.domains[domainOf(key)]++
	}
	return h
}

// add puts s in the frontier, or updates the URL if it is known. It
// returns the stored state and whether the URL was new; the state is nil
// when the URL is spilled (backlog.go), or was before. Only a first visit
// due now spills, and only when its host's head is full (or others of the
// host wait spilled already, which come first).
func (f *frontier) add(s URLState) (*URLState, bool) {
	st, isNew, _ := f.addFound(s)
	return st, isNew
}

// addFound is add, and says too whether the URL is spilled, before or
// now: what a link to it may move (linked). A link to a parked URL then
// asks the backlog nothing: that look-up missed, walking its run of the
// backlog's map to the end, for most links of a large crawl (4.6% of the
// CPU at 1.5 million URLs, 2026-11-26).
func (f *frontier) addFound(s URLState) (st *URLState, isNew, spilled bool) {
	fp := urlFingerprint(s.URL)
	if old := f.byFingerprint(fp); old != nil {
		if old.URL != s.URL {
			return nil, false, false // another URL of its fingerprint holds its place
		}
		return old, false, false
	}
	if f.park != nil && f.park.has(fp) {
		return nil, false, false // known, parked on disk
	}
	if f.spill != nil && f.spill.has(fp) {
		return nil, false, true // known, in the backlog
	}
	h := f.host(hostKey(s.URL))
	if f.spill != nil && s.Polls == 0 && !s.Gone && (h.spilled > 0 || h.first.Len() >= f.spill.head) &&
		!s.Due.After(time.Now().Add(f.grace)) {
		f.spill.spill(h.key, fp, &s)
		h.spilled++
		h.known++
		h.unpolled++
		f.placeHost(h)
		return nil, true, true
	}
	return f.addResident(s, h), true, false
}

// addResident puts a URL not known in memory (nor one of its
// fingerprint: f.holds); h is its host.
func (f *frontier) addResident(s URLState, h *host) *URLState {
	st := &s
	f.all = append(f.all, st)
	st.ai = int32(len(f.all))
	f.residentFP.Set(urlFingerprint(s.URL), uint32(st.ai))
	h.known++
	if !st.Gone {
		f.enqueue(h, st)
	}
	return st
}

// drop takes a URL out of the frontier (it must be in no heap).
func (f *frontier) drop(st *URLState) {
	if i := int(st.ai) - 1; i >= 0 && i < len(f.all) && f.all[i] == st {
		if fp := urlFingerprint(st.URL); f.isAt(fp, i) {
			f.residentFP.Delete(fp)
		}
		end := len(f.all) - 1
		if last := f.all[end]; end != i {
			// The last takes its place, and its entry follows.
			f.all[i], last.ai = last, int32(i+1)
			if fp := urlFingerprint(last.URL); f.isAt(fp, end) {
				f.residentFP.Set(fp, uint32(i+1))
			}
		}
		f.all[end] = nil
		f.all = f.all[:end]
	}
	st.ai = 0
	if h := f.hosts[hostKey(st.URL)]; h != nil {
		h.known--
	}
}

// isAt says whether residentFP finds fp at all[i].
func (f *frontier) isAt(fp uint64, i int) bool {
	ai, ok := f.residentFP.Get(fp)
	return ok && int(ai) == i+1
}

// enqueue puts st in its host's queue and the host in the right heap.
func (f *frontier) enqueue(h *host, st *URLState) {
	f.push(h, st, time.Now())
	f.placeHost(h)
}

// push files st in the first-visit heap when it was never looked at and
// is due (within grace), else in the revisit queue.
func (f *frontier) push(h *host, st *URLState, now time.Time) { f.pushWithin(h, st, now, f.grace) }

// pushWithin is push with its own grace: a URL handed back unpolled (left
// to a peer, excluded by robots.txt) and due later waits with the
// revisits, or the host would be handed it again at once. A host with a
// backlog keeps its head of first visits to the backlog's head size: a
// URL already in memory that comes due beyond it (handed back, put due
// by a hint or a sitemap's verdict, read ahead while one came back)
// waits with the revisits, by due time, where pop takes it as soon.
func (f *frontier) pushWithin(h *host, st *URLState, now time.Time, grace time.Duration) {
	st.inFirst = st.Polls == 0 && !st.checking && !st.sampling && !st.Due.After(now.Add(grace)) &&
		(f.spill == nil || h.first.Len() < f.spill.head)
	if st.inFirst {
		heap.Push(&h.first, st)
	} else {
		heap.Push(&h.queue, st)
	}
	if st.Polls == 0 {
		h.unpolled++
	}
}

// remove takes a queued st out of its heap.
func (f *frontier) remove(h *host, st *URLState) {
	if st.qi == 0 {
		return
	}
	if st.inFirst {
		heap.Remove(&h.first, st.qi-1)
	} else {
		heap.Remove(&h.queue, st.qi-1)
	}
	if st.Polls == 0 {
		h.unpolled--
	}
}

// placeHost (re)positions a host that is not busy.
func (f *frontier) placeHost(h *host) {
	if h.busy || h.parked || f.placeLater {
		return
	}
	if h.index >= 0 {
		if h.inReady {
			heap.Remove(&f.ready, h.index)
		} else {
			heap.Remove(&f.waiting, h.index)
		}
	}
	if (h.queued() > 0 || h.signals.enabled) && !h.overServerCap {
		h.inReady = false
		heap.Push(&f.waiting, h)
	}
}

// next returns a host that may send a request at now, marked busy, or the
// time to wait until one may. A nil host with a zero wait means the
// frontier is empty.
func (f *frontier) next(now time.Time) (*host, time.Duration) {
	for f.waiting.Len() > 0 && !f.waiting.items[0].readyAt().After(now) {
		h := heap.Pop(&f.waiting).(*host)
		h.inReady = true
		heap.Push(&f.ready, h)
	}
	for f.ready.Len() > 0 {
		h := heap.Pop(&f.ready).(*host)
		h.inReady = false
		if f.serverBlocks(h, now) {
			continue
		}
		h.busy, h.serverWait = true, time.Time{}
		f.takeServer(h)
		return h, 0
	}
	if f.waiting.Len() > 0 {
		return nil, max(f.waiting.items[0].readyAt().Sub(now), 0)
	}
	if f.parkedHosts > 0 {
		return nil, 50 * time.Millisecond // hosts wait for a request in flight to end
	}
	return nil, 0
}

// pop takes the next URL of a busy host: a due revisit, or the most
// important first visit when none is due. While revisits are due, first
// visits still get a share explore of the requests (a credit that each
// request adds to), so a site larger than the budget keeps growing.
func (f *frontier) pop(h *host, now time.Time) *URLState {
	if due, ok := h.parkedDue(); ok && !due.After(now) && (h.queue.Len() == 0 || h.queue.items[0].Due.After(due)) {
		// A parked revisit is due before every one in memory.
		f.unparkDue(h, now)
	}
	revisit := h.queue.Len() > 0 && !h.queue.items[0].Due.After(now)
	var st *URLState
	h.wantRead = false
	if h.spilled > 0 && h.first.Len() <= f.spill.head/4 && !h.refillAfter.After(now) {
		if f.readAhead && h.first.Len() > 0 {
			h.wantRead = true
		} else {
			f.refill(h, now)
		}
	}
	switch {
	case h.first.Len() > 0 && (!revisit || h.credit >= 1):
		st = heap.Pop(&h.first).(*URLState)
		h.credit = max(0, h.credit-1)
	case h.queue.Len() > 0:
		st = heap.Pop(&h.queue).(*URLState)
	default:
		return nil
	}
	if h.hasFirst() {
		h.credit = min(h.credit+f.exploreShare(h), 2)
	}
	if st.Polls == 0 {
		h.unpolled--
	}
	return st
}

// exploreShare is the share of a host's requests first visits get while
// revisits are due: explore, or the share of the host's URLs never
// polled when that is more, up to maxExplore. A crawl that starts (or a
// site that grows) finds most of its URLs unpolled; revisits of the few
// polled seconds ago would otherwise take nine requests in ten while the
// rest of the site waits, and a host of 1,000 pages at one request a
// second would take hours to be seen once (issue 28's cold start).
func (f *frontier) exploreShare(h *host) float64 {
	if f.explore <= 0 {
		return 0
	}
	return max(f.explore, min(maxExplore, float64(h.unpolled)/float64(max(h.known, 1))))
}

// maxExplore bounds exploreShare: revisits keep at least half the
// requests, however many URLs wait for a first visit (a trap, a huge site).
const maxExplore = 0.5

// release ends a host's request: it may send the next one at notBefore.
func (f *frontier) release(h *host, notBefore time.Time) {
	f.releaseServer(h, time.Now(), notBefore, true)
	h.busy = false
	h.nextAllowed = notBefore
	f.placeHost(h)
}

// releaseUnused hands back a busy host that sent no request.
func (f *frontier) releaseUnused(h *host) {
	f.releaseServer(h, time.Now(), h.nextAllowed, false)
	h.busy = false
	f.placeHost(h)
}

// reschedule puts a polled URL back with its new due time, or leaves it
// out when it is gone.
func (f *frontier) reschedule(h *host, st *URLState) {
	if st.Gone {
		return
	}
	if f.parkable(h, st) {
		f.parkState(h, st)
		return
	}
	f.pushWithin(h, st, time.Now(), 0)
}

// setDue moves a URL to a new due time, and to the heap it now belongs in
// when it is queued; a URL being polled just carries the time.
func (f *frontier) setDue(st *URLState, due time.Time) {
	st.Due = due
	f.refile(st)
}

// refile puts a queued URL whose due time, state or importance changed
// back in the right place.
func (f *frontier) refile(st *URLState) {
	if st.qi == 0 {
		return
	}
	h := f.hosts[hostKey(st.URL)]
	f.remove(h, st)
	f.push(h, st, time.Now())
	f.placeHost(h)
}

// linked counts one more page linking to u, whose state is st (nil when
// spilled; a parked URL's links are not counted): a queued first visit
// moves up its heap, a spilled one may move up the backlog.
func (f *frontier) linked(u string, st *URLState) {
	if st == nil {
		if f.spill != nil {
			f.spill.linked(u)
		}
		return
	}
	if st.Links == ^uint32(0) {
		return
	}
	st.Links++
	if st.qi > 0 && st.inFirst {
		heap.Fix(&f.hosts[hostKey(st.URL)].first, st.qi-1)
	}
}

func byDueThenDepth(a, b *URLState) bool {
	if !a.Due.Equal(b.Due) {
		return a.Due.Before(b.Due)
	}
	return a.Depth < b.Depth
}

// urlQueue is a heap of URL states in the order less gives; each state
// knows its place (qi), so it can be moved or removed.
type urlQueue struct {
	items []*URLState
	less  func(a, b *URLState) bool
}

func (q urlQueue) Len() int           { return len(q.items) }
func (q urlQueue) Less(i, j int) bool { return q.less(q.items[i], q.items[j]) }
func (q urlQueue) Swap(i, j int) {
	q.items[i], q.items[j] = q.items[j], q.items[i]
	q.items[i].qi, q.items[j].qi = i+1, j+1
}
func (q *urlQueue) Push(x any) {
	st := x.(*URLState)
	st.qi = len(q.items) + 1
	q.items = append(q.items, st)
}
func (q *urlQueue) Pop() any {
	old := q.items
	x := old[len(old)-1]
	old[len(old)-1] = nil
	q.items = old[:len(old)-1]
	x.qi = 0
	return x
}

type hostHeap struct {
	items []*host
	less  func(a, b *host) bool
}

func (h hostHeap) Len() int           { return len(h.items) }
func (h hostHeap) Less(i, j int) bool { return h.less(h.items[i], h.items[j]) }
func (h hostHeap) Swap(i, j int) {
	h.items[i], h.items[j] = h.items[j], h.items[i]
	h.items[i].index, h.items[j].index = i, j
}
func (h *hostHeap) Push(x any) {
	n := x.(*host)
	n.index = len(h.items)
	h.items = append(h.items, n)
}
func (h *hostHeap) Pop() any {
	old := h.items
	x := old[len(old)-1]
	old[len(old)-1] = nil
	h.items = old[:len(old)-1]
	x.index = -1
	return x
}

// domainOf is the registrable domain of a host key (scheme://host[:port]),
// or its host name when it has none (an IP address, a single label).
func domainOf(key string) string {
	name := key[strings.Index(key, "://")+3:]
	if h, _, err := net.SplitHostPort(name); err == nil {
		name = h
	}
	if d, err := publicsuffix.EffectiveTLDPlusOne(name); err == nil {
		return d
	}
	return name
}
