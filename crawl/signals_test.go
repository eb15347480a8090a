package crawl

import (
	"bufio"
	"bytes"
	"errors"
	"fmt"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/cocrawl/cocrawl/crawl/sitemap"
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

// A proven host's sitemap stands in for the polls of pages it says are
// unchanged: against the same crawl without sitemaps, far fewer page
// requests, the changes still found.
func TestSitemapSavesPolls(t *testing.T) {
	run := func(sitemaps bool) (Stats, SignalStats) {
		w := runWeb(t, testweb.Config{Hosts: 1, PagesPerHost: 30, UpdateRate: 0.05, Sitemap: testweb.SitemapHonest, Seed: 6})
		cfg := testConfig(w)
		cfg.RevisitMin, cfg.RevisitMax, cfg.SitemapEvery, cfg.NoSitemaps = 500*time.Millisecond, 500*time.Millisecond, 250*time.Millisecond, !sitemaps
		cfg.Revisit = RevisitUniform
		c := startCrawler(t, cfg, webevents.NewMemStore(), &MemFrontier{})
		time.Sleep(6 * time.Second)
		return c.Stats(), c.SignalStats()
	}
	plain, _ := run(false)
	with, sig := run(true)
	t.Logf("without sitemaps: %d polls, %d updates found; with: %d polls and %d sitemap reads, %d updates found; %+v",
		plain.Polls, plain.Updated, with.Polls, sig.SitemapReads, with.Updated, sig)
	if sig.SitemapVisits == 0 || with.Polls+sig.SitemapReads > plain.Polls/2 {
		t.Errorf("sitemaps saved too little: %d polls and %d reads against %d", with.Polls, sig.SitemapReads, plain.Polls)
	}
	if with.Updated == 0 || sig.LastmodRefuted > sig.LastmodConfirmed/5 {
		t.Errorf("with sitemaps, %d updates found, lastmods %d confirmed and %d refuted", with.Updated, sig.LastmodConfirmed, sig.LastmodRefuted)
	}
}

// A host whose sitemap dates never move (written once) says no page
// changed: once its pages are polled as samples it is found out and
// distrusted, though its "unchanged" held for pages looked at seconds
// before (claimWeight), and an honest twin is not.
func TestFrozenSitemapDistrusted(t *testing.T) {
	for _, frozen := range []bool{true, false} {
		web := testweb.Config{Hosts: 1, PagesPerHost: 30, UpdateRate: 0.1, Sitemap: testweb.SitemapHonest, Seed: 8}
		if frozen {
			web.SitemapLiars, web.LiarSitemap = 1, testweb.SitemapFrozen
		}
		w := runWeb(t, web)
		cfg := testConfig(w)
		cfg.RevisitMin, cfg.RevisitMax, cfg.SitemapEvery = 500*time.Millisecond, 5*time.Second, 250*time.Millisecond
		c := startCrawler(t, cfg, webevents.NewMemStore(), &MemFrontier{})
		var s SignalStats
		start := time.Now()
		deadline := start.Add(12 * time.Second)
		if !frozen {
			deadline = start.Add(6 * time.Second) // long enough to be proven
		}
		for time.Now().Before(deadline) {
			if s = c.SignalStats(); s.HostsDistrusted > 0 {
				break
			}
			time.Sleep(100 * time.Millisecond)
		}
		t.Logf("frozen %v, after %v: %+v", frozen, time.Since(start).Round(100*time.Millisecond), s)
		if frozen != (s.HostsDistrusted > 0) {
			t.Errorf("frozen %v: %d hosts distrusted (lastmods %d confirmed, %d refuted)", frozen, s.HostsDistrusted, s.LastmodConfirmed, s.LastmodRefuted)
		}
	}
}

// A feed named on a host's home page, or by its robots.txt as a sitemap
// (sitemaps.org accepts feeds as sitemaps), is read in the host's rounds:
// its entries' dates make changed pages due, and the polls confirm them.
func TestFeedHints(t *testing.T) {
	for name, web := range map[string]testweb.Config{
		"linked":     {Feed: true, Seed: 5},
		"as-sitemap": {FeedAsSitemap: true, Seed: 6},
	} {
		t.Run(name, func(t *testing.T) {
			web.Hosts, web.PagesPerHost, web.UpdateRate = 1, 30, 0.3
			w := runWeb(t, web)
			cfg := testConfig(w)
			cfg.RevisitMin, cfg.RevisitMax, cfg.SitemapEvery = 20*time.Second, time.Minute, 300*time.Millisecond
			c := startCrawler(t, cfg, webevents.NewMemStore(), &MemFrontier{})
			var s SignalStats
			waitFor(t, 20*time.Second, "feed entries judged", func() bool {
				s = c.SignalStats()
				return s.LastmodConfirmed >= 5
			})
			t.Logf("%+v", s)
			if s.FeedReads == 0 || s.LastmodRefuted > s.LastmodConfirmed/5 || s.SitemapVisits != 0 {
				t.Errorf("feed reads %d, claims %d confirmed, %d refuted, %d visits counted (a feed counts none)",
					s.FeedReads, s.LastmodConfirmed, s.LastmodRefuted, s.SitemapVisits)
			}
		})
	}
}

func TestLooksLikeFeed(t *testing.T) {
	for doc, want := range map[string]bool{
		`<?xml version="1.0"?><rss version="2.0"><channel/></rss>`:                                           true,
		"\ufeff<?xml version=\"1.0\"?>\n<!-- made by hand -->\n<feed xmlns=\"http://www.w3.org/2005/Atom\">": true,
		`<rdf:RDF xmlns:rdf="http://www.w3.org/1999/02/22-rdf-syntax-ns#">`:                                  true,
		` {"version": "https://jsonfeed.org/version/1.1"}`:                                                   true,
		`<?xml version="1.0"?><urlset xmlns="http://www.sitemaps.org/schemas/sitemap/0.9">`:                  false,
		`<sitemapindex>`: false,
		`<feedback/>`:    false,
		"\x1f\x8b\x08":   false,
		``:               false,
	} {
		if got := looksLikeFeed(bufio.NewReader(strings.NewReader(doc))); got != want {
			t.Errorf("looksLikeFeed(%q) = %v", doc, got)
		}
	}
}

// A feed is network input: whatever it holds, readFeed returns entries
// with normalised links, dated to the second, or an error; never a panic.
func FuzzReadFeed(f *testing.F) {
	f.Add([]byte(`<?xml version="1.0"?><feed xmlns="http://www.w3.org/2005/Atom"><entry><link href="/a"/><updated>2026-11-23T00:00:00Z</updated></entry></feed>`))
	f.Add([]byte(`<rss version="2.0"><channel><item><link>http://a.test/b</link><pubDate>Mon, 23 Nov 2026 00:00:00 GMT</pubDate></item></channel></rss>`))
	f.Add([]byte(`{"version":"https://jsonfeed.org/version/1.1","items":[{"id":"1","url":"/c","date_modified":"2026-11-23T00:00:00Z"}]}`))
	f.Fuzz(func(t *testing.T, doc []byte) {
		entries, err := readFeed(bytes.NewReader(doc), "http://a.test/feed.xml")
		if err != nil {
			return
		}
		for _, e := range entries {
			if _, nerr := Normalize(nil, e.Loc); nerr != nil || e.Precision != time.Second {
				t.Fatalf("entry %+v", e)
			}
		}
	})
}

// ResourceSync in: from a host's /.well-known/resourcesync, through its
// capability list, to its change list, whose changes make pages due; the
// polls confirm them.
func TestResourceSyncIn(t *testing.T) {
	start := time.Now().Add(-time.Minute).Truncate(time.Second)
	version := func() int { return int(time.Since(start) / (1500 * time.Millisecond)) }
	var srv *httptest.Server
	srv = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		lmd := start.Add(time.Duration(version()) * 1500 * time.Millisecond).Truncate(time.Second)
		xml := func(body string) {
			w.Header().Set("Content-Type", "application/xml")
			fmt.Fprintf(w, `<urlset xmlns="http://www.sitemaps.org/schemas/sitemap/0.9" xmlns:rs="http://www.openarchives.org/rs/terms/">%s</urlset>`, body)
		}
		switch r.URL.Path {
		case "/.well-known/resourcesync":
			xml(`<rs:md capability="description"/><url><loc>` + srv.URL + `/caps.xml</loc><rs:md capability="capabilitylist"/></url>`)
		case "/caps.xml":
			xml(`<rs:md capability="capabilitylist"/><url><loc>` + srv.URL + `/changes.xml</loc><rs:md capability="changelist"/></url>`)
		case "/changes.xml":
			xml(`<rs:md capability="changelist"/><url><loc>` + srv.URL + `/p1</loc><rs:md change="updated" datetime="` + lmd.UTC().Format(time.RFC3339) + `"/></url>` +
				`<url><loc>http://elsewhere.test/x</loc><rs:md change="updated" datetime="` + lmd.UTC().Format(time.RFC3339) + `"/></url>`)
		case "/", "/p1":
			w.Header().Set("ETag", fmt.Sprintf(`"v%d"`, version()))
			w.Header().Set("Last-Modified", lmd.UTC().Format(http.TimeFormat))
			w.Header().Set("Content-Type", "text/html")
			if r.Header.Get("If-None-Match") == fmt.Sprintf(`"v%d"`, version()) {
				w.WriteHeader(http.StatusNotModified)
				return
			}
			fmt.Fprintf(w, `<html><body><a href="/p1">p1</a> version %d</body></html>`, version())
		default:
			http.NotFound(w, r)
		}
	}))
	defer srv.Close()
	cfg := Config{Seeds: []string{srv.URL + "/"}, CID: testCID, MinDelay: 10 * time.Millisecond, DelaySet: true,
		RevisitMin: 20 * time.Second, RevisitMax: time.Minute, SitemapEvery: 300 * time.Millisecond, Fetch: FetchConfig{AllowPrivate: true}}
	c := startCrawler(t, cfg, webevents.NewMemStore(), &MemFrontier{})
	var s SignalStats
	waitFor(t, 20*time.Second, "changes from the change list confirmed", func() bool {
		s = c.SignalStats()
		return s.LastmodConfirmed >= 3
	})
	t.Logf("%+v", s)
	if s.LastmodRefuted > 0 || c.Stats().Updated < 3 {
		t.Errorf("%+v, %d updates", s, c.Stats().Updated)
	}
	if _, ok := c.stateOf("http://elsewhere.test/x"); ok {
		t.Error("a change list's URL of another host joined the frontier")
	}
}

