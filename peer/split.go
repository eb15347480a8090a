package peer

import (
	"sort"
	"strconv"
	"strings"
	"time"

	"github.com/cocrawl/cocrawl/crawl"
	"github.com/cocrawl/cocrawl/webevents"
)

// The rendezvous split (issue 28): the peers that poll a host share its
// URLs by highest-random-weight hashing (crawl.Crawler.Rendezvous), so a
// URL is polled by its owner and merged by the others, and the others poll
// it only when the owner's record did not come in time. A peer takes part
// for a host only while it shows, by records of its own polls of that host
// merged from it lately (within pollerWindow), that it polls it; and while
// it is healthy, trusted, and polls at all (a mirror advertises rho 0).
// A peer that leaves, stops polling a host or is distrusted drops out of
// the split at the next refresh (every sampleEvery), and its URLs go to
// the next in rank.

// pollerWindow is how recent a peer's own poll of a host must be for the
// peer to share the host's URLs: a peer polls every host it crawls at
// least this often, unchanged pages included (it publishes confirmations).
const pollerWindow = 10 * time.Minute

// maxSplitHosts bounds the hosts noted per peer: a peer's records name
// whatever hosts it likes, and the note is kept only for hosts this peer
// crawls (inScope) and only this many of them.
const maxSplitHosts = 100_000

// polledBy notes the hosts whose pages a merged batch shows the peer
// polled itself (records under its own cid), among those inScope admits
// (the hosts this peer crawls itself: the split is of nothing else).
// s.mu not held.
func (s *peerSet) polledBy(from string, batch []webevents.Event, inScope func(url string) bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	key := rowKey(from)
	r := s.rows[key]
	if r == nil || r.Crawler == "" {
		return
	}
	m := s.polls[key]
	for i := range batch {
		e := &batch[i]
		if e.CID != r.Crawler {
			continue // relayed: someone else's poll
		}
		h := urlHost(e.URL)
		if h == "" {
			continue
		}
		if _, known := m[h]; !known && (len(m) >= maxSplitHosts || !inScope(e.URL)) {
			continue
		}
		if m == nil {
			m = map[string]int64{}
			s.polls[key] = m
		}
		if e.LPD > m[h] {
			m[h] = e.LPD
		}
	}
}

// pollers returns, by host key, the peers that take part in its split
// now, sorted by name: their crawlers (cids), and how late their records
// may come: splitGapMerges of the wait between merges from them.
func (s *peerSet) pollers(now time.Time) map[string][]crawl.SplitPeer {
	s.mu.Lock()
	defer s.mu.Unlock()
	out := map[string][]crawl.SplitPeer{}
	since := now.Add(-pollerWindow).Unix()
	for key, r := range s.rows {
		if r.Self || !r.Healthy() || r.Crawler == "" || !polls(r.Rho) {
			continue
		}
		gap := splitGapMerges * time.Duration(r.Interval)
		for h, lpd := range s.polls[key] {
			if lpd >= since {
				out[h] = append(out[h], crawl.SplitPeer{Name: r.Crawler, Gap: gap})
			}
		}
	}
	// Notes past the window count for nothing: forget them, so hosts a
	// peer stopped polling leave the table.
	for _, m := range s.polls {
		for h, lpd := range m {
			if lpd < since {
				delete(m, h)
			}
		}
	}
	for _, ps := range out {
		sort.Slice(ps, func(i, j int) bool { return ps[i].Name < ps[j].Name })
	}
	return out
}

// splitGapMerges is how many merge intervals a peer's record of a poll
// may take to come before the next in rank polls the URL itself: one
// for the merge, one for the poll's own lateness, one to spare.
const splitGapMerges = 3

// polls says whether a peer that advertises rho polls at all: a mirror
// (rho 0) does not. An unreadable value counts as polling; its records
// decide.
func polls(rho string) bool {
	r, err := strconv.ParseFloat(strings.TrimSpace(rho), 64)
	return err != nil || r > 0
}

// urlHost is scheme://host[:port] of a URL, as the crawler keys hosts; ""
// when it has none.
func urlHost(u string) string {
	i := strings.Index(u, "://")
	if i < 0 {
		return ""
	}
	rest := u[i+3:]
	if j := strings.IndexAny(rest, "/?#"); j >= 0 {
		rest = rest[:j]
	}
	if rest == "" {
		return ""
	}
	return u[:i+3] + rest
}

// refreshSplit hands the crawler the peers it shares each host with.
func (p *Peer) refreshSplit(now time.Time) {
	if p.cfg.NoSplit {
		return
	}
	p.crawler.Rendezvous(p.cid, p.peers.pollers(now))
}
