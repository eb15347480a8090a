package crawl

import (
	"encoding/hex"
	"net/url"
	"strings"
	"time"

	"github.com/cocrawl/cocrawl/crawl/sitemap"
	"github.com/cocrawl/cocrawl/webevents"
)

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
		CID: hostport + " " + PublisherCIDMoniker, From: hostKeyURL + sitemap.SourceDescriptionPath}
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

// storePublished stores a proven host's ResourceSync changes as its
// web-events, each a visit of its page; a store that refuses them leaves
// the changes as claims to poll.
func (c *Crawler) storePublished(h *host, published []webevents.Event, claims []sitemap.Entry, end time.Time) {
	if len(published) == 0 {
		return
	}
	res, err := c.store.Merge(published, nil)
	if err != nil {
		c.cfg.Logger.Warn("a publisher's changes could not be stored: polled instead", "host", h.key, "err", err)
		for _, e := range claims {
			c.hint(Hint{URL: e.Loc, Changed: e.LastMod}, publisherSays{on: true, proven: true, precision: e.Precision, changesOnly: true})
		}
		return
	}
	c.publisherEvents.Add(int64(res.Accepted))
	for _, ev := range published {
		c.hint(Hint{URL: ev.URL, Seen: end, Changed: time.Unix(ev.LMD, 0), Observed: true}, publisherSays{})
	}
}
