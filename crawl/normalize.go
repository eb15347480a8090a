package crawl

import (
	"errors"
	"net/netip"
	"net/url"
	"strings"

	"golang.org/x/net/idna"
)

// ErrNotHTTP is returned for URLs the crawler does not fetch.
var ErrNotHTTP = errors.New("crawl: not an http(s) URL")

// sessionParams are query parameters (and ;params) known to carry a
// session ID: the same page under endless names. Compared lower-cased.
var sessionParams = map[string]bool{
	"jsessionid": true, "phpsessid": true, "sid": true, "sessionid": true, "session_id": true,
	"aspsessionid": true, "cfid": true, "cftoken": true, "zenid": true, "oscsid": true,
}

// Normalize resolves ref against base (nil for an absolute ref) and puts the
// result in a canonical form, so one page has one name in the frontier and
// the store. It is idempotent: Normalize(Normalize(u)) == Normalize(u).
//
// The rules, after RFC 3986 section 6: scheme and host lower case, IDNA
// host names in ASCII, no trailing dot on the host, default ports dropped,
// fragment and user info dropped, dot segments removed, an empty path
// made "/", percent-encodings of unreserved characters decoded and the
// others upper-cased, known session-ID parameters removed, an empty query
// dropped. The Go standard library resolves references; no maintained
// module does the rest to this specification, so it is written here.
func Normalize(base *url.URL, ref string) (string, error) {
	return normalize(base, ref, nil)
}

// hostMemo remembers the last host a normalize put in canonical form: the
// links of one page mostly name one host, and IDNA's mapping of it was a
// quarter of Normalize's time.
type hostMemo struct {
	raw, host string
	err       error
	set       bool
}

func (m *hostMemo) toASCII(raw string) (string, error) {
	if m == nil {
		return idna.Lookup.ToASCII(raw)
	}
	if !m.set || m.raw != raw {
		m.host, m.err = idna.Lookup.ToASCII(raw)
		m.raw, m.set = raw, true
	}
	return m.host, m.err
}

// pageBase is what a page's links are resolved against, with what the
// common link needs to skip the general path: a page's links are mostly
// paths of plain characters on its own host, which parsing, resolving and
// printing as URLs cost 6% of a crawl's CPU and a tenth of its bytes.
type pageBase struct {
	url    *url.URL
	memo   hostMemo
	fast   bool   // prefix, dir, path and query are set
	prefix string // scheme://host[:port] in normal form
	dir    string // the base's path up to its last '/', in normal form
	path   string // the base's path, in normal form
	query  string // the base's query, in normal form ("" for none)
}

func newPageBase(base *url.URL) *pageBase {
	pb := &pageBase{url: base}
	if base == nil || base.Opaque != "" {
		return pb
	}
	p := base.EscapedPath()
	if !strings.HasPrefix(p, "/") || !plainPath(p) || hasDotSegment(p) {
		return pb
	}
	root, err := Normalize(nil, base.Scheme+"://"+base.Host+"/")
	if err != nil {
		return pb
	}
	pb.fast, pb.prefix, pb.dir, pb.path = true, strings.TrimSuffix(root, "/"), p[:strings.LastIndexByte(p, '/')+1], p
	pb.query = normalizeQuery(base.RawQuery)
	return pb
}

// plainPath says whether a path holds only unreserved characters and
// slashes: nothing for normalisation to decode, encode or drop.
func plainPath(p string) bool {
	for i := 0; i < len(p); i++ {
		if c := p[i]; c != '/' && !unreserved(c) {
			return false
		}
	}
	return true
}

// normalize is Normalize for a link of a page. The common links are
// joined to the base directly, which gives what Normalize gives
// (FuzzNormalizeLink): a plain path (no escape or dot segment), relative
// or from the root, or with the page's own origin written out before it,
// as many sites write every link, or another site's URL already in
// normal form (plainURL); nothing, for the page itself; each with a query
// of plain characters (which normalizeQuery puts in normal form either
// way) or none, and a fragment without escapes (dropped) or none. Any
// other goes the general way, which parses and resolves it as a URL at
// four to ten times the cost (BenchmarkPageLinks).
func (pb *pageBase) normalize(ref string) (string, error) {
	if pb.fast {
		if u, ok := pb.join(strings.TrimSpace(ref)); ok {
			return u, nil
		}
	}
	return normalize(pb.url, ref, &pb.memo)
}