// Once a host's change list has proven true, its changes are stored as
// the publisher's web-events, attributed to its ResourceSync, and visits of
// their pages: the pages are polled only as samples.
func TestResourceSyncChangesBecomeEvents(t *testing.T) {
	const pages = 20
	start := time.Now().Add(-time.Minute).Truncate(time.Second)
	version := func() int { return int(time.Since(start) / (1500 * time.Millisecond)) }
	lmdOf := func(v int) time.Time {
		return start.Add(time.Duration(v) * 1500 * time.Millisecond).Truncate(time.Second)
	}
	var pagePolls atomic.Int64
	var srv *httptest.Server
	srv = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		v := version()
		xml := func(body string) {
			w.Header().Set("Content-Type", "application/xml")
			fmt.Fprintf(w, `<urlset xmlns="http://www.sitemaps.org/schemas/sitemap/0.9" xmlns:rs="http://www.openarchives.org/rs/terms/">%s</urlset>`, body)
		}
		switch {
		case r.URL.Path == "/.well-known/resourcesync":
			xml(`<rs:md capability="description"/><url><loc>` + srv.URL + `/caps.xml</loc><rs:md capability="capabilitylist"/></url>`)
		case r.URL.Path == "/caps.xml":
			xml(`<rs:md capability="capabilitylist"/><url><loc>` + srv.URL + `/changes.xml</loc><rs:md capability="changelist"/></url>`)
		case r.URL.Path == "/changes.xml":
			var b strings.Builder
			for i := range pages {
				fmt.Fprintf(&b, `<url><loc>%s/p%d</loc><rs:md change="updated" datetime="%s" length="%d"/></url>`, srv.URL, i, lmdOf(v).UTC().Format(time.RFC3339), 40+i)
			}
			xml(`<rs:md capability="changelist"/>` + b.String())
		case r.URL.Path == "/" || strings.HasPrefix(r.URL.Path, "/p"):
			if r.URL.Path != "/" {
				pagePolls.Add(1)
			}
			w.Header().Set("Last-Modified", lmdOf(v).UTC().Format(http.TimeFormat))
			w.Header().Set("Content-Type", "text/html")
			fmt.Fprintf(w, `<html><body>version %d</body></html>`, v)
		default:
			http.NotFound(w, r)
		}
	}))
	defer srv.Close()
	cfg := Config{Seeds: []string{srv.URL + "/"}, CID: testCID, MinDelay: 10 * time.Millisecond, DelaySet: true,
		RevisitMin: 20 * time.Second, RevisitMax: time.Minute, SitemapEvery: 300 * time.Millisecond, Fetch: FetchConfig{AllowPrivate: true}}
	st := webevents.NewMemStore()
	c := startCrawler(t, cfg, st, &MemFrontier{})
	waitFor(t, 30*time.Second, "the host proven and its changes stored as events", func() bool { return c.SignalStats().PublisherEvents > 0 })
	pollsBefore, eventsBefore := pagePolls.Load(), c.SignalStats().PublisherEvents
	waitFor(t, 30*time.Second, "more changes stored as the publisher's events", func() bool { return c.SignalStats().PublisherEvents >= eventsBefore+4*pages })
	s := c.SignalStats()
	source := srv.URL + "/.well-known/resourcesync"
	n := 0
	if err := st.Current(func(e webevents.Event) error {
		if e.From == source {
			n++
			if !strings.HasSuffix(e.CID, " ResourceSync") || e.Stat != webevents.Update || e.Size < 40 {
				t.Errorf("a publisher's event %+v", e)
			}
		}
		return nil
	}); err != nil {
		t.Fatal(err)
	}
	t.Logf("%+v; %d page polls; %d current states attributed to the publisher", s, pagePolls.Load(), n)
	if n == 0 || s.LastmodRefuted > 0 {
		t.Errorf("%d states attributed to %s; %d claims refuted", n, source, s.LastmodRefuted)
	}
	// Once proven, only samples (one in 32) are polled.
	if polls, events := pagePolls.Load()-pollsBefore, s.PublisherEvents-eventsBefore; polls > events/8 {
		t.Errorf("%d page polls for %d changes stored as events: the change list did not stand in for polls", polls, events)
	}
}

