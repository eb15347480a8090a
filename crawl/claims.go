package crawl

import (
	"math"
	"slices"
	"time"

	"github.com/cocrawl/cocrawl/crawl/revisit"
)

// What a sitemap's lastmod claimed of a URL since its last poll.
const (
	claimNone    = iota
	claimChanged // later than the last look: made the URL due
	claimStill   // not later: a spot-check of a proven host, or any claim of an unproven one
)

// judgeLastmod scores a lastmod claim by the poll that followed: a claimed
// change found, or no change where none was claimed, confirms it. c.mu
// held.
func (c *Crawler) judgeLastmod(h *host, st *URLState, changed bool, lastMod, now time.Time) {
	claim := st.lastmodClaim
	if claim == claimNone {
		return
	}
	st.lastmodClaim = claimNone
	s := &h.signals
	if now.Before(s.distrustUntil) {
		return // a claim made before the host was found out
	}
	if claim == claimStill && changed && !lastMod.IsZero() && lastMod.After(s.readAt.Add(-time.Second)) {
		return // it changed after the sitemap said it had not: no verdict
	}
	w := c.claimWeight(st, claim, changed, lastMod, s.readAt, now)
	if changed == (claim == claimChanged) {
		s.confirmed++
		s.confirmedW += w
		c.lastmodConfirmed.Add(1)
		return
	}
	s.refuted++
	s.refutedW += w
	c.lastmodRefuted.Add(1)
	if s.refuted >= lastmodDistrustAfter && s.refutedW > lastmodMaxFalse*(s.confirmedW+s.refutedW) {
		s.distrustUntil = now.Add(lastmodDistrustFor)
		s.confirmed, s.refuted, s.confirmedW, s.refutedW = 0, 0, 0, 0 // judged afresh when the day is over
		// What its word put off or recorded is polled again now, and
		// what the pages' change rates learnt from it (a read of an
		// unchanged date counted as a visit that found no change) is
		// forgotten: they are learnt again from polls.
		forget := s.readsVisited
		s.readsVisited = false
		c.f.unparkAll(h)
		for _, q := range slices.Collect(h.revisits()) { // a copy: setDue reorders the queue
			if forget {
				q.Rate = revisit.Rate{}
			}
			if q != st {
				c.f.setDue(q, now)
			}
		}
		c.cfg.Logger.Info("a host's sitemap lastmods proved false: polled without them for a day", "host", h.key)
	}
}

// claimWeight is how much a verdict on a lastmod claim tells of the
// host's honesty. A claimed change, found or not, tells all. A claim that
// a page did not change, confirmed, tells only as much as the page was
// likely to change in the time the claim spoke for (from the last look to
// the sitemap's read; by the page's change rate): a frozen sitemap's
// "unchanged" is true of a page looked at a minute before. Refuted
// without a Last-Modified to date the change, it tells the share of the
// time since the last look that the claim covered: the change may have
// come after the read. c.mu held.
func (c *Crawler) claimWeight(st *URLState, claim uint8, changed bool, lastMod, readAt, now time.Time) float64 {
	if claim != claimStill || st.Seen == 0 {
		return 1
	}
	last := time.UnixMilli(st.Seen)
	span := readAt.Sub(last)
	if span <= 0 {
		return 0
	}
	if changed {
		if !lastMod.IsZero() || !now.After(last) {
			return 1
		}
		return min(1, span.Seconds()/now.Sub(last).Seconds())
	}
	rate, ok := st.Rate.Estimate()
	if !ok {
		return 0.5
	}
	return 1 - math.Exp(-rate*span.Seconds())
}