// join is normalize's short way; ok is false for a link it does not take.
func (pb *pageBase) join(r string) (string, bool) {
	if r == "" {
		return "", false
	}
	if i := strings.IndexByte(r, '#'); i >= 0 {
		if strings.IndexByte(r[i:], '%') >= 0 {
			return "", false // an escape the general way checks
		}
		r = r[:i]
	}
	p, q, hasQuery := strings.Cut(r, "?")
	if hasQuery && !plainQuery(q) {
		return "", false
	}
	var joined string
	switch {
	case p == "": // the page itself, with its own query unless the link gives one
		joined = pb.prefix + pb.path
		if !hasQuery {
			if pb.query != "" {
				joined += "?" + pb.query
			}
			return joined, true
		}
	case strings.HasPrefix(p, pb.prefix) && len(p) > len(pb.prefix) && p[len(pb.prefix)] == '/':
		rest := p[len(pb.prefix):]
		if !plainPath(rest) || hasDotSegment(rest) {
			return "", false
		}
		joined = p
	case strings.HasPrefix(p, "http://") || strings.HasPrefix(p, "https://"):
		if !pb.plainURL(p) {
			return "", false
		}
		joined = p
	case strings.HasPrefix(p, "//") || !plainPath(p) || hasDotSegment(p):
		return "", false
	case p[0] == '/':
		joined = pb.prefix + p
	default:
		joined = pb.prefix + pb.dir + p
	}
	if nq := normalizeQuery(q); nq != "" {
		joined += "?" + nq
	}
	return joined, true
}

// plainURL says whether u, an http or https URL, is in normal form with
// a plain path: a host of lower-case letters, digits, hyphens and dots
// that IDNA leaves as it is (asked of the page's memo, as the general way
// does), no port, user or trailing dot, and a path.
func (pb *pageBase) plainURL(u string) bool {
	i := strings.Index(u, "://") + 3
	slash := strings.IndexByte(u[i:], '/')
	if slash <= 0 {
		return false
	}
	host, path := u[i:i+slash], u[i+slash:]
	for j := 0; j < len(host); j++ {
		if c := host[j]; !(c >= 'a' && c <= 'z' || c >= '0' && c <= '9' || c == '-' || c == '.') {
			return false
		}
	}
	if host[len(host)-1] == '.' || !dnsName(host) || !plainPath(path) || hasDotSegment(path) {
		return false
	}
	a, err := pb.memo.toASCII(host)
	return err == nil && a == host
}

// plainQuery says whether a query holds only characters that a URL parse
// keeps as they are, and no fragment.
func plainQuery(q string) bool {
	for i := 0; i < len(q); i++ {
		if c := q[i]; !unreserved(c) && strings.IndexByte("=&+,;:@/?!$'()*%", c) < 0 {
			return false
		}
	}
	return true
}

// normalize is Normalize with a memo of the last host (nil: none).
func normalize(base *url.URL, ref string, memo *hostMemo) (string, error) {
	ref = strings.TrimSpace(ref)
	u, err := url.Parse(ref)
	if err != nil {
		return "", err
	}
	if base != nil {
		u = base.ResolveReference(u)
	}
	u.Scheme = strings.ToLower(u.Scheme)
	if u.Scheme != "http" && u.Scheme != "https" {
		return "", ErrNotHTTP
	}
	host, port := u.Hostname(), u.Port()
	host = strings.TrimRight(strings.ToLower(host), ".")
	if host == "" {
		return "", ErrNotHTTP
	}
	if strings.Contains(host, ":") { // an IPv6 literal, in canonical form
		ip, err := netip.ParseAddr(host)
		if err != nil || ip.Zone() != "" || !ip.Is6() {
			return "", ErrNotHTTP
		}
		host = ip.String()
	} else if host, err = memo.toASCII(host); err != nil {
		return "", err
	}
	if !strings.Contains(host, ":") && !dnsName(host) {
		return "", ErrNotHTTP
	}
	if (u.Scheme == "http" && port == "80") || (u.Scheme == "https" && port == "443") {
		port = ""
	}
	if strings.Contains(host, ":") {
		host = "[" + host + "]"
	}
	if port != "" {
		host += ":" + port
	}
	u.Host, u.User, u.Fragment, u.RawFragment = host, nil, "", ""

	p := normalizeEscapes(u.EscapedPath())
	p = dropSessionPathParam(p) // first: it can leave a dot segment behind
	p = removeDotSegments(p)
	if p == "" {
		p = "/"
	}
	if u.Path, err = url.PathUnescape(p); err != nil {
		return "", err
	}
	u.RawPath = p
	u.RawQuery = normalizeQuery(u.RawQuery)
	u.ForceQuery = false
	return u.String(), nil
}

