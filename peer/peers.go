package peer

import (
	"net/url"
	"slices"
	"sort"
	"strings"
	"sync"
	"time"

	"github.com/cocrawl/cocrawl/peer/rho"
	"github.com/cocrawl/cocrawl/protocol"
	"github.com/cocrawl/cocrawl/webevents"
)

// MergeSchedule sets how often peers are merged from. Zero fields take the
// defaults named.
type MergeSchedule struct {
	// MergeMin and MergeMax bound the wait between two merges from one
	// peer, which follows what its merges bring (done): it shrinks while
	// they bring more than MergeTarget events and grows while they bring
	// fewer, so a peer whose web changes in seconds is merged every
	// second or two and one whose web changes in days every half hour.
	// Defaults 250 ms (the most a peer is asked of its day file: four
	// requests a second, answered 304 or with a small range, and only
	// while its events come that fast) and 30 min.
	MergeMin, MergeMax time.Duration
	// BackoffBase and BackoffMax bound the wait after failed merges, which
	// doubles with each consecutive failure. Defaults 30 s and 1 h.
	BackoffBase, BackoffMax time.Duration
	// RequestRate is the peer's request budget (Config.RequestsPerSecond;
	// 0: none), which merges pay from as polls do: merges from all peers
	// together then take at most rho.MergeBudgetShare of it.
	RequestRate float64
}

func (s *MergeSchedule) defaults() {
	def := func(d *time.Duration, v time.Duration) {
		if *d <= 0 {
			*d = v
		}
	}
	def(&s.MergeMin, DefaultMergeMin)
	def(&s.MergeMax, 30*time.Minute)
	def(&s.BackoffBase, 30*time.Second)
	def(&s.BackoffMax, time.Hour)
	s.MergeMax = max(s.MergeMax, s.MergeMin)
}

// peerSet is the peer queue of algorithm 4.1: peers are merged round robin,
// each when its wait is over, one merge at a time per peer.
type peerSet struct {
	mu      sync.Mutex
	sched   MergeSchedule
	rows    map[string]*Record
	busy    map[string]bool
	evicted []string // rows dropped to make room, to delete from the store (takeEvicted)
	// backing: per row, per host of its special prefixes ("http://host/"),
	// the latest lpd of a record of its own polls merged from it.
	backing map[string]map[string]time.Time
	// polls: per row, per host (scheme://host[:port]), the latest lpd of a
	// record of its own polls merged from it (split.go).
	polls map[string]map[string]int64
	// perMerge is the requests a merge makes (its robots.shr and each day
	// file it reads), a moving mean over merges: the budget floor counts
	// requests, not merges. 0 before the first.
	perMerge float64
}

func newPeerSet(s MergeSchedule) *peerSet {
	s.defaults()
	return &peerSet{sched: s, rows: map[string]*Record{}, busy: map[string]bool{}, backing: map[string]map[string]time.Time{},
		polls: map[string]map[string]int64{}}
}

// load puts a stored row back; a merge that was in flight when the peer
// stopped is simply due again.
func (s *peerSet) load(r Record) {
	s.mu.Lock()
	defer s.mu.Unlock()
	cp := r
	s.rows[r.URL] = &cp
}

// add makes shrURL known; it returns the new row, or false when the peer
// was already known.
func (s *peerSet) add(shrURL, source string, now time.Time) (Record, bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if _, ok := s.rows[shrURL]; ok {
		return Record{}, false
	}
	r := &Record{URL: shrURL, Source: source, Added: now, Interval: Duration(s.sched.MergeMin), NextDue: now}
	s.rows[shrURL] = r
	return *r, true
}

// Bounds on what discovery can make a peer keep: peers found over libp2p
// are not vetted, so a flood of identities must not grow the table (and
// the merges it schedules) without end. Static peers are not counted out.
const (
	maxPeers = 1024
	maxAddrs = 16
)

// addP2P makes a peer found over libp2p known, or refreshes its addresses.
func (s *peerSet) addP2P(key, id string, addrs []string, source string, now time.Time) (Record, bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if r, ok := s.rows[key]; ok {
		if len(addrs) > 0 {
			r.P2PAddrs = addrs[:min(len(addrs), maxAddrs)]
		}
		return *r, false
	}
	if len(s.rows) >= maxPeers {
		// A community that large, or a flood of fake IDs: make room by
		// evicting a discovered row that had its chance and gave nothing.
		victim := s.evictable(now)
		if victim == "" {
			return Record{}, false
		}
		delete(s.rows, victim)
		delete(s.backing, victim)
		delete(s.polls, victim)
		s.evicted = append(s.evicted, victim)
	}
	if len(addrs) > maxAddrs {
		addrs = addrs[:maxAddrs]
	}
	r := &Record{URL: key, Source: source, Added: now, PeerID: id, P2PAddrs: addrs,
		Interval: Duration(s.sched.MergeMin), NextDue: now}
	s.rows[key] = r
	return *r, true
}

