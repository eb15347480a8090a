package crawl

import (
	"hash/fnv"
	"time"
)

// offset is how long this crawler puts off revisits of u: a share of
// Config.Spread fixed by u and the crawler's salt, so every crawler has its
// own order (the thesis gives each crawler its own random order) and keeps
// it from one cycle to the next.
func (c *Crawler) offset(u string) time.Duration {
	if c.cfg.Spread <= 0 {
		return 0
	}
	h := fnv.New64a()
	var salt [8]byte
	for i := range salt {
		salt[i] = byte(c.salt >> (8 * i))
	}
	h.Write(salt[:])
	h.Write([]byte(u))
	return time.Duration(h.Sum64() % uint64(c.cfg.Spread))
}

// revisitAt is when a URL last looked at, at from, is due again.
func (c *Crawler) revisitAt(st *URLState, from time.Time) time.Time {
	return from.Add(st.Interval + c.offset(st.URL))
}

// adapt moves a URL's revisit interval after a look at it: halved on a
// change, grown by half without one, within RevisitMin and RevisitMax.
func (c *Crawler) adapt(st *URLState, changed bool) {
	if changed {
		st.Interval = max(c.cfg.RevisitMin, st.Interval/2)
	} else {
		st.Interval = min(c.cfg.RevisitMax, st.Interval*3/2)
	}
}
