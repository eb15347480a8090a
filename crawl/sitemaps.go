package crawl

import (
	"bufio"
	"context"
	"errors"
	"hash/maphash"
	"io"
	"slices"
	"strconv"
	"time"

	"github.com/jimsmart/grobotstxt"

	"github.com/cocrawl/cocrawl/crawl/sitemap"
	"github.com/cocrawl/cocrawl/webevents"
)

// sitemapsFrom notes the same-host sitemaps a host's robots.txt names.
// c.mu held.
func (c *Crawler) sitemapsFrom(h *host, body string) {
	had := len(h.signals.robotsSitemaps)
	h.signals.robotsSitemaps = h.signals.robotsSitemaps[:0]
	for _, s := range grobotstxt.Sitemaps(body) {
		if u, err := Normalize(nil, s); err == nil && hostKey(u) == h.key && len(h.signals.robotsSitemaps) < maxSitemapsPerHost {
			h.signals.robotsSitemaps = append(h.signals.robotsSitemaps, u)
		}
	}
	if had == 0 && len(h.signals.robotsSitemaps) > 0 && len(h.signals.queue) == 0 {
		h.signals.nextRound = time.Time{} // newly named: read them now
	}
}

// readSitemap fetches one sitemap of a busy host and applies what it
// says; the host's delay starts when the read ends.
func (c *Crawler) readSitemap(ctx context.Context, h *host, sitemapURL string) PollResult {
	start := time.Now()
	c.mu.Lock()
	isFeed := slices.Contains(h.signals.feeds, sitemapURL)
	c.mu.Unlock()
	r := c.fetchSignal(ctx, sitemapURL, isFeed)
	end := time.Now()
	c.mu.Lock()
	trust := c.afterSignalRead(h, sitemapURL, &r, end)
	kind := c.signalRequestDone(h, start, end, r.status, r.retry, r.err)
	c.mu.Unlock()
	c.applyEntries(h, r, trust, end)
	return PollResult{Requested: true, URL: sitemapURL, Status: r.status, Cost: end.Sub(start), ErrKind: kind}
}

// signalRead is what one read of a sitemap, feed or ResourceSync
// document gave.
type signalRead struct {
	entries []sitemap.Entry
	doc     sitemap.Doc
	isFeed  bool
	status  int
	retry   time.Duration
	err     error
}

// fetchSignal fetches and parses one document: a feed when it is known or
// looks like one (sitemaps.org accepts RSS and Atom feeds as sitemaps: a
// Sitemap: line may name one), else a sitemap or ResourceSync document.
// Entries read before a limit was passed are kept; a document that is not
// a sitemap, or an answer that is not 200, gives none.
func (c *Crawler) fetchSignal(ctx context.Context, docURL string, isFeed bool) signalRead {
	r := signalRead{isFeed: isFeed}
	r.status, r.retry, r.err = c.fetcher.FetchDoc(ctx, docURL, func(body io.Reader) error {
		var err error
		br := bufio.NewReaderSize(body, sniffBytes)
		if r.isFeed || looksLikeFeed(br) {
			r.isFeed = true
			r.entries, err = readFeed(br, docURL)
			return err
		}
		r.doc, err = sitemap.ReadDoc(br, sitemap.Limits{}, func(e sitemap.Entry) error {
			r.entries = append(r.entries, e)
			return nil
		})
		return err
	})
	if r.isFeed {
		c.feedReads.Add(1)
	} else {
		c.sitemapReads.Add(1)
	}
	if r.err != nil || r.status != 200 {
		c.sitemapErrors.Add(1)
		if errors.Is(r.err, sitemap.ErrNotSitemap) || r.status != 200 {
			r.entries = nil
		}
	}
	c.sitemapURLs.Add(int64(len(r.entries)))
	return r
}

// signalTrust is how far a host's signals are believed at a read.
type signalTrust struct {
	trusted bool // not distrusted: its dates count
	// proven: its claims were confirmed (weighed by what the verdicts
	// told, not by their count: "unchanged", confirmed a minute after a
	// look, tells little) and few refuted.
	proven      bool
	round       int // the samples move on each round
	sampleEvery int
}

