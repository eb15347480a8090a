package crawl

import (
	"io"
	"net/url"
	"strings"

	"golang.org/x/net/html"
	"golang.org/x/net/html/atom"

	"github.com/cocrawl/cocrawl/crawl/fingerprint"
)

// Links is what a page says about where to go next.
type Links struct {
	URLs     []string // normalised, de-duplicated, in document order
	Feeds    []string // of those, the feeds a <link rel="alternate"> names (RSS, Atom, JSON Feed)
	NoFollow bool     // <meta name="robots" content="nofollow">: URLs is empty
	NoIndex  bool     // <meta name="robots" content="noindex">
}

// MaxLinksPerPage bounds what one page can add to the frontier; links past
// it are dropped (a hostile 4 MiB page could otherwise hold 300,000).
const MaxLinksPerPage = 5000

// maxTokenBytes bounds the tokenizer's buffer: a hostile page with one
// endless tag costs this much memory and no more.
const maxTokenBytes = 256 << 10

// ExtractLinks reads an HTML document and returns its links, resolved
// against base (or the document's <base href>) and normalised. It uses the
// tokenizer of golang.org/x/net/html rather than html.Parse, so no tree is
// built and a hostile token is bounded (SetMaxBuf); with every link
// normalised it runs at about the speed of html.Parse alone
// (BenchmarkExtractLinks). Followed: a and area href, frame and iframe src,
// link href with rel=alternate; skipped: rel=nofollow links.
func ExtractLinks(r io.Reader, base *url.URL) (Links, error) {
	return extractPage(r, base, nil)
}

// extractPage is ExtractLinks that also reports the page's text and tags
// to fp (when not nil), in the same pass, for its fingerprint.
func extractPage(r io.Reader, base *url.URL, fp *fingerprint.Builder) (Links, error) {
	z := html.NewTokenizer(r)
	z.SetMaxBuf(maxTokenBytes)
	var out Links
	seen := map[string]bool{}
	baseSet := false
	pb := newPageBase(base)
	// add follows a link and returns it normalised ("" when it is not one).
	add := func(ref string) string {
		if ref == "" {
			return ""
		}
		u, err := pb.normalize(ref)
		if err != nil {
			return ""
		}
		if !seen[u] && len(out.URLs) < MaxLinksPerPage {
			seen[u] = true
			out.URLs = append(out.URLs, u)
		}
		return u
	}
	for {
		tt := z.Next()
		switch tt {
		case html.ErrorToken:
			if z.Err() == io.EOF {
				if out.NoFollow {
					out.URLs, out.Feeds = nil, nil
				}
				return out, nil
			}
			return out, z.Err()
		case html.TextToken:
			if fp != nil {
				fp.Text(z.Text())
			}
			continue
		case html.EndTagToken:
			if fp != nil {
				fp.End(tagAtom(z.Raw()))
			}
			continue
		case html.StartTagToken, html.SelfClosingTagToken:
		default:
			continue
		}
		// A tag without attributes reads as one whose attributes name
		// nothing sought: TagAttr gives no key.
		a := tagAtom(z.Raw())
		switch a {
		case atom.A, atom.Area, atom.Frame, atom.Iframe, atom.Link, atom.Base, atom.Meta:
		default:
			if fp != nil {
				role, class := "", ""
				for more := fingerprint.BlockElement(a); more; {
					// TagAttr copies each key and value (x/net/html
					// replaces NULs in a copy): read only where sought.
					var k, v []byte
					k, v, more = z.TagAttr()
					switch string(k) {
					case "role":
						role = string(v)
					case "class":
						class = string(v)
					}
				}
				fp.Start(a, role, class, tt == html.SelfClosingTagToken)
			}
			continue
		}
		attrs := readAttrs(z)
		if fp != nil {
			fp.Start(a, "", "", tt == html.SelfClosingTagToken)
		}
		switch a {
		case atom.Base:
			if !baseSet && attrs.href != "" {
				if b, err := pb.normalize(attrs.href); err == nil {
					if bu, err := url.Parse(b); err == nil {
						pb, baseSet = newPageBase(bu), true
					}
				}
			}
		case atom.A, atom.Area:
			if !hasToken(attrs.rel, "nofollow") {
				add(attrs.href)
			}
		case atom.Frame, atom.Iframe:
			add(attrs.src)
		case atom.Link:
			if hasToken(attrs.rel, "alternate") {
				if u := add(attrs.href); u != "" && isFeedType(attrs.typ) && len(out.Feeds) < maxFeedsPerPage {
					out.Feeds = append(out.Feeds, u)
				}
			}
		case atom.Meta:
			if strings.EqualFold(attrs.name, "robots") {
				c := strings.ToLower(attrs.content)
				out.NoFollow = out.NoFollow || hasToken(c, "nofollow") || hasToken(c, "none")
				out.NoIndex = out.NoIndex || hasToken(c, "noindex") || hasToken(c, "none")
			}
		}
	}
}

