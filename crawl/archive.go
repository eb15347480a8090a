package crawl

import (
	"fmt"
	"sync/atomic"

	"github.com/cocrawl/cocrawl/crawl/warc"
	"github.com/cocrawl/cocrawl/webevents"
)

// Archive keeps the exchanges the crawler fetched: crawl/warc's Writer
// writes them as WARC files (`--warc DIR`).
type Archive interface {
	Keep(warc.Capture) error
}

// archiveFailures counts the exchanges an archive refused, for the log.
var archiveFailures atomic.Int64

// archive hands a page's poll to the archive: whole when it changed (or
// answered anything but 200 or 304), as a revisit when it did not. HEAD
// polls (pages that are not HTML, watched by their headers) carry no
// content and are not archived.
func (c *Crawler) archive(url string, res *Result, prev *webevents.Event, changed bool) {
	if c.cfg.Archive == nil || res.Raw == nil || res.Err != nil || res.Raw.Method != "GET" {
		return
	}
	kind := warc.Response
	switch {
	case changed:
	case res.Status == 304:
		kind = warc.NotModified
	case res.Status != 200 || prev == nil:
	case prev.Digest != "" && prev.Digest == res.Digest:
		kind = warc.SameBytes
	case res.HasFingerprint:
		kind = warc.SameText // unchanged by the content fingerprint
	}
	cp := warc.Capture{URL: url, Kind: kind, Time: res.Start, Server: res.Server, Method: res.Raw.Method, ReqHeader: res.Raw.ReqHeader,
		Proto: res.Raw.Proto, Status: res.Status, Header: res.Raw.Header, Body: res.Raw.Body, Truncated: res.Truncated}
	if res.HasFingerprint {
		cp.Fingerprint = fmt.Sprintf("simhash64:%016x", res.Fingerprint)
	}
	if err := c.cfg.Archive.Keep(cp); err != nil {
		// Logged at the first failure and every 1,000th: a full disk would
		// otherwise log each poll.
		if n := archiveFailures.Add(1); n == 1 || n%1000 == 0 {
			c.cfg.Logger.Warn("archive: a fetch was not written", "url", url, "failures", n, "err", err)
		}
	}
}
