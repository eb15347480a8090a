package sitemap

import (
	"bufio"
	"bytes"
	"compress/gzip"
	"encoding/xml"
	"errors"
	"fmt"
	"io"
	"strconv"
	"strings"
	"time"
)

// Kind is what a document turned out to be.
type Kind int

const (
	URLSet       Kind = iota + 1 // <urlset>: pages
	SitemapIndex                 // <sitemapindex>: further sitemaps
)

// Entry is one <url> of a urlset, or one <sitemap> of an index.
type Entry struct {
	Loc     string
	LastMod time.Time // zero when absent or unreadable
	// Precision is how far after LastMod the change may have come: a
	// second for a full datetime, a day for a date alone ("2026-11-23"
	// says the page changed on that day, not at midnight).
	Precision time.Duration
	// ResourceSync (ANSI/NISO Z39.99-2017) metadata of the entry's rs:md:
	// the capability of the document it names (in a source description,
	// capability list or index), or the change it lists (created,
	// updated, deleted; its datetime is LastMod when <lastmod> is absent).
	Capability, Change string
	// Length and Hash are the rs:md length (bytes; 0 when absent) and
	// hash ("sha-256:hex md5:..." as given) of a listed resource.
	Length int64
	Hash   string
}

// Capability is the ResourceSync capability a document declares in its
// own rs:md (description, capabilitylist, changelist, resourcelist...);
// "" for a plain sitemap. ReadDoc reports it.
type Doc struct {
	Kind       Kind
	Capability string
}

const rsSpace = "http://www.openarchives.org/rs/terms/"

// SourceDescriptionPath is where a host describes its ResourceSync
// documents (ResourceSync 1.1, section 10.2): the one rule that readers
// (package crawl) and the share server (package protocol) share.
const SourceDescriptionPath = "/.well-known/resourcesync"

// Limits bound what one document may cost. Zero fields take the sitemaps.org
// limits.
type Limits struct {
	MaxEntries int   // default 50,000
	MaxBytes   int64 // of the document, after gzip; default 50 MiB (52,428,800 bytes)
	MaxLoc     int   // bytes of one <loc>; default 8,192
}

func (l Limits) withDefaults() Limits {
	if l.MaxEntries <= 0 {
		l.MaxEntries = 50000
	}
	if l.MaxBytes <= 0 {
		l.MaxBytes = 50 << 20
	}
	if l.MaxLoc <= 0 {
		l.MaxLoc = 8192
	}
	return l
}

// Errors of Read; each wraps ErrSitemap.
var (
	ErrSitemap    = errors.New("sitemap")
	ErrNotSitemap = fmt.Errorf("%w: not a urlset or sitemapindex", ErrSitemap)
	ErrTooMany    = fmt.Errorf("%w: more entries than the limit", ErrSitemap)
	ErrTooLarge   = fmt.Errorf("%w: larger than the limit", ErrSitemap)
	ErrSyntax     = fmt.Errorf("%w: malformed XML", ErrSitemap)
)

// Read streams a sitemap (sitemaps.org 0.9), gzipped or not, and calls fn
// with each entry in document order: what a <urlset> lists, or the
// sitemaps a <sitemapindex> names. It holds one entry at a time. Past
// lim.MaxEntries entries or lim.MaxBytes bytes (after gzip: a small bomb
// cannot grow past it) it stops with ErrTooMany or ErrTooLarge, after
// fn has had the entries before. An entry with an empty or too long
// <loc> is skipped; a <lastmod> that is not a W3C datetime is left zero.
// Elements of other namespaces (images, news, ResourceSync's rs:md) are
// skipped. An error of fn stops the read and is returned.
//
// Written on encoding/xml's streaming decoder: the Go modules for
// sitemaps found load whole documents or are unmaintained, and this is
// one loop.
func Read(r io.Reader, lim Limits, fn func(Entry) error) (Kind, error) {
	d, err := ReadDoc(r, lim, fn)
	return d.Kind, err
}

// ReadDoc is Read, reporting the document's ResourceSync capability too.
func ReadDoc(r io.Reader, lim Limits, fn func(Entry) error) (Doc, error) {
	var doc Doc
	kind, err := read(r, lim, &doc.Capability, fn)
	doc.Kind = kind
	return doc, err
}