// maxAtomLen is at least the longest element name golang.org/x/net/html/atom
// knows; a longer name is no atom.
const maxAtomLen = 32

// tagAtom is the atom of a start or end tag's name, read from the tag's raw
// bytes ("<A href=...>", "</a >") as the tokenizer reads it: after "<" or
// "</", up to white space, "/" or ">", ASCII lower-cased; 0 for a name that
// is no atom. Tokenizer.TagName gives the same name but as a fresh copy
// each call (it replaces NULs in a copy, bytes.ReplaceAll): 1.6% of the
// CPU in a late minute of a scale crawl's profile; a name with a NUL is
// no atom either way.
func tagAtom(raw []byte) atom.Atom {
	var buf [maxAtomLen]byte
	i := 1 // past "<"
	if i < len(raw) && raw[i] == '/' {
		i++
	}
	n := 0
	for ; i < len(raw); i++ {
		c := raw[i]
		switch c {
		case ' ', '\n', '\r', '\t', '\f', '/', '>':
			return atom.Lookup(buf[:n])
		}
		if n == len(buf) {
			return 0
		}
		if 'A' <= c && c <= 'Z' {
			c += 'a' - 'A'
		}
		buf[n] = c
		n++
	}
	return atom.Lookup(buf[:n])
}

// linkAttrs are the attributes of the tags that link (a, area, frame,
// iframe, link, base, meta) that extractPage reads; the others are not
// kept (a map of every attribute cost 7% of a crawl's allocations).
type linkAttrs struct {
	href, src, rel, typ, name, content string
	has                                uint8 // which are set: the first of repeated attributes counts, as in browsers
}

const (
	hasHref = 1 << iota
	hasSrc
	hasRel
	hasType
	hasName
	hasContent
)

func readAttrs(z *html.Tokenizer) linkAttrs {
	var a linkAttrs
	for more := true; more; {
		var k, v []byte
		k, v, more = z.TagAttr()
		var dst *string
		var bit uint8
		switch string(k) { // compiled without an allocation
		case "href":
			dst, bit = &a.href, hasHref
		case "src":
			dst, bit = &a.src, hasSrc
		case "rel":
			dst, bit = &a.rel, hasRel
		case "type":
			dst, bit = &a.typ, hasType
		case "name":
			dst, bit = &a.name, hasName
		case "content":
			dst, bit = &a.content, hasContent
		default:
			continue
		}
		if a.has&bit == 0 {
			*dst, a.has = string(v), a.has|bit
		}
	}
	return a
}

// hasToken reports whether the space- or comma-separated list has tok.
func hasToken(list, tok string) bool {
	for _, f := range strings.FieldsFunc(list, func(r rune) bool { return r == ' ' || r == ',' || r == '\t' || r == '\n' }) {
		if strings.EqualFold(f, tok) {
			return true
		}
	}
	return false
}

// maxFeedsPerPage bounds the feeds one page may name.
const maxFeedsPerPage = 8

// isFeedType says whether a <link> type is a feed's.
func isFeedType(t string) bool {
	switch strings.ToLower(strings.TrimSpace(t)) {
	case "application/rss+xml", "application/atom+xml", "application/feed+json", "application/rdf+xml":
		return true
	}
	return false
}
