package crawl

import (
	"bufio"
	"bytes"
	"context"
	"encoding/hex"
	"errors"
	"hash/maphash"
	"io"
	"math"
	"net/url"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/jimsmart/grobotstxt"
	"github.com/mmcdole/gofeed"

	"github.com/cocrawl/cocrawl/crawl/revisit"
	"github.com/cocrawl/cocrawl/crawl/sitemap"
	"github.com/cocrawl/cocrawl/webevents"
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

// feedsFrom notes the same-host feeds a page names. c.mu held.
func (c *Crawler) feedsFrom(h *host, feeds []string) {
	for _, f := range feeds {
		if hostKey(f) != h.key || slices.Contains(h.signals.feeds, f) || len(h.signals.feeds) >= maxFeedsPerHost {
			continue
		}
		h.signals.feeds = append(h.signals.feeds, f)
		if len(h.signals.queue) == 0 {
			h.signals.nextRound = time.Time{} // a round now, with it
		}
	}
}

// sniffBytes is how much of a sitemap's start is looked at to tell a feed.
const sniffBytes = 1024

// looksLikeFeed tells, from the start of a document named as a sitemap,
// whether it is a feed: a JSON Feed, or XML whose first element is an RSS,
// RDF or Atom root. A gzipped sitemap is not looked into (feeds served as
// sitemaps are not gzipped files).
func looksLikeFeed(br *bufio.Reader) bool {
	head, _ := br.Peek(sniffBytes)
	head = bytes.TrimLeft(head, "\ufeff \t\r\n")
	if len(head) > 0 && head[0] == '{' {
		return true
	}
	// Skip the XML declaration, processing instructions, comments and a
	// doctype to the first element.
	for len(head) > 1 && head[0] == '<' && (head[1] == '?' || head[1] == '!') {
		end := bytes.IndexByte(head, '>')
		if end < 0 {
			return false
		}
		head = bytes.TrimLeft(head[end+1:], " \t\r\n")
	}
	for _, root := range []string{"<rss", "<rdf:RDF", "<feed"} {
		if bytes.HasPrefix(head, []byte(root)) && len(head) > len(root) && strings.IndexByte(" \t\r\n>", head[len(root)]) >= 0 {
			return true
		}
	}
	return false
}

// readFeed reads a feed (RSS, Atom, JSON Feed, by
// github.com/mmcdole/gofeed, within maxFeedBytes) into entries: each
// item's link and its updated date, else its published one, to the
// second. A feed lists recent changes only: what it leaves out says
// nothing.
func readFeed(r io.Reader, feedURL string) ([]sitemap.Entry, error) {
	f, err := gofeed.NewParser().Parse(io.LimitReader(r, maxFeedBytes))
	if err != nil {
		return nil, err
	}
	base, _ := url.Parse(feedURL)
	var out []sitemap.Entry
	for _, it := range f.Items {
		if it == nil || it.Link == "" || len(out) >= sitemapEntriesMax {
			continue
		}
		e := sitemap.Entry{Precision: time.Second}
		if u, err := Normalize(base, it.Link); err == nil {
			e.Loc = u
		} else {
			continue
		}
		switch {
		case it.UpdatedParsed != nil:
			e.LastMod = *it.UpdatedParsed
		case it.PublishedParsed != nil:
			e.LastMod = *it.PublishedParsed
		}
		out = append(out, e)
	}
	return out, nil
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

type keyCheck struct{ url, key string }

type submission struct {
	key  string
	urls []string
	at   time.Time
}

// IndexNow limits per host: submissions and URLs waiting for their key.
const (
	maxPendingSubmissions = 16
	maxPendingURLs        = 20000
	keyVerifiedFor        = 24 * time.Hour
)

// Errors of Crawler.IndexNow.
var (
	ErrSubmissionScope = errors.New("crawl: the URLs are not of one host in scope")
	ErrSubmissionBusy  = errors.New("crawl: too many submissions wait for their host")
)

// IndexNow takes an IndexNow submission (indexnow.org) whose form the
// share server checked: URLs of one host the crawler knows, and the key
// the host should serve at keyLocation (on that host; by default
// /{key}.txt). Before any URL counts the key is fetched from the host, as
// a polite request of its own; then each URL is claimed changed at the
// submission's time, a claim its next poll judges as a lastmod's, and a
// host whose claims prove false is ignored for a day. A key stays
// verified for a day.
func (c *Crawler) IndexNow(key, keyLocation string, urls []string) error {
	if c.cfg.NoSitemaps {
		return ErrSubmissionScope
	}
	norm := make([]string, 0, len(urls))
	hk := ""
	for _, u := range urls {
		n, err := Normalize(nil, u)
		if err != nil || hk != "" && hostKey(n) != hk {
			return ErrSubmissionScope
		}
		hk = hostKey(n)
		norm = append(norm, n)
	}
	keyURL := hk + "/" + key + ".txt"
	if keyLocation != "" {
		n, err := Normalize(nil, keyLocation)
		if err != nil || hostKey(n) != hk {
			return ErrSubmissionScope
		}
		keyURL = n
	}
	now := time.Now()
	c.mu.Lock()
	h := c.f.hosts[hk]
	if h == nil || !c.InScope(hk+"/") {
		c.mu.Unlock()
		return ErrSubmissionScope
	}
	s := &h.signals
	if until, ok := s.verified[key]; ok && now.Before(until) {
		c.mu.Unlock()
		c.indexNowApply(key, norm, now)
		return nil
	}
	if len(s.pending) >= maxPendingSubmissions || s.pendingURLs+len(norm) > maxPendingURLs {
		c.mu.Unlock()
		return ErrSubmissionBusy
	}
	s.pending = append(s.pending, submission{key: key, urls: norm, at: now})
	s.pendingURLs += len(norm)
	if !slices.ContainsFunc(s.keyChecks, func(k keyCheck) bool { return k.key == key }) {
		s.keyChecks = append(s.keyChecks, keyCheck{url: keyURL, key: key})
	}
	c.f.placeHost(h)
	c.mu.Unlock()
	c.signal()
	return nil
}

// nextKeyCheck returns a key the host should be asked for now. c.mu held.
func (c *Crawler) nextKeyCheck(h *host) (keyCheck, bool) {
	s := &h.signals
	if len(s.keyChecks) == 0 {
		return keyCheck{}, false
	}
	k := s.keyChecks[0]
	s.keyChecks = s.keyChecks[1:]
	return k, true
}

// checkKey fetches an IndexNow key from a busy host; the submissions
// waiting for it then count, or are dropped.
func (c *Crawler) checkKey(ctx context.Context, h *host, k keyCheck) PollResult {
	start := time.Now()
	var body []byte
	status, retry, err := c.fetcher.FetchDoc(ctx, k.url, func(r io.Reader) error {
		var err error
		body, err = io.ReadAll(io.LimitReader(r, 1024))
		return err
	})
	end := time.Now()
	ok := err == nil && status == 200 && strings.TrimSpace(string(body)) == k.key
	c.mu.Lock()
	s := &h.signals
	var apply []submission
	if ok {
		apply = c.takeSubmissions(h, k.key)
	} else {
		c.dropSubmissions(h, k.key)
	}
	if ok {
		if s.verified == nil {
			s.verified = map[string]time.Time{}
		}
		s.verified[k.key] = end.Add(keyVerifiedFor)
	}
	kind := c.signalRequestDone(h, start, end, status, retry, err)
	c.mu.Unlock()
	for _, p := range apply {
		c.indexNowApply(k.key, p.urls, p.at)
	}
	return PollResult{Requested: true, URL: k.url, Status: status, Cost: end.Sub(start), ErrKind: kind}
}

// takeSubmissions removes and returns the submissions waiting for key.
// c.mu held.
func (c *Crawler) takeSubmissions(h *host, key string) []submission {
	s := &h.signals
	var taken []submission
	keep := s.pending[:0]
	for _, p := range s.pending {
		if p.key != key {
			keep = append(keep, p)
			continue
		}
		taken = append(taken, p)
		s.pendingURLs -= len(p.urls)
	}
	s.pending = keep
	return taken
}

// dropSubmissions refuses the submissions waiting for a key that could
// not be verified. c.mu held.
func (c *Crawler) dropSubmissions(h *host, key string) {
	for _, p := range c.takeSubmissions(h, key) {
		c.indexNowRefused.Add(int64(len(p.urls)))
	}
}

// indexNowApply claims each URL changed at the submission's time.
func (c *Crawler) indexNowApply(key string, urls []string, at time.Time) {
	for _, u := range urls {
		c.mu.Lock()
		h := c.f.hosts[hostKey(u)]
		trusted := h != nil && !at.Before(h.signals.distrustUntil)
		c.mu.Unlock()
		if !trusted {
			c.indexNowRefused.Add(1)
			continue
		}
		c.indexNowURLs.Add(1)
		c.hint(Hint{URL: u, Changed: at}, sitemapSays{on: true, changesOnly: true, precision: time.Second})
	}
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
			s.queue = append(s.queue, h.key+resourceSyncURI)
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

// readSitemap fetches one sitemap of a busy host and applies what it
// says; the host's delay starts when the read ends.
func (c *Crawler) readSitemap(ctx context.Context, h *host, sitemapURL string) PollResult {
	start := time.Now()
	var entries []sitemap.Entry
	var doc sitemap.Doc
	c.mu.Lock()
	isFeed := slices.Contains(h.signals.feeds, sitemapURL)
	c.mu.Unlock()
	status, retry, err := c.fetcher.FetchDoc(ctx, sitemapURL, func(r io.Reader) error {
		var err error
		br := bufio.NewReaderSize(r, sniffBytes)
		if isFeed || looksLikeFeed(br) {
			// sitemaps.org accepts RSS and Atom feeds as sitemaps: a
			// Sitemap: line may name one.
			isFeed = true
			entries, err = readFeed(br, sitemapURL)
			return err
		}
		doc, err = sitemap.ReadDoc(br, sitemap.Limits{}, func(e sitemap.Entry) error {
			entries = append(entries, e)
			return nil
		})
		return err
	})
	end := time.Now()
	if isFeed {
		c.feedReads.Add(1)
	} else {
		c.sitemapReads.Add(1)
	}
	// Entries read before a limit was passed are kept; a document that is
	// not a sitemap, or an answer that is not 200, gives none.
	if err != nil || status != 200 {
		c.sitemapErrors.Add(1)
		if errors.Is(err, sitemap.ErrNotSitemap) || status != 200 {
			entries = nil
		}
	}
	c.sitemapURLs.Add(int64(len(entries)))
	c.mu.Lock()
	trusted := !end.Before(h.signals.distrustUntil)
	// Documents that name documents: a sitemap index; ResourceSync's
	// source description, capability list and change list index.
	if doc.Kind == sitemap.SitemapIndex || doc.Capability == "description" || doc.Capability == "capabilitylist" {
		for _, e := range entries {
			if doc.Kind != sitemap.SitemapIndex && !readableCapability(e.Capability) {
				continue
			}
			if u, err := Normalize(nil, e.Loc); err == nil && hostKey(u) == h.key &&
				h.signals.read+len(h.signals.queue) < maxSitemapsPerHost {
				h.signals.queue = append(h.signals.queue, u)
			}
		}
		entries = nil
	}
	if len(entries) > 0 {
		h.signals.gave = true
	}
	if isFeed && (status == 404 || status == 410 || err != nil && status == 200) {
		// Gone, or not a feed: forget it until a page names it again.
		h.signals.feeds = slices.DeleteFunc(h.signals.feeds, func(f string) bool { return f == sitemapURL })
		entries = nil
	}
	missing := status == 404 || status == 410 || errors.Is(err, sitemap.ErrNotSitemap)
	if sitemapURL == h.key+resourceSyncURI && missing {
		h.signals.noResourceSyncUntil = end.Add(missingSitemapEvery)
	}
	if sitemapURL == h.key+"/sitemap.xml" && missing {
		// None there: ask again in a day, not every round (most hosts
		// have no /sitemap.xml; a robots.txt that names sitemaps starts a
		// round when it is next read).
		h.signals.noDefaultUntil = end.Add(missingSitemapEvery)
	}
	kind := c.signalRequestDone(h, start, end, status, retry, err)
	s := &h.signals
	s.readAt = end
	// Proven by what the verdicts told, not by their count: "unchanged",
	// confirmed a minute after a look, tells little.
	proven := trusted && s.confirmedW >= lastmodProven && s.refutedW <= lastmodMaxFalse*(s.confirmedW+s.refutedW)
	round := s.rounds + s.read // the samples move on each round
	if proven {
		s.readsVisited = true
	}
	// A host some of whose claims proved false is checked four times as
	// often, so a liar is found out within a few rounds.
	sampleEvery := lastmodSampleEvery
	if s.refutedW > 0.1*s.confirmedW {
		sampleEvery /= 4
	}
	c.mu.Unlock()
	// A ResourceSync change list says what changed, never what did not;
	// its entries are of its own host only, as a sitemap's.
	changeList := doc.Capability == "changelist"
	ms, canMerge := c.store.(mergingStore)
	var published []webevents.Event
	var claims []sitemap.Entry // published changes to poll if the store refuses them
	for i, e := range entries {
		u, err := Normalize(nil, e.Loc)
		if err != nil || hostKey(u) != h.key {
			continue // a host speaks for its own URLs only (sitemaps.org, "Sitemap file location")
		}
		if !trusted {
			c.hint(Hint{URL: e.Loc}, sitemapSays{}) // its URLs still count; its dates do not
			continue
		}
		sample := (i+round)%sampleEvery == 0
		if changeList {
			// Each change once, wherever the list puts it (a list read
			// many times keeps its order, so positions would sample the
			// same URLs).
			sample = c.sampledChange(u, e.LastMod)
		}
		// A proven host's listed change is a web-event it observed: stored
		// as such, attributed to the host's ResourceSync, and a visit of
		// the page, so it is not polled (but for the samples).
		if changeList && proven && !sample && canMerge {
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
		c.hint(Hint{URL: e.Loc, Changed: e.LastMod, Seen: end, Observed: proven && !sample},
			sitemapSays{on: true, proven: proven, sample: sample, precision: e.Precision, changesOnly: isFeed || changeList})
	}
	if len(published) > 0 {
		res, err := ms.Merge(published, nil)
		if err != nil {
			c.cfg.Logger.Warn("a publisher's changes could not be stored: polled instead", "host", h.key, "err", err)
			for _, e := range claims {
				c.hint(Hint{URL: e.Loc, Changed: e.LastMod}, sitemapSays{on: true, proven: true, precision: e.Precision, changesOnly: true})
			}
		} else {
			c.publisherEvents.Add(int64(res.Accepted))
			for _, ev := range published {
				c.hint(Hint{URL: ev.URL, Seen: end, Changed: time.Unix(ev.LMD, 0), Observed: true}, sitemapSays{})
			}
		}
	}
	return PollResult{Requested: true, URL: sitemapURL, Status: status, Cost: end.Sub(start), ErrKind: kind}
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
	st := c.f.urls[u]
	return st == nil || st.Polls == 0 || t.After(c.lastLook(st))
}

// mergingStore is what a store needs to take a publisher's changes as
// records attributed to it (webevents stores have it).
type mergingStore interface {
	Merge(events []webevents.Event, c *webevents.Cursor) (webevents.MergeResult, error)
}

// PublisherCIDMoniker ends the cid of the web-events a host's ResourceSync
// change list gives: "host:port ResourceSync", the publisher as observer.
const PublisherCIDMoniker = "ResourceSync"

// publisherEvent is the web-event of one change a host's ResourceSync
// change list gives: its change and datetime, length and SHA-256 when
// given, polled at the read (the list is the publisher's current word),
// observed by the host and attributed to its /.well-known/resourcesync.
func publisherEvent(hostKeyURL, u string, e sitemap.Entry, read time.Time) (webevents.Event, bool) {
	stat, ok := changeStats[e.Change]
	if !ok || e.LastMod.IsZero() || e.Precision > time.Second || e.LastMod.After(read) {
		return webevents.Event{}, false // undated, dated coarsely or ahead: a claim to poll
	}
	hu, err := url.Parse(hostKeyURL)
	if err != nil {
		return webevents.Event{}, false
	}
	hostport := hu.Host
	if hu.Port() == "" {
		hostport += map[string]string{"http": ":80", "https": ":443"}[hu.Scheme]
	}
	ev := webevents.Event{URL: u, Stat: stat, LMD: e.LastMod.Unix(), LPD: read.Unix(), Size: e.Length,
		CID: hostport + " " + PublisherCIDMoniker, From: hostKeyURL + resourceSyncURI}
	for _, f := range strings.Fields(e.Hash) {
		if hexSum, ok := strings.CutPrefix(f, "sha-256:"); ok && len(hexSum) == 64 {
			if _, err := hex.DecodeString(hexSum); err == nil {
				ev.Digest = "sha256:" + strings.ToLower(hexSum)
			}
		}
	}
	if stat == webevents.Delete {
		ev.Size, ev.Digest = 0, ""
	}
	if ev.Validate() != nil || ev.CheckDates(read) != nil {
		return webevents.Event{}, false // a datetime before 1993, say: a claim to poll
	}
	return ev, true
}

// changeStats maps ResourceSync's changes to web-event kinds.
var changeStats = map[string]webevents.Stat{"created": webevents.Create, "updated": webevents.Update, "deleted": webevents.Delete}

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

// What a sitemap's lastmod claimed of a URL since its last poll.
const (
	claimNone    = iota
	claimChanged // later than the last look: made the URL due
	claimStill   // not later: a spot-check of a proven host, or any claim of an unproven one
)

// resourceSyncURI is where a host describes its ResourceSync documents.
const resourceSyncURI = "/.well-known/resourcesync"

// readableCapability says whether a ResourceSync document of this
// capability is read: those that list resources or changes, and those
// that lead to them.
func readableCapability(c string) bool {
	switch c {
	case "capabilitylist", "changelist", "resourcelist":
		return true
	}
	return false
}

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
		for _, q := range slices.Clone(h.queue.items) {
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
	for _, h := range c.f.hosts {
		if h.signals.gave {
			s.HostsWithSitemaps++
		}
		if now.Before(h.signals.distrustUntil) {
			s.HostsDistrusted++
		}
	}
	return s
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