// dnsName checks the lengths DNS allows: labels of 1 to 63 bytes, 253 in
// all. (idna can map a label like "xn--" to nothing, or a long one to more
// than 63 bytes, which it then refuses to read back.)
func dnsName(h string) bool {
	if len(h) == 0 || len(h) > 253 {
		return false
	}
	for _, l := range strings.Split(h, ".") {
		if len(l) == 0 || len(l) > 63 {
			return false
		}
	}
	return true
}

// normalizeEscapes decodes %XX of unreserved characters, upper-cases the hex
// of the rest, and encodes a % that starts no escape.
func normalizeEscapes(s string) string {
	if !strings.Contains(s, "%") {
		return s
	}
	var b strings.Builder
	for i := 0; i < len(s); i++ {
		if s[i] == '%' && i+2 < len(s) && ishex(s[i+1]) && ishex(s[i+2]) {
			c := unhex(s[i+1])<<4 | unhex(s[i+2])
			if unreserved(c) {
				b.WriteByte(c)
			} else {
				b.WriteByte('%')
				b.WriteString(strings.ToUpper(s[i+1 : i+3]))
			}
			i += 2
			continue
		}
		if s[i] == '%' { // a lone % would pair with what follows next time
			b.WriteString("%25")
			continue
		}
		b.WriteByte(s[i])
	}
	return b.String()
}

// escapeInvalid percent-encodes the bytes a URL may not hold as they are:
// controls, space, non-ASCII and "<>\^`{|}.
func escapeInvalid(s string) string {
	const hex = "0123456789ABCDEF"
	var b strings.Builder
	for i := 0; i < len(s); i++ {
		c := s[i]
		if c <= ' ' || c >= 0x7f || strings.IndexByte("\"<>\\^`{|}", c) >= 0 {
			b.WriteByte('%')
			b.WriteByte(hex[c>>4])
			b.WriteByte(hex[c&15])
			continue
		}
		b.WriteByte(c)
	}
	return b.String()
}

func unreserved(c byte) bool {
	return c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' || c == '-' || c == '.' || c == '_' || c == '~'
}

func ishex(c byte) bool { return c >= '0' && c <= '9' || c >= 'a' && c <= 'f' || c >= 'A' && c <= 'F' }

func unhex(c byte) byte {
	switch {
	case c >= 'a':
		return c - 'a' + 10
	case c >= 'A':
		return c - 'A' + 10
	}
	return c - '0'
}

// removeDotSegments is RFC 3986 section 5.2.4 on an escaped path.
func removeDotSegments(p string) string {
	if !hasDotSegment(p) {
		return p
	}
	segs := strings.Split(p, "/")
	out := make([]string, 0, len(segs))
	for i, s := range segs {
		switch s {
		case ".":
			if i == len(segs)-1 {
				out = append(out, "")
			}
		case "..":
			if len(out) > 1 {
				out = out[:len(out)-1]
			}
			if i == len(segs)-1 {
				out = append(out, "")
			}
		default:
			out = append(out, s)
		}
	}
	r := strings.Join(out, "/")
	if strings.HasPrefix(p, "/") && !strings.HasPrefix(r, "/") {
		r = "/" + r
	}
	return r
}

// hasDotSegment says whether a path has a segment "." or "..".
func hasDotSegment(p string) bool {
	for p != "" {
		seg, rest, _ := strings.Cut(p, "/")
		if seg == "." || seg == ".." {
			return true
		}
		p = rest
	}
	return false
}

// dropSessionPathParam removes ";jsessionid=..." style path parameters.
func dropSessionPathParam(p string) string {
	i := strings.IndexByte(p, ';')
	if i < 0 {
		return p
	}
	name, _, _ := strings.Cut(strings.ToLower(p[i+1:]), "=")
	if sessionParams[name] {
		if j := strings.IndexByte(p[i:], '/'); j >= 0 {
			return p[:i] + p[i+j:]
		}
		return p[:i]
	}
	return p
}

func normalizeQuery(q string) string {
	if q == "" {
		return ""
	}
	parts := strings.Split(q, "&")
	out := parts[:0]
	for _, kv := range parts {
		if kv == "" {
			continue
		}
		name, _, _ := strings.Cut(kv, "=")
		if n, err := url.QueryUnescape(name); err == nil && sessionParams[strings.ToLower(n)] {
			continue
		}
		out = append(out, escapeInvalid(normalizeEscapes(kv)))
	}
	return strings.Join(out, "&")
}
