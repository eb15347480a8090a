package crawl

import (
	"hash/maphash"
	"time"

	"github.com/cocrawl/cocrawl/crawl/revisit"
)

// offset is how long this crawler puts off revisits of u: a share of
// Config.Spread fixed by u and the crawler's random hash seed, so every
// crawler has its own order (the thesis gives each crawler its own random
// order) and keeps it from one cycle to the next. A seeded maphash, not a
// salted FNV: with FNV, URLs that differ in their last bytes were ordered
// alike by every crawler (TestSpreadOrders).
//
// With a rendezvous set (Rendezvous), the order is the community's: see
// rendezvousWait.
func (c *Crawler) offset(u string) time.Duration {
	if wait, split := c.rendezvousWait(u); split {
		return wait
	}
	return c.randomOffset(u, c.cfg.Spread)
}

// randomOffset is this crawler's own share of spread for u.
func (c *Crawler) randomOffset(u string, spread time.Duration) time.Duration {
	if spread <= 0 {
		return 0
	}
	return time.Duration(maphash.String(c.order, u) % uint64(spread))
}

// revisitOffset is the offset of a revisit after an interval iv. A random
// order's is at most half the interval, so a page that should be seen
// every 10 s is not put off by a spread made for pages seen every few
// minutes (issue 28: a 300 s spread left pages that change every 10 s
// unpolled for minutes). A rendezvous order's owner has none; the others
// wait for the record of each peer ranked above them, which is only ever
// spent when that peer did not poll.
func (c *Crawler) revisitOffset(u string, iv time.Duration) time.Duration {
	if wait, split := c.rendezvousWait(u); split {
		return wait
	}
	return c.randomOffset(u, min(c.cfg.Spread, iv/2))
}

// The rendezvous split (issue 28). Peers that merge each other count each
// other's polls as visits (Hint), so a URL settles on the peer whose
// revisit comes first. With random orders, which peer that is depends on
// two random offsets: where they fall close together (closer than a
// merge takes), both peers poll, and the first poll of a URL comes the
// least of the peers' offsets late. Highest-random-weight hashing ranks
// the peers for each URL the same way on every peer: the owner (rank 0)
// revisits on time, the next waits one Spread more, and so on, so the
// others poll a URL only when its owner's record did not come in time (it
// left, fell behind, or lies and was distrusted, leaving the set). How
// long "in time" is depends on the peer ranked above: its records come a
// merge interval apart, so the wait is the larger of Spread and a few of
// those (SplitPeer.Gap).
// Every peer of a community polls a share of every host, so a host gets
// as many requests as the peers' politeness allows each of them, as it
// does from as many lone crawlers, and each URL is polled about once per
// revisit interval by the community, not once per peer.

// rendezvous is a crawler's view of the community: its own name, hashed,
// and per host (scheme://host[:port]) the other peers that poll it.
type rendezvous struct {
	self   uint64
	byHost map[string][]rdvPeer
}

type rdvPeer struct {
	name uint64
	gap  time.Duration
}

// SplitPeer is a peer that shares a host's URLs with this crawler: its name
// (its cid, which every peer sees alike) and how late its record of a poll
// may come (Gap: a few of its merge intervals). A URL it owns is polled
// here only that much (and Spread) past its due time.
type SplitPeer struct {
	Name string
	Gap  time.Duration
}

// Rendezvous sets the peers that split the URLs of each host with this
// crawler: by host key (scheme://host[:port]), the peers that show they
// poll it (itself left out). A host with none is ordered by this crawler
// alone. Due times already set keep their offsets.
func (c *Crawler) Rendezvous(self string, byHost map[string][]SplitPeer) {
	r := rendezvous{self: nameHash(self), byHost: make(map[string][]rdvPeer, len(byHost))}
	names := map[string]uint64{} // a peer polls many hosts: hash its name once
	for h, peers := range byHost {
		for _, p := range peers {
			if p.Name == self {
				continue
			}
			n, ok := names[p.Name]
			if !ok {
				n = nameHash(p.Name)
				names[p.Name] = n
			}
			r.byHost[h] = append(r.byHost[h], rdvPeer{name: n, gap: p.Gap})
		}
	}
	c.rdvMu.Lock()
	c.rdv = r
	c.rdvMu.Unlock()
}

// rendezvousWait is how long past its due time this crawler waits for the
// record of a peer ranked above it for u: for each such peer, the larger
// of Spread and its gap (0: it owns u). split says whether u's host is
// shared at all.
func (c *Crawler) rendezvousWait(u string) (wait time.Duration, split bool) {
	c.rdvMu.RLock()
	r := c.rdv
	c.rdvMu.RUnlock()
	if len(r.byHost) == 0 {
		return 0, false
	}
	others := r.byHost[hostKey(u)]
	if len(others) == 0 {
		return 0, false
	}
	h := nameHash(u)
	mine := mix64(r.self ^ h)
	for _, o := range others {
		if s := mix64(o.name ^ h); s > mine || (s == mine && o.name > r.self) {
			wait += max(c.cfg.Spread, o.gap)
		}
	}
	return wait, true
}

// nameHash is FNV-1a of s, the same on every peer (a seeded maphash would
// differ); mix64 makes up for its weak mixing of the last bytes.
func nameHash(s string) uint64 {
	h := uint64(14695981039346656037)
	for i := 0; i < len(s); i++ {
		h ^= uint64(s[i])
		h *= 1099511628211
	}
	return mix64(h)
}

// mix64 is splitmix64's finaliser.
func mix64(x uint64) uint64 {
	x ^= x >> 30
	x *= 0xbf58476d1ce4e5b9
	x ^= x >> 27
	x *= 0x94d049bb133111eb
	return x ^ x>>31
}

// revisitAt is when a URL last looked at, at from, is due again.
func (c *Crawler) revisitAt(st *URLState, from time.Time) time.Time {
	return from.Add(st.Interval + c.revisitOffset(st.URL, st.Interval))
}

// adapt moves a URL's revisit interval after a look at it: halved on a
// change, grown by half without one, within RevisitMin and RevisitMax.
func (c *Crawler) adapt(st *URLState, changed bool) {
	st.Interval = revisit.Adapt(st.Interval, changed, c.cfg.RevisitMin, c.cfg.RevisitMax)
}
