package crawl

import (
	"context"
	"errors"
	"io"
	"slices"
	"strings"
	"time"
)

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
	h := c.f.lookup(hk)
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
		h := c.f.lookup(hostKey(u))
		trusted := h != nil && !at.Before(h.signals.distrustUntil)
		c.mu.Unlock()
		if !trusted {
			c.indexNowRefused.Add(1)
			continue
		}
		c.indexNowURLs.Add(1)
		c.hint(Hint{URL: u, Changed: at}, publisherSays{on: true, changesOnly: true, precision: time.Second})
	}
}
