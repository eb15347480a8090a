package crawl

import (
	"context"
	"fmt"
	"math/rand/v2"
	"net/http"
	"time"

	"github.com/cocrawl/cocrawl/crawl/fingerprint"
)

// Deletions the web does not announce. Many hosts answer a path they do
// not have with a 200 and a "page not found" page (a soft 404), or with a
// redirect to their home page; a crawler that waits for a 404 never sees
// those pages go (Bar-Yossef et al., WWW 2004, found about 29% of dead
// links to be soft 404s). So, once a host has answered a few requests,
// the crawler asks it for a path that cannot exist and keeps what it
// answered: a 200 with the fingerprint of its not-found page, or a
// redirect and where to. From then on a page of the host whose text is the
// not-found page's (fingerprint.Same), or that redirects to the home page
// or where the probe was sent, is taken as a 404: a DELETE when it was
// held live, and never a CREATE.

// notFoundAfter is how many requests a host answers before it is probed:
// a host polled a few times (links followed, a small site's first visits)
// does not pay for one, and the probe comes after a site's first pages.
const notFoundAfter = 30

// notFoundTTL is how long a probe's answer holds before the host is asked
// again (a site's not-found page changes with its template).
const notFoundTTL = 6 * time.Hour

// notFoundProbe is what a host answered for a path that cannot exist.
type notFoundProbe struct {
	at       time.Time // zero: not probed yet
	status   int
	fp       uint64
	hasFP    bool
	page     *fingerprint.Builder // its text, to compare without the host's noise
	location string               // for a redirect
}

// How a deletion was decided, for Stats.DeletedBy.
const (
	deletedBy404      = "404"      // 404 or 410
	deletedBySoft404  = "soft-404" // a 200 with the host's not-found page
	deletedByRedirect = "redirect" // a redirect to the home page or the not-found page
)

// nextNotFoundProbe returns the URL to probe the host with now, if it is
// time. c.mu held.
func (c *Crawler) nextNotFoundProbe(h *host, now time.Time) (string, bool) {
	if h.fit.sent < notFoundAfter || h.failures > 0 || (!h.notFound.at.IsZero() && now.Sub(h.notFound.at) < notFoundTTL) {
		return "", false
	}
	h.notFound.at = now // asked once, whatever happens
	return fmt.Sprintf("%s/cocrawl-probe-%016x-not-found.html", h.key, rand.Uint64()), true
}

// probeNotFound asks the host for a path that cannot exist and keeps its
// answer.
func (c *Crawler) probeNotFound(ctx context.Context, h *host, u string) PollResult {
	res := c.fetcher.Fetch(ctx, u, false, "", "")
	c.polls.Add(1)
	kind := errorKind(&res)
	c.mu.Lock()
	h.fit.sent++
	p := notFoundProbe{at: res.End, status: res.Status, fp: res.Fingerprint, hasFP: res.HasFingerprint, page: res.page, location: res.Location}
	notBefore := res.End.Add(c.delay(h, res.End.Sub(res.Start)))
	if kind != "" && kind != "4xx" {
		// A host in trouble: backed off as after any poll, and asked again
		// once it answers.
		p = notFoundProbe{}
		h.failures++
		notBefore = later(notBefore, res.End.Add(c.backoff(h, res.RetryAfter)))
	}
	h.notFound = p
	c.f.release(h, notBefore)
	c.mu.Unlock()
	if p.status == 200 && p.hasFP {
		c.cfg.Logger.Debug("host answers unknown paths with a page (soft 404)", "host", h.key)
	}
	return PollResult{Requested: true, URL: u, Status: res.Status, Cost: res.End.Sub(res.Start), ErrKind: kind, Bytes: max(res.Size, 0)}
}

// unannouncedDeletion says whether a poll's answer means the page is gone
// though it is not a 404: the host's not-found page, or a redirect to the
// home page or to where unknown paths go. c.mu held.
func (c *Crawler) unannouncedDeletion(h *host, res *Result) string {
	nf := &h.notFound
	switch {
	case res.Status == http.StatusOK && res.HasFingerprint && nf.status == http.StatusOK && nf.hasFP && c.isNotFoundPage(h, res):
		return deletedBySoft404
	case res.Status >= 300 && res.Status < 400 && res.Status != http.StatusNotModified && res.Location != "" &&
		(res.Location == h.key+"/" || nf.status >= 300 && nf.status < 400 && res.Location == nf.location):
		return deletedByRedirect
	}
	return ""
}

// isNotFoundPage says whether a page's text is the host's not-found
// page's: without the host's noise when both can be read so, else
// allowing for it. c.mu held.
func (c *Crawler) isNotFoundPage(h *host, res *Result) bool {
	nf := &h.notFound
	if res.HasLocal && nf.page != nil {
		if local, ok := nf.page.SumMasked(h.noise.mask); ok {
			return fingerprint.Distance(res.Local, local) <= h.noise.localNear()
		}
	}
	return fingerprint.Distance(res.Fingerprint, nf.fp) <= h.noise.wireNear()
}

// asNotFound is res read as the 404 it stands for.
func asNotFound(res *Result) *Result {
	r := *res
	r.Status, r.Digest, r.HasFingerprint, r.ETag, r.LastModified, r.LastModRaw, r.Location = http.StatusNotFound, "", false, "", time.Time{}, "", ""
	r.HasLocal, r.HasHeldLocal, r.page = false, false, nil
	r.Links = Links{}
	return &r
}