// evictGrace is how long a discovered peer has to become useful before it
// may make room for a newcomer.
const evictGrace = 10 * time.Minute

// evictable returns the oldest discovered row, not busy, older than
// evictGrace, that never merged successfully or never gave an event; ""
// if none. Static peers and peers that gave events are never evicted.
// s.mu held.
func (s *peerSet) evictable(now time.Time) string {
	victim := ""
	var oldest time.Time
	for k, r := range s.rows {
		if r.Source == "static" || r.Self || s.busy[k] || now.Sub(r.Added) < evictGrace {
			continue
		}
		if r.Merges > 0 && r.Gained > 0 {
			continue
		}
		if victim == "" || r.Added.Before(oldest) {
			victim, oldest = k, r.Added
		}
	}
	return victim
}

// takeEvicted returns the rows evicted since the last call.
func (s *peerSet) takeEvicted() []string {
	s.mu.Lock()
	defer s.mu.Unlock()
	out := s.evicted
	s.evicted = nil
	return out
}

// next takes the peer most overdue for a merge and marks it busy. When none
// is due it returns false and how long until one is (0: no peer at all).
func (s *peerSet) next(now time.Time) (Record, bool, time.Duration) {
	s.mu.Lock()
	defer s.mu.Unlock()
	var best *Record
	var wait time.Duration
	for u, r := range s.rows {
		if r.Self || s.busy[u] || !r.Distrusted.IsZero() {
			continue
		}
		if r.NextDue.After(now) {
			if d := r.NextDue.Sub(now); wait == 0 || d < wait {
				wait = d
			}
			continue
		}
		if best == nil || r.NextDue.Before(best.NextDue) ||
			r.NextDue.Equal(best.NextDue) && r.LastAttempt.Before(best.LastAttempt) {
			best = r
		}
	}
	if best == nil {
		return Record{}, false, wait
	}
	s.busy[best.URL] = true
	return *best, true, 0
}

// mergeOutcome is what the loop learnt from one merge.
type mergeOutcome struct {
	err        error
	gained     int64
	records    int64
	bytes      int64
	took       time.Duration
	requests   int // HTTP requests it made: the robots.shr and each day file
	crawler    string
	version    string
	special    []string
	repository string
	rho        string
	self       bool
	peerID     string
	p2pAddrs   []string
}

// done records a merge and schedules the next one; it returns the row to
// persist.
func (s *peerSet) done(shrURL string, o mergeOutcome, now time.Time) Record {
	s.mu.Lock()
	defer s.mu.Unlock()
	delete(s.busy, shrURL)
	r := s.rows[shrURL]
	if r == nil {
		return Record{}
	}
	r.LastAttempt = now
	r.NetworkTimeMS += o.took.Milliseconds()
	r.Bytes += o.bytes
	r.Records += o.records
	iv := time.Duration(r.Interval)
	if o.err != nil {
		r.Failures++
		r.Consecutive++
		r.LastError = o.err.Error()
		b := s.sched.BackoffBase
		for i := 1; i < r.Consecutive && b < s.sched.BackoffMax; i++ {
			b *= 2
		}
		r.NextDue = now.Add(max(iv, min(b, s.sched.BackoffMax)))
		return *r
	}
	r.Merges++
	// Not a row's first merge: it reads the days back (protocol
	// Merger.BackDays), which later merges do not.
	if o.requests > 0 && r.Merges > 1 {
		if s.perMerge == 0 {
			s.perMerge = float64(o.requests)
		} else {
			s.perMerge += (float64(o.requests) - s.perMerge) / 16
		}
	}
	r.Consecutive, r.LastError, r.LastSuccess = 0, "", now
	r.Gained += o.gained
	r.LastGain = o.gained
	r.Crawler, r.Version, r.Repository, r.Rho, r.Self = o.crawler, o.version, o.repository, o.rho, o.self
	r.Special = o.special
	if r.Source == "static" { // over HTTP these are claims, kept to show
		r.PeerID, r.P2PAddrs = o.peerID, o.p2pAddrs
	}
	iv = time.Duration(float64(iv) * rho.MergeStep(o.gained))
	iv = min(max(iv, s.sched.MergeMin, s.budgetFloor()), s.sched.MergeMax)
	r.Interval = Duration(iv)
	r.NextDue = now.Add(iv)
	return *r
}

