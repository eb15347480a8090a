package crawl

import (
	"time"
)

// Hint is what the frontier learns about a URL from outside its own polls
// and the links of its pages: a record merged from a peer, a sitemap or
// feed entry, a publisher's notice. Crawler.Hint is the frontier's one door
// for such knowledge, so every source feeds the same schedule.
type Hint struct {
	URL string
	// Seen is when someone else polled the URL and saw its current state
	// (a merged record's lpd). The next poll is then due a revisit
	// interval from Seen, as if this crawler had polled it; zero: unknown.
	Seen time.Time
	// Changed is when the page is said to have changed (a sitemap's
	// lastmod). Later than this crawler's last look, it makes the URL due
	// now; zero: unknown.
	Changed time.Time
	// Observed says the hint is an observation this crawler trusts as its
	// own (a record of a peer it vouches for): a visit at Seen also feeds
	// the URL's change-rate estimate.
	Observed bool
}

// Hint tells the frontier about a URL. A URL it does not know joins it when
// the scope and trap rules admit it (as a seed would: depth 0). A hint with
// Seen later than this crawler's last look counts as a visit: the URL's
// change history learns whether the page changed (Changed after the last
// look) and the next poll is due a revisit interval from Seen. A hint with
// only a Changed after the last look makes the URL due now. Hints only
// move due times: robots.txt, politeness and what is left to peers still
// decide when a request is sent. Times after now count as now, so a hint
// cannot put a URL off beyond one revisit interval. It reports whether
// the URL is in the frontier. Call it between Start and Stop, as Poll.
func (c *Crawler) Hint(h Hint) bool { return c.hint(h, publisherSays{}) }

// publisherSays marks a hint from a sitemap entry (signals.go): Changed is
// its lastmod, a claim the next poll of the URL judges. On a proven host
// an entry whose lastmod has not moved since the last look counts as a
// visit at Seen (the read), unless it is sampled for a spot-check.
type publisherSays struct {
	on, proven, sample bool
	precision          time.Duration // of the lastmod (sitemap.Entry.Precision)
	changesOnly        bool          // a feed: it says what changed, never that nothing did
}

// hint is Hint, from a sitemap when says.on.
func (c *Crawler) hint(h Hint, says publisherSays) bool {
	u, err := Normalize(nil, h.URL)
	if err != nil {
		c.skipped.Add(1)
		return false
	}
	now := time.Now()
	seen, changed := earlier(h.Seen, now), earlier(h.Changed, now)
	c.mu.Lock()
	defer c.mu.Unlock()
	st := c.admitted(u, now)
	if st == nil {
		return false
	}
	if st.Gone {
		if !changed.IsZero() {
			// Said to have changed since it was deleted: look again now.
			c.revive(st, now)
		}
		return true
	}
	look := c.lastLook(st)
	changedSince := !changed.IsZero() && changed.After(look)
	checkNow := false
	if says.on {
		switch {
		case changedSince || st.Polls == 0 || changed.IsZero() || changed.Add(says.precision).After(look):
			// Changed since the last look (poll it: the read is no
			// visit), never looked at, undated, or dated too coarsely to
			// tell (a date alone, the day of the last look).
			seen = time.Time{}
		case says.changesOnly:
			seen = time.Time{}
		case !says.proven || says.sample:
			// Unchanged, says the publisher: the next poll judges it. On
			// a proven host that poll is now: its other reads count as
			// visits, so without it the page would wait for the claim's
			// own word, and a host whose dates never move would never be
			// caught.
			if st.lastmodClaim == claimNone {
				st.lastmodClaim = claimStill
			}
			seen = time.Time{}
			checkNow = says.proven
		}
	}
	due := st.Due
	switch {
	case st.checking || st.sampling:
		// A check or a sample is pending: only its own poll may settle it.
	case !seen.IsZero() && seen.After(look):
		c.hinted.Add(1)
		hs := c.f.host(hostKey(u))
		hs.fit.hinted++
		if says.on {
			c.sitemapVisits.Add(1)
		}
		if h.Observed {
			prev := time.UnixMilli(st.Seen)
			c.observeLook(st, seen, !changed.IsZero() && changed.After(prev), changed)
		}
		c.nextInterval(hs, st, changedSince, now)
		due = c.revisitAt(st, seen)
		if says.on {
			// The next sitemap read is its next visit: poll it only if
			// that read does not come (half a round late). The interval
			// stretches with it, so the last look (due less interval)
			// stays the read.
			pushed := later(due, hs.signals.nextRound.Add(c.cfg.SitemapEvery/2))
			st.Interval += pushed.Sub(due)
			due = pushed
		}
		if changed.After(seen) {
			due = now
		}
	case changedSince:
		due = now
		if says.on && st.Polls > 0 && st.lastmodClaim != claimChanged {
			st.lastmodClaim = claimChanged
			c.lastmodHints.Add(1)
		}
	case checkNow:
		due = now
	}
	if !due.Equal(st.Due) {
		c.f.setDue(st, due)
		c.save(st)
		c.signal()
	}
	return true
}

// Recheck asks for a poll of a known URL as soon as politeness allows, one
// that hints cannot put off and that asks for the page itself, not a 304:
// a spot-check of what a peer claimed. The PollResult of that poll has
// Checked set. It reports whether the URL is in the frontier.
func (c *Crawler) Recheck(rawURL string) bool {
	u, err := Normalize(nil, rawURL)
	if err != nil {
		return false
	}
	now := time.Now()
	c.mu.Lock()
	defer c.mu.Unlock()
	st := c.admitted(u, now)
	if st == nil {
		return false
	}
	st.checking = true
	if st.Gone {
		c.revive(st, now)
		return true
	}
	c.f.setDue(st, now)
	c.save(st)
	c.signal()
	return true
}

// admitted returns the frontier's state of a normalised URL, adding it
// (as a seed would be: depth 0) when the scope and trap rules admit it;
// nil when they do not. c.mu held.
func (c *Crawler) admitted(u string, now time.Time) *URLState {
	if st := c.f.resident(u); st != nil {
		return st
	}
	st, _ := c.addURL(u, 0, now)
	return st
}

// revive queues a URL held as deleted again, due now. c.mu held.
func (c *Crawler) revive(st *URLState, now time.Time) {
	st.Gone = false
	st.Due = now
	c.f.enqueue(c.f.host(hostKey(st.URL)), st)
	c.save(st)
	c.signal()
}

// lastLook is when the URL's state was last known to this crawler: a
// revisit interval (and its offset) before it is due, or never for a URL
// never polled.
func (c *Crawler) lastLook(st *URLState) time.Time {
	if st.Polls == 0 && st.Due.Before(time.Now()) {
		return time.Time{}
	}
	return st.Due.Add(-st.Interval - c.revisitOffset(st.URL, st.Interval))
}

func earlier(t, now time.Time) time.Time {
	if t.After(now) {
		return now
	}
	return t
}