// IndexNow: a submission counts only once the host serves its key; then
// its URLs are due at once, and the poll confirms the change. A wrong key
// counts for nothing; URLs of two hosts, or of a host not known, are
// refused.
func TestIndexNow(t *testing.T) {
	var version atomic.Int32
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		switch r.URL.Path {
		case "/goodkey1.txt":
			fmt.Fprint(w, "goodkey1\n")
		case "/badkey12.txt":
			fmt.Fprint(w, "something else")
		case "/", "/p1":
			v := version.Load()
			w.Header().Set("ETag", fmt.Sprintf(`"v%d"`, v))
			if r.Header.Get("If-None-Match") == fmt.Sprintf(`"v%d"`, v) {
				w.WriteHeader(http.StatusNotModified)
				return
			}
			w.Header().Set("Content-Type", "text/html")
			fmt.Fprintf(w, `<html><body><a href="/p1">p1</a> version %d</body></html>`, v)
		default:
			http.NotFound(w, r)
		}
	}))
	defer srv.Close()
	cfg := Config{Seeds: []string{srv.URL + "/"}, CID: testCID, MinDelay: 10 * time.Millisecond, DelaySet: true,
		RevisitMin: time.Hour, RevisitMax: 2 * time.Hour, Fetch: FetchConfig{AllowPrivate: true}}
	c := startCrawler(t, cfg, webevents.NewMemStore(), &MemFrontier{})
	waitFor(t, 10*time.Second, "the first crawl", func() bool { return c.Stats().Created == 2 })
	if err := c.IndexNow("goodkey1", "", []string{srv.URL + "/p1", "http://other.test/x"}); !errors.Is(err, ErrSubmissionScope) {
		t.Errorf("URLs of two hosts: %v", err)
	}
	if err := c.IndexNow("goodkey1", "", []string{"http://unknown.test/x"}); !errors.Is(err, ErrSubmissionScope) {
		t.Errorf("a host not known: %v", err)
	}
	version.Add(1)
	if err := c.IndexNow("badkey12", "", []string{srv.URL + "/p1"}); err != nil {
		t.Fatal(err)
	}
	waitFor(t, 10*time.Second, "the wrong key refused", func() bool { return c.SignalStats().IndexNowRefused == 1 })
	if c.Stats().Updated != 0 {
		t.Fatal("a submission with a wrong key made a page due")
	}
	if err := c.IndexNow("goodkey1", srv.URL+"/goodkey1.txt", []string{srv.URL + "/p1"}); err != nil {
		t.Fatal(err)
	}
	waitFor(t, 10*time.Second, "the submitted change polled", func() bool { return c.Stats().Updated == 1 })
	s := c.SignalStats()
	t.Logf("%+v", s)
	if s.IndexNowURLs != 1 || s.LastmodConfirmed != 1 {
		t.Errorf("%+v", s)
	}
}