// afterSignalRead updates the host's signals after a read of docURL:
// documents that name documents queue them (and give no entries
// themselves), a gone feed is forgotten, a missing /sitemap.xml or
// ResourceSync description is not asked again for a day. It returns how
// far the host's signals are believed. c.mu held.
func (c *Crawler) afterSignalRead(h *host, docURL string, r *signalRead, end time.Time) signalTrust {
	s := &h.signals
	trusted := !end.Before(s.distrustUntil)
	// Documents that name documents: a sitemap index; ResourceSync's
	// source description, capability list and change list index.
	if d := r.doc; d.Kind == sitemap.SitemapIndex || d.Capability == "description" || d.Capability == "capabilitylist" {
		for _, e := range r.entries {
			if d.Kind != sitemap.SitemapIndex && !readableCapability(e.Capability) {
				continue
			}
			if u, err := Normalize(nil, e.Loc); err == nil && hostKey(u) == h.key && s.read+len(s.queue) < maxSitemapsPerHost {
				s.queue = append(s.queue, u)
			}
		}
		r.entries = nil
	}
	if len(r.entries) > 0 {
		s.gave = true
	}
	if r.isFeed && (r.status == 404 || r.status == 410 || r.err != nil && r.status == 200) {
		// Gone, or not a feed: forget it until a page names it again.
		s.feeds = slices.DeleteFunc(s.feeds, func(f string) bool { return f == docURL })
		r.entries = nil
	}
	missing := r.status == 404 || r.status == 410 || errors.Is(r.err, sitemap.ErrNotSitemap)
	if docURL == h.key+sitemap.SourceDescriptionPath && missing {
		s.noResourceSyncUntil = end.Add(missingSitemapEvery)
	}
	if docURL == h.key+"/sitemap.xml" && missing {
		// None there: ask again in a day, not every round (most hosts
		// have no /sitemap.xml; a robots.txt that names sitemaps starts a
		// round when it is next read).
		s.noDefaultUntil = end.Add(missingSitemapEvery)
	}
	s.readAt = end
	t := signalTrust{trusted: trusted, round: s.rounds + s.read, sampleEvery: lastmodSampleEvery}
	t.proven = trusted && s.confirmedW >= lastmodProven && s.refutedW <= lastmodMaxFalse*(s.confirmedW+s.refutedW)
	if t.proven {
		s.readsVisited = true
	}
	// A host some of whose claims proved false is checked four times as
	// often, so a liar is found out within a few rounds.
	if s.refutedW > 0.1*s.confirmedW {
		t.sampleEvery /= 4
	}
	return t
}

// applyEntries hands a read's entries to the frontier as claims: each of
// the host's own URLs joins it; a trusted host's dates make pages due; a
// proven host's unchanged pages count the read as their visit (but for
// the samples), and its ResourceSync changes are stored as its
// web-events (storePublished).
func (c *Crawler) applyEntries(h *host, r signalRead, t signalTrust, end time.Time) {
	// A ResourceSync change list says what changed, never what did not;
	// its entries are of its own host only, as a sitemap's.
	changeList := r.doc.Capability == "changelist"
	var published []webevents.Event
	var claims []sitemap.Entry // published changes to poll if the store refuses them
	for i, e := range r.entries {
		u, err := Normalize(nil, e.Loc)
		if err != nil || hostKey(u) != h.key {
			continue // a host speaks for its own URLs only (sitemaps.org, "Sitemap file location")
		}
		if !t.trusted {
			c.hint(Hint{URL: e.Loc}, publisherSays{}) // its URLs still count; its dates do not
			continue
		}
		sample := (i+t.round)%t.sampleEvery == 0
		if changeList {
			// Each change once, wherever the list puts it (a list read
			// many times keeps its order, so positions would sample the
			// same URLs).
			sample = c.sampledChange(u, e.LastMod)
		}
		// A proven host's listed change is a web-event it observed: stored
		// as such, attributed to the host's ResourceSync, and a visit of
		// the page, so it is not polled (but for the samples).
		if changeList && t.proven && !sample {
			if !c.newerThanLastLook(u, e.LastMod) {
				continue // known already: each read of a list repeats its changes
			}
			if ev, ok := publisherEvent(h.key, u, e, end); ok {
				published, claims = append(published, ev), append(claims, e)
				continue
			}
		}
		// A proven host's unchanged pages count the read as their visit,
		// all but one in sampleEvery, which its next poll checks. A feed
		// only says what changed.
		c.hint(Hint{URL: e.Loc, Changed: e.LastMod, Seen: end, Observed: t.proven && !sample},
			publisherSays{on: true, proven: t.proven, sample: sample, precision: e.Precision, changesOnly: r.isFeed || changeList})
	}
	c.storePublished(h, published, claims, end)
}

// sampledChange picks one change in lastmodSampleEvery for a spot-check
// poll, by a hash of the URL and its datetime keyed with this crawler's
// own seed: a publisher cannot tell which of its claims will be checked.
func (c *Crawler) sampledChange(u string, t time.Time) bool {
	return maphash.String(c.order, u+"\x00"+strconv.FormatInt(t.Unix(), 10))%lastmodSampleEvery == 0
}

// newerThanLastLook tells whether a change at t is news for the URL: it is
// not in the frontier yet, or t is after its last look.
func (c *Crawler) newerThanLastLook(u string, t time.Time) bool {
	c.mu.Lock()
	defer c.mu.Unlock()
	st := c.f.get(u)
	if seen, parked := c.f.parkedSeen(u); st == nil && parked {
		return t.After(seen) // to the second: a change within it is news
	}
	return st == nil || st.Polls == 0 || t.After(c.lastLook(st))
}
