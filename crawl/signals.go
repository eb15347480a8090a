package crawl

import (
	"time"

	"github.com/cocrawl/cocrawl/crawl/sitemap"
)

// Publishers' signals: a host's sitemaps (the Sitemap: lines of its
// robots.txt, else /sitemap.xml). Each sitemap URL that is in scope joins
// the frontier. Its <lastmod> is a claim: later than this crawler's last
// look, the page changed and is due now; not later, it did not. The next
// poll of the URL judges the claim (a change found where one was claimed,
// none where none was). Once a host's claims are proven (lastmodProven
// confirmed, few refuted), a sitemap read counts as the visit of each
// page it says is unchanged, so those pages are not polled, but for one
// in lastmodSampleEvery, whose next poll checks the claim. A host whose
// lastmods are mostly false (build dates, every page dated today) is
// distrusted for a day: its sitemaps still add URLs, their dates count
// for nothing, and the host is polled as any other.
//
// Sitemaps are read in rounds, every SitemapEvery (default RevisitMin),
// one document per host request, at most one in every sitemapShare of the
// host's requests after the first round; a sitemap index adds the
// sitemaps it names on the same host (at most maxSitemapsPerHost a round).
// Sitemaps on other hosts are not read: their requests would fall on a
// host this one does not speak for. Feeds (RSS, Atom, JSON Feed) that the
// host's pages name join its rounds; their items' dates are claims of
// change only, as a feed lists recent items and leaving one out says
// nothing. A host's ResourceSync documents (/.well-known/resourcesync,
// asked again daily when missing) join the rounds as well: its source
// description and capability lists lead to its change lists, whose
// changes are claims of change only. Every signal speaks for its own
// host's URLs only. IndexNow submissions (Crawler.IndexNow) are claims of
// change too, once the site has served their key.
//
// One file per source, each entering the frontier through Crawler.hint
// with what the source says (publisherSays): sitemaps.go (the rounds'
// reads), feeds.go, resourcesync.go (a proven publisher's changes stored
// as its web-events), indexnow.go; claims.go judges the claims by the
// polls that follow.
const (
	sitemapShare       = 10 // a sitemap read in every 10 requests to a host, at most
	maxSitemapsPerHost = 1000
	// A host's lastmods are distrusted at lastmodDistrustAfter refuted
	// claims when more than lastmodMaxFalse of its judged claims were.
	lastmodDistrustAfter = 5
	lastmodMaxFalse      = 0.3
	lastmodDistrustFor   = 24 * time.Hour
	// A host's lastmods are proven, and its unchanged pages' polls
	// skipped, once lastmodProven claims were confirmed (weighed by what
	// each told, claimWeight; and few refuted);
	// one unchanged page in lastmodSampleEvery is still polled, to check.
	lastmodProven       = 3
	lastmodSampleEvery  = 32
	maxFeedsPerHost     = 8
	maxFeedBytes        = 10 << 20
	sitemapEntriesMax   = 50000
	missingSitemapEvery = 24 * time.Hour
)

// hostSignals is what a host's sitemaps have given and how true they were.
type hostSignals struct {
	robotsSitemaps []string  // same-host Sitemap: lines of its robots.txt
	feeds          []string  // same-host feeds its pages name (<link rel="alternate">)
	queue          []string  // sitemaps to read this round
	nextRound      time.Time // when the next round starts; zero: not yet started
	read           int       // sitemaps read this round
	rounds         int       // rounds started: which entries a read samples
	// readsVisited: a read counted as the visit of unchanged pages (the
	// host proven), which their change rates learnt from.
	readsVisited bool
	since        int   // requests to the host since the last sitemap read
	confirmed    int64 // lastmod claims a poll confirmed
	refuted      int64 // and refuted
	// The same weighed by what each verdict tells (claimWeight): the
	// share of false claims is judged on these.
	confirmedW, refutedW float64
	distrustUntil        time.Time // lastmods ignored until then
	gave                 bool      // a sitemap of the host gave entries
	readAt               time.Time // when its last sitemap was read
	noDefaultUntil       time.Time // /sitemap.xml was missing: not asked again until then
	// IndexNow: keys to verify, submissions waiting for them, and keys
	// verified (until when).
	keyChecks   []keyCheck
	pending     []submission
	pendingURLs int
	verified    map[string]time.Time
	// noResourceSyncUntil: the same for /.well-known/resourcesync.
	noResourceSyncUntil time.Time
	enabled             bool // sitemaps are read (not Config.NoSitemaps)
}

// SignalStats sums up publishers' signals (Crawler.SignalStats).
type SignalStats struct {
	SitemapReads      int64 `json:"sitemap_reads"`       // sitemap documents read
	FeedReads         int64 `json:"feed_reads"`          // feeds read (RSS, Atom, JSON Feed)
	SitemapErrors     int64 `json:"sitemap_errors"`      // those that failed (status, size, syntax)
	SitemapURLs       int64 `json:"sitemap_urls"`        // entries read, URLs already known included
	LastmodHints      int64 `json:"lastmod_hints"`       // URLs made due by a lastmod
	LastmodConfirmed  int64 `json:"lastmod_confirmed"`   // polls that found the change a lastmod claimed
	LastmodRefuted    int64 `json:"lastmod_refuted"`     // polls that found none
	SitemapVisits     int64 `json:"sitemap_visits"`      // unchanged pages of proven hosts whose sitemap read counted as their visit
	PublisherEvents   int64 `json:"publisher_events"`    // changes of proven hosts' ResourceSync change lists stored as their web-events
	IndexNowURLs      int64 `json:"indexnow_urls"`       // URLs of IndexNow submissions whose key was verified
	IndexNowRefused   int64 `json:"indexnow_refused"`    // and of those whose key was not, or whose host is distrusted
	HostsWithSitemaps int   `json:"hosts_with_sitemaps"` // hosts whose sitemaps gave entries
	HostsDistrusted   int   `json:"hosts_distrusted"`    // hosts whose lastmods are ignored now
}

