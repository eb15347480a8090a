package crawl

import (
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/cocrawl/cocrawl/webevents"
)

// Issue 18, item 9: with scope "all", wildcard subdomains cannot add hosts
// without end, and the robots.txt files hosts keep stay within a budget.
func TestHostAndRobotsCaps(t *testing.T) {
	cfg := Config{Seeds: []string{"http://seed.example/"}, CID: testCID, Scope: "all",
		MaxHosts: 50, MaxHostsPerDomain: 10, MaxRobotsBytes: 10 << 10}
	c, err := New(cfg, webevents.NewMemStore(), &MemFrontier{})
	if err != nil {
		t.Fatal(err)
	}
	now := time.Now()
	c.mu.Lock()
	defer c.mu.Unlock()
	for i := range 1000 {
		c.addURL(fmt.Sprintf("http://w%d.wildcard.example/", i), 1, now)
		c.addURL(fmt.Sprintf("http://site%d.example/", i), 1, now)
	}
	if n := c.f.domains["wildcard.example"]; n != 10 {
		t.Errorf("%d hosts of one registrable domain, want the cap 10", n)
	}
	if n := len(c.f.hosts); n != 50 {
		t.Errorf("%d hosts, want the cap 50", n)
	}
	body := "User-agent: *\nDisallow: /x\n" + strings.Repeat("# padding\n", 300) // about 3 KiB
	for _, h := range c.f.hosts {
		c.cacheRobots(h, ParseRobots([]byte(body), "cocrawl"))
		if c.robotsMem > cfg.MaxRobotsBytes {
			t.Fatalf("robots.txt files keep %d bytes, over the budget %d", c.robotsMem, cfg.MaxRobotsBytes)
		}
	}
	kept, mem := 0, 0
	for _, h := range c.f.hosts {
		if h.robots != nil {
			kept++
			mem += h.robots.size()
		}
	}
	if kept == 0 || kept == len(c.f.hosts) || mem != c.robotsMem {
		t.Errorf("%d of %d hosts keep a robots.txt, %d bytes, counted %d", kept, len(c.f.hosts), mem, c.robotsMem)
	}
}