func read(r io.Reader, lim Limits, capability *string, fn func(Entry) error) (Kind, error) {
	lim = lim.withDefaults()
	br := bufio.NewReader(r)
	if magic, _ := br.Peek(2); bytes.Equal(magic, []byte{0x1f, 0x8b}) {
		zr, err := gzip.NewReader(br)
		if err != nil {
			return 0, fmt.Errorf("%w: gzip: %v", ErrSyntax, err)
		}
		defer zr.Close()
		r = zr
	} else {
		r = br
	}
	counted := &countReader{r: r, left: lim.MaxBytes + 1}
	d := xml.NewDecoder(counted)
	d.Strict = false // real sitemaps carry stray entities; the structure is what counts
	var kind Kind
	var cur *Entry
	var field string // "loc", "lastmod" while inside one
	var text strings.Builder
	n := 0
	depth := 0
	for {
		tok, err := d.Token()
		if counted.left <= 0 {
			return kind, ErrTooLarge
		}
		if err == io.EOF {
			if kind == 0 {
				return 0, ErrNotSitemap
			}
			return kind, nil
		}
		if err != nil {
			return kind, fmt.Errorf("%w: %v", ErrSyntax, err)
		}
		switch t := tok.(type) {
		case xml.StartElement:
			depth++
			name := t.Name.Local
			switch {
			case depth == 1:
				switch name {
				case "urlset":
					kind = URLSet
				case "sitemapindex":
					kind = SitemapIndex
				default:
					return 0, ErrNotSitemap
				}
			case depth == 2 && name == "md" && t.Name.Space == rsSpace:
				*capability = attr(t, "capability")
			case depth == 3 && cur != nil && name == "md" && t.Name.Space == rsSpace:
				cur.Capability, cur.Change = attr(t, "capability"), attr(t, "change")
				if n, err := strconv.ParseInt(attr(t, "length"), 10, 64); err == nil && n > 0 {
					cur.Length = n
				}
				cur.Hash = attrUpTo(t, "hash", 512)
				if dt := attr(t, "datetime"); dt != "" && cur.LastMod.IsZero() {
					cur.LastMod, cur.Precision, _ = parseW3C(dt)
				}
			case depth == 2 && (name == "url" && kind == URLSet || name == "sitemap" && kind == SitemapIndex) && sitemapSpace(t.Name.Space):
				cur = &Entry{}
			case depth == 3 && cur != nil && (name == "loc" || name == "lastmod") && sitemapSpace(t.Name.Space):
				field = name
				text.Reset()
			}
		case xml.CharData:
			if field != "" && text.Len() <= lim.MaxLoc {
				text.Write(t)
			}
		case xml.EndElement:
			switch {
			case depth == 3 && field != "":
				v := strings.TrimSpace(text.String())
				if field == "loc" {
					if len(v) <= lim.MaxLoc {
						cur.Loc = v
					}
				} else {
					cur.LastMod, cur.Precision, _ = parseW3C(v)
				}
				field = ""
			case depth == 2 && cur != nil:
				e := *cur
				cur = nil
				if e.Loc == "" {
					break
				}
				if n++; n > lim.MaxEntries {
					return kind, ErrTooMany
				}
				if err := fn(e); err != nil {
					return kind, err
				}
			}
			depth--
		}
	}
}

// attr is an attribute's value, bounded.
func attr(t xml.StartElement, name string) string { return attrUpTo(t, name, 64) }

// attrUpTo is the value of an attribute of at most max bytes, else "".
func attrUpTo(t xml.StartElement, name string, max int) string {
	for _, a := range t.Attr {
		if a.Name.Local == name && len(a.Value) <= max {
			return a.Value
		}
	}
	return ""
}

// sitemapSpace is the sitemaps.org namespace, or none (sitemaps written
// without one are common and read by every search engine).
func sitemapSpace(ns string) bool {
	return ns == "" || ns == "http://www.sitemaps.org/schemas/sitemap/0.9"
}

// ParseW3CDate reads the W3C datetime profile of ISO 8601 that sitemaps
// use: YYYY, YYYY-MM, YYYY-MM-DD, or a date with a time to the minute or
// second (and fractions), with Z or ±hh:mm. A date without a time is its
// 00:00 UTC.
func ParseW3CDate(s string) (time.Time, error) {
	t, _, err := parseW3C(s)
	return t, err
}

// parseW3C is ParseW3CDate with the precision the form gives.
func parseW3C(s string) (time.Time, time.Duration, error) {
	for _, f := range []struct {
		layout    string
		precision time.Duration
	}{
		{time.RFC3339Nano, time.Second}, {"2006-01-02T15:04Z07:00", time.Minute},
		{"2006-01-02", 24 * time.Hour}, {"2006-01", 31 * 24 * time.Hour}, {"2006", 366 * 24 * time.Hour},
	} {
		if t, err := time.Parse(f.layout, s); err == nil {
			return t, f.precision, nil
		}
	}
	return time.Time{}, 0, fmt.Errorf("%w: lastmod %.40q is not a W3C datetime", ErrSitemap, s)
}

// countReader stops a read past its allowance.
type countReader struct {
	r    io.Reader
	left int64
}

func (c *countReader) Read(p []byte) (int, error) {
	if c.left <= 0 {
		return 0, ErrTooLarge
	}
	if int64(len(p)) > c.left {
		p = p[:c.left]
	}
	n, err := c.r.Read(p)
	c.left -= int64(n)
	return n, err
}
