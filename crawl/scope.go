package crawl

import (
	"net/url"
	"regexp"
	"strings"

	"golang.org/x/net/publicsuffix"
)

// ExcludePrefixes replaces the URL prefixes the crawler never polls: known
// peers' share repositories (spec section 10). It replaces rather than
// adds, so a list that changes cannot grow without bound.
func (c *Crawler) ExcludePrefixes(ps []string) {
	c.mu.Lock()
	c.excluded = append([]string(nil), ps...)
	c.mu.Unlock()
}

// InScope says whether a URL is within the crawler's scope: its seeds'
// hosts or domains, or any URL with Scope "all".
func (c *Crawler) InScope(u string) bool {
	if c.cfg.Scope == "all" {
		return true
	}
	// No lock: the scope is made in New and only read after, and a merge
	// asks this for every record while the crawler holds its lock.
	return c.scope[c.scopeKey(u)]
}

func (c *Crawler) scopeKey(u string) string {
	switch c.cfg.Scope {
	case "all":
		return ""
	case "domain":
		p, err := url.Parse(u)
		if err != nil {
			return ""
		}
		if d, err := publicsuffix.EffectiveTLDPlusOne(p.Hostname()); err == nil {
			return d
		}
		return p.Hostname()
	}
	// The host, as hostKey finds it without parsing the URL (a parse here
	// was 2% of a crawl's CPU).
	_, h, _ := strings.Cut(hostKey(u), "://")
	return h
}

// admit applies scope, share-file and trap rules to a normalised URL at
// depth; it is called with c.mu held.
func (c *Crawler) admit(u string, depth int) bool {
	if len(u) > c.cfg.MaxURLLength {
		return false
	}
	if c.cfg.Scope != "all" && !c.scope[c.scopeKey(u)] {
		return false
	}
	if strings.HasSuffix(u, "/robots.shr") || strings.HasSuffix(u, "/robots.txt") {
		return false // share-control and robots files make no web-events
	}
	for _, p := range c.excluded {
		if strings.HasPrefix(u, p) {
			return false
		}
	}
	dynamic := strings.Contains(u, "?")
	if depth > c.cfg.MaxStaticDepth || dynamic && depth > c.cfg.MaxDynamicDepth {
		return false
	}
	if repeatedSegments(u) > c.cfg.MaxSegmentRepet {
		return false
	}
	key := hostKey(u)
	if h := c.f.lookup(key); h != nil && (h.known >= c.cfg.MaxURLsPerHost || h.overServerCap) {
		return false
	} else if h == nil && (c.f.hostCount() >= c.cfg.MaxHosts || c.f.domains[domainOf(key)] >= c.cfg.MaxHostsPerDomain) {
		return false // a new host past the caps: wildcard subdomains
	}
	if len(c.include) > 0 && !anyMatch(c.include, u) {
		return false
	}
	return !anyMatch(c.exclude, u)
}

func anyMatch(res []*regexp.Regexp, s string) bool {
	for _, re := range res {
		if re.MatchString(s) {
			return true
		}
	}
	return false
}

// repeatedSegments returns how often the most frequent path segment occurs:
// /a/a/a/ is a loop of relative links, not a site.
func repeatedSegments(u string) int {
	// A URL with no escape (most) is cut up where it lies: a parse and a
	// map here were a third of the URLs parsed in a crawl.
	if scheme, rest, ok := strings.Cut(u, "://"); ok && (scheme == "http" || scheme == "https") && !strings.ContainsAny(u, "%@\\ ") {
		if i := strings.IndexByte(rest, '/'); i >= 0 && !strings.ContainsAny(rest[:i], "?#") {
			path := rest[i:]
			if j := strings.IndexAny(path, "?#"); j >= 0 {
				path = path[:j]
			}
			if strings.Count(path, "/") <= 16 {
				return mostRepeated(path)
			}
		}
	}
	return repeatedSegmentsParsed(u)
}

// repeatedSegmentsParsed is repeatedSegments by url.Parse and a map: any
// URL, any number of segments (FuzzRepeatedSegments holds the shortcut
// above to it).
func repeatedSegmentsParsed(u string) int {
	p, err := url.Parse(u)
	if err != nil {
		return 0
	}
	seen := map[string]int{}
	most := 0
	for _, s := range strings.Split(p.Path, "/") {
		if s == "" {
			continue
		}
		seen[s]++
		most = max(most, seen[s])
	}
	return most
}

// mostRepeated is repeatedSegments of a path of at most 16 segments,
// counted pairwise.
func mostRepeated(path string) int {
	var segs [16]string
	n := 0
	for s := range strings.SplitSeq(path, "/") {
		if s != "" && n < len(segs) {
			segs[n] = s
			n++
		}
	}
	most := 0
	for i := range n {
		c := 0
		for j := i; j < n; j++ {
			if segs[j] == segs[i] {
				c++
			}
		}
		most = max(most, c)
	}
	return most
}

// Delegate replaces the URL prefixes that are left to peers: a cooperating
// peer merges the events of its peers' special sets instead of polling them
// (thesis section 3.2). URLs under them stay in the frontier and are looked
// at again after RevisitMin, so polling resumes if the peer goes away.
func (c *Crawler) Delegate(prefixes []string) {
	c.mu.Lock()
	c.delegated = append([]string(nil), prefixes...)
	c.mu.Unlock()
}

func hasAnyPrefix(s string, prefixes []string) bool {
	for _, p := range prefixes {
		if strings.HasPrefix(s, p) {
			return true
		}
	}
	return false
}
