package crawl

import (
	"container/heap"
	"golang.org/x/net/publicsuffix"
	"net"
	"net/url"
	"strings"
	"time"
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
	ETag     string        `json:"e,omitempty"` // validators for conditional requests
	LastMod  string        `json:"m,omitempty"`
	Excluded bool          `json:"x,omitempty"` // disallowed by robots.txt when last checked; asked again when it expires
	// HostNext is, as of this URL's last poll, when its host could next
	// be asked (Unix ms): after a restart the host waits until the latest
	// of its URLs' HostNext, so the delay holds across restarts.
	HostNext int64 `json:"hn,omitempty"`
	// Seen is when this crawler last looked at the URL (Unix ms), and
	// Rate what its looks have shown of how often it changes.
	Seen int64      `json:"s,omitempty"`
	Rate changeRate `json:"cr,omitzero"`

	qi       int  // 1 + position in its host's queue; 0 when not queued (being polled, gone)
	checking bool // Recheck asked for a poll: hints do not put it off
}

// host is one host's queue and politeness state. Times are absolute.
type host struct {
	key         string // scheme://host[:port]
	queue       urlHeap
	nextAllowed time.Time     // not before: the per-host delay, backoff
	busy        bool          // a fetch or robots.txt request is in flight
	robots      *Robots       // nil until fetched
	robotsUntil time.Time     // when the robots.txt must be fetched again
	lastFetch   time.Duration // how long the last download took
	failures    int           // consecutive 429, 5xx or network errors
	unpolled    int           // queued URLs never polled: "larger sites first"
	known       int           // URLs of this host in the frontier
	index       int           // position in the ready or waiting heap, -1 if in none
	inReady     bool
}

// readyAt is when the host could next send a request.
func (h *host) readyAt() time.Time {
	if len(h.queue) == 0 {
		return time.Time{}
	}
	return later(h.nextAllowed, h.queue[0].Due)
}

func later(a, b time.Time) time.Time {
	if a.After(b) {
		return a
	}
	return b
}

// frontier holds every known URL in per-host queues ordered by due time,
// and the hosts in two heaps (the Mercator design): waiting, by the time a
// host may next be fetched, and ready, by the number of never-polled URLs
// so larger sites are crawled first (Castillo, chapter 4). It is not safe
// for concurrent use; the crawler serialises access.
type frontier struct {
	urls    map[string]*URLState
	hosts   map[string]*host
	domains map[string]int // hosts per registrable domain
	waiting hostHeap       // by readyAt
	ready   hostHeap       // by unpolled, descending
}

func newFrontier() *frontier {
	f := &frontier{urls: map[string]*URLState{}, hosts: map[string]*host{}, domains: map[string]int{}}
	f.waiting.less = func(a, b *host) bool { return a.readyAt().Before(b.readyAt()) }
	f.ready.less = func(a, b *host) bool {
		if a.unpolled != b.unpolled {
			return a.unpolled > b.unpolled
		}
		return a.readyAt().Before(b.readyAt())
	}
	return f
}

// hostKey returns scheme://host[:port] of a normalised URL.
func hostKey(u string) string {
	p, err := url.Parse(u)
	if err != nil {
		return ""
	}
	return p.Scheme + "://" + p.Host
}

func (f *frontier) host(key string) *host {
	h := f.hosts[key]
	if h == nil {
		h = &host{key: key, index: -1}
		f.hosts[key] = h
		f.domains[domainOf(key)]++
	}
	return h
}

// add puts s in the frontier, or updates the URL if it is known. It
// returns the stored state and whether the URL was new.
func (f *frontier) add(s URLState) (*URLState, bool) {
	if old := f.urls[s.URL]; old != nil {
		return old, false
	}
	st := &s
	f.urls[s.URL] = st
	h := f.host(hostKey(s.URL))
	h.known++
	if !st.Gone {
		f.enqueue(h, st)
	}
	return st, true
}

// enqueue puts st in its host's queue and the host in the right heap.
func (f *frontier) enqueue(h *host, st *URLState) {
	heap.Push(&h.queue, st)
	if st.Polls == 0 {
		h.unpolled++
	}
	f.placeHost(h)
}

// placeHost (re)positions a host that is not busy.
func (f *frontier) placeHost(h *host) {
	if h.busy {
		return
	}
	if h.index >= 0 {
		if h.inReady {
			heap.Remove(&f.ready, h.index)
		} else {
			heap.Remove(&f.waiting, h.index)
		}
	}
	if len(h.queue) > 0 {
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
	if f.ready.Len() > 0 {
		h := heap.Pop(&f.ready).(*host)
		h.busy, h.inReady = true, false
		return h, 0
	}
	if f.waiting.Len() > 0 {
		return nil, f.waiting.items[0].readyAt().Sub(now)
	}
	return nil, 0
}

// pop takes the most due URL of a busy host.
func (f *frontier) pop(h *host) *URLState {
	if len(h.queue) == 0 {
		return nil
	}
	st := heap.Pop(&h.queue).(*URLState)
	if st.Polls == 0 {
		h.unpolled--
	}
	return st
}

// release ends a host's request: it may send the next one at notBefore.
func (f *frontier) release(h *host, notBefore time.Time) {
	h.busy = false
	h.nextAllowed = notBefore
	f.placeHost(h)
}

// reschedule puts a polled URL back with its new due time, or leaves it
// out when it is gone.
func (f *frontier) reschedule(h *host, st *URLState) {
	if st.Gone {
		return
	}
	heap.Push(&h.queue, st)
	if st.Polls == 0 {
		h.unpolled++
	}
}

// setDue moves a URL to a new due time, within its host's queue when it
// is queued; a URL being polled just carries the time.
func (f *frontier) setDue(st *URLState, due time.Time) {
	st.Due = due
	if st.qi == 0 {
		return
	}
	h := f.hosts[hostKey(st.URL)]
	heap.Fix(&h.queue, st.qi-1)
	f.placeHost(h)
}

// urlHeap orders a host's URLs by due time, then depth.
type urlHeap []*URLState

func (q urlHeap) Len() int { return len(q) }
func (q urlHeap) Less(i, j int) bool {
	if !q[i].Due.Equal(q[j].Due) {
		return q[i].Due.Before(q[j].Due)
	}
	return q[i].Depth < q[j].Depth
}
func (q urlHeap) Swap(i, j int) {
	q[i], q[j] = q[j], q[i]
	q[i].qi, q[j].qi = i+1, j+1
}
func (q *urlHeap) Push(x any) {
	st := x.(*URLState)
	st.qi = len(*q) + 1
	*q = append(*q, st)
}
func (q *urlHeap) Pop() any {
	old := *q
	x := old[len(old)-1]
	old[len(old)-1] = nil
	*q = old[:len(old)-1]
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
