package crawl

import "time"

// delay is the pause after a request to h: the larger of the configured
// floor, the robots.txt Crawl-delay (capped) and a multiple of how long the
// last download took.
func (c *Crawler) delay(h *host, took time.Duration) time.Duration {
	d := c.cfg.MinDelay
	if h.robots != nil {
		d = max(d, min(h.robots.CrawlDelay, c.cfg.MaxCrawlDelay))
	}
	return max(d, time.Duration(c.cfg.DelayFactor*float64(took)))
}

// backoff grows exponentially with consecutive failures, and honours a
// longer Retry-After.
func (c *Crawler) backoff(h *host, retryAfter time.Duration) time.Duration {
	b := c.cfg.BackoffBase
	for i := 1; i < h.failures && b < c.cfg.BackoffMax; i++ {
		b *= 2
	}
	return max(min(b, c.cfg.BackoffMax), min(retryAfter, 24*time.Hour))
}
