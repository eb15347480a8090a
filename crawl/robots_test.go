package crawl

import (
	"testing"
	"time"
)

func TestRobotsAllowed(t *testing.T) {
	const body = `# example
User-agent: otherbot
Disallow: /

User-agent: Cocrawl
User-agent: friend
Disallow: /private/
Allow: /private/ok.html
Disallow: /*.pdf$
Crawl-delay: 2.5

User-agent: *
Disallow: /
Crawl-delay: 9
`
	r := ParseRobots([]byte(body), "cocrawl")
	for _, tt := range []struct {
		agent, url string
		allowed    bool
	}{
		{"cocrawl", "http://a.example/", true},
		{"cocrawl", "http://a.example/private/x", false},
		{"cocrawl", "http://a.example/private/ok.html", true}, // longest match wins
		{"cocrawl", "http://a.example/doc.pdf", false},
		{"cocrawl", "http://a.example/doc.pdf?x=1", true}, // $ anchors the end
		{"COCRAWL", "http://a.example/private/x", false},  // agents match case-insensitively
		{"someone", "http://a.example/page", false},       // falls to *
		{"otherbot", "http://a.example/page", false},
		{"someone", "http://a.example/robots.txt", true}, // never checked against itself
	} {
		if got := r.Allowed(tt.agent, tt.url); got != tt.allowed {
			t.Errorf("%s %s: allowed=%v, want %v", tt.agent, tt.url, got, tt.allowed)
		}
	}
	if r.CrawlDelay != 2500*time.Millisecond {
		t.Errorf("crawl delay for cocrawl = %v, want 2.5s", r.CrawlDelay)
	}
	if d := ParseRobots([]byte(body), "nobody").CrawlDelay; d != 9*time.Second {
		t.Errorf("crawl delay for * = %v, want 9s", d)
	}
	if d := ParseRobots([]byte("User-agent: *\nDisallow: /x\n"), "cocrawl").CrawlDelay; d != 0 {
		t.Errorf("no crawl-delay gave %v", d)
	}
}

func TestRobotsModes(t *testing.T) {
	if !AllowAll().Allowed("cocrawl", "http://a.example/anything") {
		t.Error("allow-all disallowed")
	}
	d := DisallowAll()
	if d.Allowed("cocrawl", "http://a.example/") || !d.Allowed("cocrawl", "http://a.example/robots.txt") {
		t.Error("disallow-all is wrong")
	}
	// Only the first 500 KiB count: a rule past them is not seen.
	big := make([]byte, MaxRobotsBytes+100)
	for i := range big {
		big[i] = '\n'
	}
	big = append([]byte("User-agent: *\n"), big...)
	big = append(big, "Disallow: /\n"...)
	if !ParseRobots(big, "cocrawl").Allowed("cocrawl", "http://a.example/x") {
		t.Error("a rule past 500 KiB was applied")
	}
}
