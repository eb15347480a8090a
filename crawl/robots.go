package crawl

import (
	"strconv"
	"strings"
	"time"

	"github.com/jimsmart/grobotstxt"
)

// MaxRobotsBytes is how much of a robots.txt is parsed (RFC 9309 section
// 2.5 asks for at least 500 KiB).
const MaxRobotsBytes = 500 << 10

// Robots is the robots.txt policy of one host. Matching is done by
// github.com/jimsmart/grobotstxt, a port of Google's reference parser that
// passes its conformance tests; only Crawl-delay, which that library does
// not interpret, is read here through its parse callbacks.
type Robots struct {
	body       string
	mode       robotsMode
	CrawlDelay time.Duration // 0 when none applies to our agent
}

type robotsMode uint8

const (
	robotsRules       robotsMode = iota // decide by the rules in body
	robotsAllowAll                      // 4xx: no robots.txt
	robotsDisallowAll                   // 5xx or unreachable: assume complete disallow
)

// AllowAll is the policy of a host without a robots.txt.
func AllowAll() *Robots { return &Robots{mode: robotsAllowAll} }

// DisallowAll is the policy of a host whose robots.txt could not be had.
func DisallowAll() *Robots { return &Robots{mode: robotsDisallowAll} }

// ParseRobots reads a robots.txt body for agent (the product token of the
// User-Agent, e.g. "cocrawl"). Only the first MaxRobotsBytes count.
func ParseRobots(body []byte, agent string) *Robots {
	if len(body) > MaxRobotsBytes {
		body = body[:MaxRobotsBytes]
	}
	r := &Robots{body: string(body), mode: robotsRules}
	r.CrawlDelay = crawlDelay(r.body, agent)
	return r
}

// Allowed reports whether agent may fetch rawURL. /robots.txt itself is
// always allowed: it is never checked against itself.
func (r *Robots) Allowed(agent, rawURL string) bool {
	switch r.mode {
	case robotsAllowAll:
		return true
	case robotsDisallowAll:
		return pathOf(rawURL) == "/robots.txt"
	}
	if pathOf(rawURL) == "/robots.txt" {
		return true
	}
	return grobotstxt.AgentAllowed(r.body, agent, rawURL)
}

func pathOf(rawURL string) string {
	if i := strings.Index(rawURL, "://"); i >= 0 {
		rest := rawURL[i+3:]
		if j := strings.IndexAny(rest, "/?#"); j >= 0 {
			p := rest[j:]
			if k := strings.IndexAny(p, "?#"); k >= 0 {
				p = p[:k]
			}
			if p == "" {
				return "/"
			}
			return p
		}
		return "/"
	}
	return rawURL
}

// crawlDelay finds the Crawl-delay of the group that applies to agent: the
// group naming agent, else the "*" group. A group is a run of user-agent
// lines and the rules after them, as RFC 9309 section 2.1 defines it.
func crawlDelay(body, agent string) time.Duration {
	h := &delayHandler{agent: strings.ToLower(agent), specific: -1, star: -1}
	grobotstxt.Parse(body, h)
	switch {
	case h.specific >= 0:
		return h.specific
	case h.star >= 0:
		return h.star
	}
	return 0
}

type delayHandler struct {
	agent          string
	inAgents       bool // the last line was a user-agent line
	groupForUs     bool
	groupForStar   bool
	specific, star time.Duration
}

func (h *delayHandler) HandleRobotsStart() {}
func (h *delayHandler) HandleRobotsEnd()   {}
func (h *delayHandler) HandleUserAgent(_ int, v string) {
	if !h.inAgents {
		h.groupForUs, h.groupForStar = false, false
	}
	h.inAgents = true
	// The product token is the leading run of letters, '-' and '_'.
	tok := strings.ToLower(strings.TrimSpace(v))
	if i := strings.IndexFunc(tok, func(r rune) bool { return !(r >= 'a' && r <= 'z' || r == '-' || r == '_') }); i >= 0 {
		tok = tok[:i]
	}
	switch {
	case strings.TrimSpace(v) == "*":
		h.groupForStar = true
	case tok != "" && tok == h.agent:
		h.groupForUs = true
	}
}
func (h *delayHandler) HandleAllow(int, string)    { h.inAgents = false }
func (h *delayHandler) HandleDisallow(int, string) { h.inAgents = false }
func (h *delayHandler) HandleSitemap(int, string)  {}
func (h *delayHandler) HandleUnknownAction(_ int, action, value string) {
	h.inAgents = false
	if !strings.EqualFold(action, "crawl-delay") {
		return
	}
	secs, err := strconv.ParseFloat(strings.TrimSpace(value), 64)
	if err != nil || secs < 0 || secs > 86400 {
		return
	}
	d := time.Duration(secs * float64(time.Second))
	if h.groupForUs && h.specific < 0 {
		h.specific = d
	}
	if h.groupForStar && h.star < 0 {
		h.star = d
	}
}

// size is about the memory a parsed robots.txt keeps.
func (r *Robots) size() int {
	if r == nil {
		return 0
	}
	return len(r.body) + 64
}

// cacheRobots gives h its robots.txt and keeps all hosts' files within
// MaxRobotsBytes: past it, other hosts drop theirs (not one being served
// now) until a quarter of the budget is free; they fetch it again when
// next served. c.mu held.
func (c *Crawler) cacheRobots(h *host, rb *Robots) {
	c.robotsMem += rb.size() - h.robots.size()
	h.robots = rb
	if c.robotsMem <= c.cfg.MaxRobotsBytes {
		return
	}
	for o := range c.f.allHosts() {
		if c.robotsMem <= c.cfg.MaxRobotsBytes*3/4 {
			break
		}
		if o == h || o.busy || o.robots == nil {
			continue
		}
		c.robotsMem -= o.robots.size()
		o.robots, o.robotsUntil = nil, time.Time{}
	}
}
