package publish

import (
	"net/url"
	"strings"

	"github.com/cocrawl/cocrawl/crawl"
)

// urlOf is the URL a file is served at, written as crawlers write URLs
// (crawl.Normalize), so peers compare the same strings.
func (p *Publisher) urlOf(rel string) (string, bool) {
	path := escapePath(rel)
	if p.cfg.Index != "-" {
		if rel == p.cfg.Index {
			path = ""
		} else if strings.HasSuffix(rel, "/"+p.cfg.Index) {
			path = escapePath(strings.TrimSuffix(rel, p.cfg.Index))
		}
	}
	u, err := crawl.Normalize(nil, p.prefix+path)
	return u, err == nil
}

// relOf inverts urlOf for a published URL.
func (p *Publisher) relOf(u string) string {
	path := strings.TrimPrefix(u, p.prefix)
	if un, err := url.PathUnescape(path); err == nil {
		path = un
	}
	if p.cfg.Index != "-" && (path == "" || strings.HasSuffix(path, "/")) {
		path += p.cfg.Index
	}
	return path
}

// escapePath escapes each segment of a slash-separated path.
func escapePath(rel string) string {
	segs := strings.Split(rel, "/")
	for i, s := range segs {
		segs[i] = url.PathEscape(s)
	}
	return strings.Join(segs, "/")
}
