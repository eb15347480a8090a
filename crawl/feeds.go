package crawl

import (
	"bufio"
	"bytes"
	"io"
	"net/url"
	"slices"
	"strings"
	"time"

	"github.com/mmcdole/gofeed"

	"github.com/cocrawl/cocrawl/crawl/sitemap"
)

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
