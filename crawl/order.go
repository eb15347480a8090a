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
func (c *Crawler) offset(u string) time.Duration { return c.offsetWithin(u, c.cfg.Spread) }

// offsetWithin is offset with its own spread.
func (c *Crawler) offsetWithin(u string, spread time.Duration) time.Duration {
	if spread <= 0 {
		return 0
	}
	return time.Duration(maphash.String(c.order, u) % uint64(spread))
}

// revisitOffset is the offset of a revisit after an interval iv: at most
// half the interval, so a page that should be seen every 10 s is not put
// off by a spread made for pages seen every few minutes (issue 28: a 300 s
// spread left pages that change every 10 s unpolled for minutes).
func (c *Crawler) revisitOffset(u string, iv time.Duration) time.Duration {
	return c.offsetWithin(u, min(c.cfg.Spread, iv/2))
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