// budgetFloor is the shortest wait between merges from one peer that keeps
// merges from all healthy peers within rho.MergeBudgetShare of the request
// budget, counted in the requests a merge makes (perMerge: about three in
// the regime sweep's budget cells); 0 without one. s.mu held.
func (s *peerSet) budgetFloor() time.Duration {
	if s.sched.RequestRate <= 0 {
		return 0
	}
	n := 0
	for _, r := range s.rows {
		if !r.Self && r.Healthy() {
			n++
		}
	}
	return time.Duration(float64(max(n, 1)) * max(1, s.perMerge) / (rho.MergeBudgetShare * s.sched.RequestRate) * float64(time.Second))
}

// DefaultMergeMin is MergeSchedule.MergeMin's default: a web whose pages
// change every few seconds loses a share 1 − e^(−λd) of what a merge
// brings to its delay d, so merges keep up with events down to a quarter
// second; the wait grows as soon as they bring fewer than MergeTarget.
const DefaultMergeMin = 250 * time.Millisecond

// MergeTarget is the events a merge should bring (rho.MergeTarget): the
// wait between merges from a peer settles where they bring about this
// many, by rho.MergeStep.
const MergeTarget = rho.MergeTarget

// snapshot returns the rows sorted by URL.
func (s *peerSet) snapshot() []Record {
	s.mu.Lock()
	defer s.mu.Unlock()
	out := make([]Record, 0, len(s.rows))
	for _, r := range s.rows {
		cp := *r
		cp.Special = append([]string(nil), r.Special...)
		out = append(out, cp)
	}
	sort.Slice(out, func(i, j int) bool { return out[i].URL < out[j].URL })
	return out
}

// counts returns how many peers are known (itself excluded) and healthy.
func (s *peerSet) counts() (known, healthy int) {
	s.mu.Lock()
	defer s.mu.Unlock()
	for _, r := range s.rows {
		if r.Self {
			continue
		}
		known++
		if r.Healthy() {
			healthy++
		}
	}
	return known, healthy
}

// delegated returns the special prefixes this peer leaves to its peers:
// those of peers whose last merge succeeded, that have shared events
// before, and that were merged recently, and only for hosts each peer
// shows it polls: records of its own polls (its cid) of that host, merged
// from it within SpecialBacking. A peer that claims a prefix but shares
// nothing of it, or goes away, does not stop us polling it.
func (s *peerSet) delegated(now time.Time) []string {
	s.mu.Lock()
	defer s.mu.Unlock()
	var out []string
	for key, r := range s.rows {
		out = append(out, s.honoured(key, r, now)...)
	}
	sort.Strings(out)
	return slices.Compact(out)
}

// honoured is the special prefixes of a row that are left to it now (see
// delegated). s.mu held.
func (s *peerSet) honoured(key string, r *Record, now time.Time) []string {
	if r.Self || !r.Healthy() || r.Gained == 0 || now.Sub(r.LastSuccess) > 3*s.sched.MergeMax || !r.Distrusted.IsZero() {
		return nil
	}
	var out []string
	for _, p := range specials(r.Special) {
		if seen, ok := s.backing[key][hostPrefix(p)]; ok && now.Sub(seen) <= SpecialBacking {
			out = append(out, p)
		}
	}
	return out
}

// nudge moves the next merge forward from each peer that u is left to (as
// delegated decides), to now but not sooner than gap after its last
// attempt; it reports whether u is left to a peer. A publisher's IndexNow
// ping then brings its change by merge within about gap.
func (s *peerSet) nudge(u string, now time.Time, gap time.Duration) bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	left := false
	for key, r := range s.rows {
		if !slices.ContainsFunc(s.honoured(key, r, now), func(p string) bool { return strings.HasPrefix(u, p) }) {
			continue
		}
		left = true
		if at := maxTime(now, r.LastAttempt.Add(gap)); at.Before(r.NextDue) {
			r.NextDue = at
		}
	}
	return left
}

func maxTime(a, b time.Time) time.Time {
	if a.After(b) {
		return a
	}
	return b
}

// SpecialBacking is how recent a peer's own poll of a host must be for its
// special prefixes on that host to be honoured.
const SpecialBacking = 24 * time.Hour

// MaxSpecial is how many special prefixes of one peer are honoured; the
// rest are ignored.
const MaxSpecial = 64