// When a host's lastmods prove false, what its word put off is due at once:
// every URL of the host is polled again, not a revisit interval later.
func TestDistrustRepollsTheHost(t *testing.T) {
	c := &Crawler{f: newFrontier(), cfg: Config{Logger: slog.New(slog.DiscardHandler)}}
	now := time.Now()
	var states []*URLState
	for i := range 10 {
		st, _ := c.f.add(URLState{URL: fmt.Sprintf("http://liar.example/%d", i), Polls: 1, Due: now.Add(time.Hour)})
		states = append(states, st)
	}
	h := c.f.hosts["http://liar.example"]
	for i := range lastmodDistrustAfter {
		states[i].lastmodClaim = claimChanged
		c.judgeLastmod(h, states[i], false, time.Time{}, now)
	}
	if h.signals.distrustUntil.Before(now) {
		t.Fatalf("%d refutations did not distrust the host", lastmodDistrustAfter)
	}
	for i, st := range states {
		if i != lastmodDistrustAfter-1 && st.Due.After(now) { // the last judged is being polled
			t.Errorf("%s due in %v after its host was distrusted", st.URL, st.Due.Sub(now))
		}
	}
}

// A change list entry becomes the publisher's web-event only when it can
// be one: a known change, a datetime to the second between 1993 and the
// read, within the event's bounds; the rest stay claims to poll.
func TestPublisherEventBounds(t *testing.T) {
	read := time.Now().Truncate(time.Second)
	ok := sitemap.Entry{Loc: "http://pub.example/a", Change: "updated", LastMod: read.Add(-time.Minute), Precision: time.Second, Length: 12,
		Hash: "md5:abc sha-256:9F86D081884C7D659A2FEAA0C55AD015A3BF4F1B2B0B822CD15D6C15B0F00A08"}
	e, good := publisherEvent("http://pub.example", "http://pub.example/a", ok, read)
	if !good || e.Stat != webevents.Update || e.CID != "pub.example:80 ResourceSync" || e.From != "http://pub.example/.well-known/resourcesync" ||
		e.Size != 12 || e.Digest != "sha256:9f86d081884c7d659a2feaa0c55ad015a3bf4f1b2b0b822cd15d6c15b0f00a08" || e.LPD != read.Unix() {
		t.Fatalf("publisherEvent = %+v, %v", e, good)
	}
	for name, mod := range map[string]func(*sitemap.Entry){
		"unknown change": func(e *sitemap.Entry) { e.Change = "moved" },
		"undated":        func(e *sitemap.Entry) { e.LastMod = time.Time{} },
		"a date alone":   func(e *sitemap.Entry) { e.Precision = 24 * time.Hour },
		"after the read": func(e *sitemap.Entry) { e.LastMod = read.Add(time.Hour) },
		"before 1993":    func(e *sitemap.Entry) { e.LastMod = time.Unix(1, 0) },
		"a size too big": func(e *sitemap.Entry) { e.Length = webevents.MaxSize + 1 },
		"a bad sha-256":  func(e *sitemap.Entry) { e.Hash = "sha-256:zz" }, // dropped, not refused
	} {
		entry := ok
		mod(&entry)
		e, good := publisherEvent("http://pub.example", "http://pub.example/a", entry, read)
		if name == "a bad sha-256" {
			if !good || e.Digest != "" {
				t.Errorf("%s: %+v, %v; want the event without a digest", name, e, good)
			}
			continue
		}
		if good {
			t.Errorf("%s: taken as an event %+v", name, e)
		}
	}
}