// due is when the host has a sitemap to read or a key to check: now (the
// zero time) while a round is under way or a key waits, else when the
// next round starts.
func (s *hostSignals) due() time.Time {
	if len(s.queue) > 0 || len(s.keyChecks) > 0 {
		return time.Time{}
	}
	return s.nextRound
}

// nextSitemap returns the sitemap the host should read now, if any, and
// starts a round when one is due. c.mu held.
func (c *Crawler) nextSitemap(h *host, now time.Time) (string, bool) {
	s := &h.signals
	if c.cfg.NoSitemaps {
		return "", false
	}
	if len(s.queue) == 0 && !now.Before(s.nextRound) {
		s.queue = append(s.queue[:0], s.robotsSitemaps...)
		if len(s.queue) == 0 && !now.Before(s.noDefaultUntil) {
			s.queue = append(s.queue, h.key+"/sitemap.xml")
		}
		if !now.Before(s.noResourceSyncUntil) {
			s.queue = append(s.queue, h.key+sitemap.SourceDescriptionPath)
		}
		s.queue = append(s.queue, s.feeds...)
		first := s.nextRound.IsZero()
		s.nextRound, s.read = now.Add(c.cfg.SitemapEvery), 0
		s.rounds++
		if len(s.queue) == 0 {
			// Nothing to read: the next round when /sitemap.xml may be
			// asked again, or a page names a feed.
			soonest := s.noDefaultUntil
			if s.noResourceSyncUntil.Before(soonest) {
				soonest = s.noResourceSyncUntil
			}
			s.nextRound = later(s.nextRound, soonest)
		}
		if first {
			s.since = sitemapShare // the first round starts at once
		}
	}
	if len(s.queue) == 0 || s.since < sitemapShare && h.urlDue(now) {
		return "", false
	}
	u := s.queue[len(s.queue)-1]
	s.queue = s.queue[:len(s.queue)-1]
	s.since, s.read = 0, s.read+1
	if hasAnyPrefix(u, c.delegated) {
		return "", false // a peer polls this host's part: its requests are not ours
	}
	return u, true
}

// signalRequestDone ends a signal request to a busy host (a sitemap, a
// feed, a key): it counts as a request, fails the way a poll does (the
// same error kinds; a 404 only says there is none), and the host owes
// the same delay, and backoff after a 429, a 5xx or a network error. It
// returns the error kind. c.mu held.
func (c *Crawler) signalRequestDone(h *host, start, end time.Time, status int, retry time.Duration, err error) string {
	h.fit.sent++
	kind := ""
	if err != nil && status == 0 || status == 429 || status >= 500 {
		kind = errorKind(&Result{Status: status, Err: err})
		c.errMu.Lock()
		c.errs[kind]++
		c.errMu.Unlock()
	}
	notBefore := end.Add(c.delay(h, end.Sub(start)))
	if kind != "" {
		h.failures++
		notBefore = later(notBefore, end.Add(c.backoff(h, retry)))
	} else {
		h.failures = 0
	}
	c.keepHostNext(h, notBefore)
	c.f.release(h, notBefore)
	return kind
}

// keepHostNext stores when the host may next be asked on one of its URL
// states, so the delay holds across a restart (URLState.HostNext). c.mu
// held.
func (c *Crawler) keepHostNext(h *host, notBefore time.Time) {
	for _, q := range []urlQueue{h.queue, h.first} {
		if q.Len() > 0 {
			st := q.items[0]
			st.HostNext = max(st.HostNext, notBefore.UnixMilli())
			c.save(st)
			return
		}
	}
}

// SignalStats reports publishers' signals. It walks the hosts (O(hosts)).
func (c *Crawler) SignalStats() SignalStats {
	s := SignalStats{
		SitemapReads: c.sitemapReads.Load(), FeedReads: c.feedReads.Load(), SitemapErrors: c.sitemapErrors.Load(), SitemapURLs: c.sitemapURLs.Load(),
		LastmodHints: c.lastmodHints.Load(), LastmodConfirmed: c.lastmodConfirmed.Load(), LastmodRefuted: c.lastmodRefuted.Load(),
		SitemapVisits: c.sitemapVisits.Load(), PublisherEvents: c.publisherEvents.Load(), IndexNowURLs: c.indexNowURLs.Load(), IndexNowRefused: c.indexNowRefused.Load(),
	}
	now := time.Now()
	c.mu.Lock()
	defer c.mu.Unlock()
	for h := range c.f.allHosts() {
		if h.signals.gave {
			s.HostsWithSitemaps++
		}
		if now.Before(h.signals.distrustUntil) {
			s.HostsDistrusted++
		}
	}
	return s
}