// learnControl returns a check of a merge's robots.shr that, once check
// (if any) passes, notes the peer's crawler and special prefixes in its
// row before the records come, so the first merge from a peer already
// shows which hosts it polls itself (backs).
func (s *peerSet) learnControl(from string, check func(*protocol.ShareControl) error) func(*protocol.ShareControl) error {
	return func(sc *protocol.ShareControl) error {
		if check != nil {
			if err := check(sc); err != nil {
				return err
			}
		}
		s.mu.Lock()
		defer s.mu.Unlock()
		if r := s.rows[rowKey(from)]; r != nil {
			r.Crawler, r.Special = sc.Crawler, sc.Special
		}
		return nil
	}
}

// backs notes, from a batch merged from a source, the hosts of its special
// prefixes that it polled itself: records with its own cid.
func (s *peerSet) backs(from string, batch []webevents.Event, now time.Time) {
	s.mu.Lock()
	defer s.mu.Unlock()
	key := rowKey(from)
	r := s.rows[key]
	if r == nil || r.Crawler == "" || len(r.Special) == 0 {
		return
	}
	var hosts []string
	for _, p := range specials(r.Special) {
		hosts = append(hosts, hostPrefix(p))
	}
	m := s.backing[key]
	for i := range batch {
		e := &batch[i]
		if e.CID != r.Crawler {
			continue // relayed: someone else's poll
		}
		for _, h := range hosts {
			if strings.HasPrefix(e.URL, h) {
				if m == nil {
					m = map[string]time.Time{}
					s.backing[key] = m
				}
				if t := time.Unix(min(e.LPD, now.Unix()), 0); t.After(m[h]) {
					m[h] = t
				}
			}
		}
	}
}

// specials returns the valid prefixes of a peer's special list, each ending
// at a host boundary, at most MaxSpecial.
func specials(raw []string) []string {
	var out []string
	for _, p := range raw {
		if n, ok := normalSpecial(p); ok && len(out) < MaxSpecial {
			out = append(out, n)
		}
	}
	return out
}

// normalSpecial checks a special prefix and writes it as crawled URLs are
// written: a lower-case scheme and host without the default port, and a
// path that starts with "/", so the prefix ends at a host boundary.
// "http://example.com" becomes "http://example.com/", which does not cover
// http://example.com.evil.net/; "http://" and relative prefixes are
// refused.
func normalSpecial(p string) (string, bool) {
	u, err := url.Parse(p)
	if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" || u.User != nil || u.Opaque != "" {
		return "", false
	}
	host := strings.ToLower(u.Host)
	host = strings.TrimSuffix(host, map[string]string{"http": ":80", "https": ":443"}[strings.ToLower(u.Scheme)])
	path := u.EscapedPath()
	if !strings.HasPrefix(path, "/") {
		path = "/" + path
	}
	return strings.ToLower(u.Scheme) + "://" + host + path, true
}

// hostPrefix is the "scheme://host/" of a normalised special prefix.
func hostPrefix(p string) string {
	rest := p[strings.Index(p, "://")+3:]
	return p[:len(p)-len(rest)+strings.IndexByte(rest, '/')+1]
}

// dueBy brings a peer's next merge forward to at, if it is later.
func (s *peerSet) dueBy(shrURL string, at time.Time) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if r := s.rows[shrURL]; r != nil && at.Before(r.NextDue) {
		r.NextDue = at
	}
}

// release gives back a peer taken by next without merging from it.
func (s *peerSet) release(shrURL string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	delete(s.busy, shrURL)
}

// judge records a spot-check verdict against a source's row. It returns
// the row to save (empty when the source is not in the table) and whether
// the verdict made the source distrusted.
func (s *peerSet) judge(from string, v Verdict, t *TrustConfig, now time.Time) (Record, bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	r := s.rows[rowKey(from)]
	if r == nil {
		return Record{}, false
	}
	switch v {
	case Confirmed:
		r.Confirmed++
	case Refuted:
		r.Refuted++
	default:
		r.Inconclusive++
	}
	if r.Distrusted.IsZero() && t.distrusts(r) {
		r.Distrusted = now
		return *r, true
	}
	return *r, false
}

// vouches says whether a source in the table is vouched for: its checks
// were confirmed often enough and rarely refuted (Trust.vouches).
func (s *peerSet) vouches(from string, t *TrustConfig) bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	r := s.rows[rowKey(from)]
	return r != nil && t.vouches(r)
}

// withholds says whether records merged from a source stay out of this
// peer's day files: the source is in the table, distrusted or not yet
// vouched for. Imports and unknown sources are published.
func (s *peerSet) withholds(from string, t *TrustConfig) bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	r := s.rows[rowKey(from)]
	return r != nil && !t.vouches(r)
}

// distrusted counts the distrusted peers.
func (s *peerSet) distrusted() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	n := 0
	for _, r := range s.rows {
		if !r.Distrusted.IsZero() {
			n++
		}
	}
	return n
}
