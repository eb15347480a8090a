package crawl

import (
	"testing"
	"time"

	"github.com/cocrawl/cocrawl/internal/testweb"
	"github.com/cocrawl/cocrawl/webevents"
)

// A host's honest sitemap: read from its robots.txt (or /sitemap.xml),
// its lastmods make changed pages due and the polls they cause confirm
// them. A host whose sitemap dates every page now is caught: its lastmods
// are refuted by the polls they cause, and it is polled without them.
func TestSitemapLastmods(t *testing.T) {
	for _, tt := range []struct {
		name string
		mode testweb.SitemapMode
		rate float64
	}{
		{"honest", testweb.SitemapHonest, 0.3},
		{"lying", testweb.SitemapLying, 0},
	} {
		t.Run(tt.name, func(t *testing.T) {
			w := runWeb(t, testweb.Config{Hosts: 2, PagesPerHost: 15, UpdateRate: tt.rate, RobotsEvery: 2, Sitemap: tt.mode, Seed: 4})
			cfg := testConfig(w)
			// Revisits far apart, sitemaps read often: polls come from lastmods.
			cfg.RevisitMin, cfg.RevisitMax, cfg.SitemapEvery = 20*time.Second, time.Minute, 300*time.Millisecond
			c := startCrawler(t, cfg, webevents.NewMemStore(), &MemFrontier{})
			var s SignalStats
			waitFor(t, 20*time.Second, "lastmods judged", func() bool {
				s = c.SignalStats()
				if tt.mode == testweb.SitemapHonest {
					return s.LastmodConfirmed >= 10
				}
				return s.HostsDistrusted == 2
			})
			t.Logf("%+v", s)
			if s.SitemapReads == 0 || s.HostsWithSitemaps != 2 {
				t.Errorf("sitemaps read %d times, from %d hosts", s.SitemapReads, s.HostsWithSitemaps)
			}
			switch tt.mode {
			case testweb.SitemapHonest:
				if s.LastmodRefuted > s.LastmodConfirmed/5 || s.HostsDistrusted != 0 {
					t.Errorf("an honest sitemap: %d lastmods confirmed, %d refuted, %d hosts distrusted", s.LastmodConfirmed, s.LastmodRefuted, s.HostsDistrusted)
				}
			case testweb.SitemapLying:
				if s.LastmodRefuted < lastmodDistrustAfter || s.LastmodConfirmed != 0 {
					t.Errorf("a lying sitemap: %d lastmods confirmed, %d refuted", s.LastmodConfirmed, s.LastmodRefuted)
				}
			}
		})
	}
}
