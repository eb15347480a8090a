package main

import (
	"context"
	"flag"
	"fmt"
	"os"
	"strings"
	"time"

	"github.com/cocrawl/cocrawl/crawl"
	"github.com/cocrawl/cocrawl/crawl/warc"
	"github.com/cocrawl/cocrawl/internal/memlimit"
	"github.com/cocrawl/cocrawl/protocol"
)

// crawlSettings are the settings every crawling command (crawl, run)
// takes: flags, then COCRAWL_* environment, then a TOML file (a [crawl]
// table by convention), then these defaults.
type crawlSettings struct {
	Delay         duration
	Workers       int
	RevisitMin    duration
	RevisitMax    duration
	RevisitPolicy string
	FirstVisits   string
	Explore       float64
	Sitemaps      bool
	SitemapEvery  duration
	UserAgent     string
	From          string
	MaxCrawlDelay duration
	Scope         string
	Include       []string
	Exclude       []string
	ConnsPerHost  int
	// per server address (virtual hosts share one)
	ServerConns       int
	ServerDelayShare  float64
	MaxHostsPerServer int
	// WARC capture (crawl/warc): the folder, "" for none, and the size a
	// file may reach
	Warc       string
	WarcMaxMiB int
	// HeapHeadroom is the collector's headroom as a share of the live
	// heap (internal/memlimit); 0: Go's default, twice the live heap.
	HeapHeadroom float64
}

type duration struct{ time.Duration }

// defaultCrawlSettings are the crawler's own defaults (crawl.Defaults),
// polite for the real web, with a User-Agent that names the project.
func defaultCrawlSettings() crawlSettings {
	d := crawl.Defaults()
	return crawlSettings{
		Delay: duration{d.MinDelay}, Workers: d.Workers,
		RevisitMin: duration{d.RevisitMin}, RevisitMax: duration{d.RevisitMax}, SitemapEvery: duration{crawl.DefaultSitemapEvery},
		RevisitPolicy: d.Revisit, FirstVisits: d.FirstVisits, Explore: d.Explore, Sitemaps: !d.NoSitemaps,
		UserAgent:     "cocrawl/" + protocol.CurrentVersion + " (+https://github.com/cocrawl/cocrawl)",
		MaxCrawlDelay: duration{d.MaxCrawlDelay}, Scope: d.Scope, ConnsPerHost: d.Fetch.ConnsPerHost,
		ServerConns: d.ServerConns, ServerDelayShare: d.ServerDelayShare, MaxHostsPerServer: d.MaxHostsPerServer,
		WarcMaxMiB: 1024, HeapHeadroom: memlimit.Default.Share,
	}
}

// crawlFlagSet registers the crawl flags on fs; settings reads them.
type crawlFlagSet struct {
	fs                                   *flag.FlagSet
	config                               *string
	delay, revisitMin, revisitMax, maxCD *time.Duration
	sitemapEvery                         *time.Duration
	workers, conns                       *int
	serverConns, maxHostsPerServer       *int
	serverDelayShare                     *float64
	ua, from, scope                      *string
	policy, firstVisits                  *string
	explore                              *float64
	sitemaps                             *bool
	include, exclude                     multiFlag
	warc                                 *string
	warcMaxMiB                           *int
	heapHeadroom                         *float64
}

func addCrawlFlags(fs *flag.FlagSet) *crawlFlagSet {
	d := defaultCrawlSettings()
	c := &crawlFlagSet{fs: fs}
	c.config = fs.String("config", "", "TOML file of settings (keys are flag names, '_' for '-'); COCRAWL_<FLAG> variables and flags win")
	c.delay = fs.Duration("delay", d.Delay.Duration, "minimum delay between two requests to one host (0 is allowed, for loopback benchmarks)")
	c.workers = fs.Int("workers", d.Workers, "fetches in flight across hosts")
	c.revisitMin = fs.Duration("revisit-min", d.RevisitMin.Duration, "shortest revisit interval (a bound: the revisit policy, politeness and the request budget pace revisits)")
	c.revisitMax = fs.Duration("revisit-max", d.RevisitMax.Duration, "longest revisit interval")
	c.policy = fs.String("revisit-policy", d.RevisitPolicy, "optimal (by estimated change rates under each host's politeness budget), adaptive (halve on a change, x1.5 without) or uniform")
	c.firstVisits = fs.String("first-visits", d.FirstVisits, "order of URLs never polled: backlinks (most pages seen linking first) or breadth (as found)")
	c.explore = fs.Float64("explore", d.Explore, "share of a host's requests kept for first visits while revisits are due (0 to 1)")
	c.sitemaps = fs.Bool("sitemaps", d.Sitemaps, "read hosts' sitemaps (robots.txt Sitemap: lines, /sitemap.xml) for URLs and lastmod hints, each round every --sitemap-every")
	c.sitemapEvery = fs.Duration("sitemap-every", d.SitemapEvery.Duration, "how often each host's sitemaps and feeds are read")
	c.ua = fs.String("user-agent", d.UserAgent, "User-Agent, with a contact URL; its product token is matched in robots.txt")
	c.from = fs.String("from", "", "your e-mail, sent in the From header")
	c.maxCD = fs.Duration("max-crawl-delay", d.MaxCrawlDelay.Duration, "cap on a robots.txt Crawl-delay")
	c.scope = fs.String("scope", d.Scope, "what to follow: host (the seeds' hosts), domain (their registrable domains) or all")
	c.conns = fs.Int("conns-per-host", d.ConnsPerHost, "connections per host")
	c.serverConns = fs.Int("server-conns", d.ServerConns, "requests in flight to one server address (IP and port), across the virtual hosts it serves")
	c.serverDelayShare = fs.Float64("server-delay-share", d.ServerDelayShare, "share of a host's delay its server address waits before a request to any of its hosts (0 to 1; 0: none)")
	c.maxHostsPerServer = fs.Int("max-hosts-per-server", d.MaxHostsPerServer, "hosts polled on one server address (a CDN's serves many sites: raise it for a crawl of those)")
	fs.Var(&c.include, "include", "regular expression a URL must match (repeatable)")
	fs.Var(&c.exclude, "exclude", "regular expression a URL must not match (repeatable)")
	c.warc = fs.String("warc", "", "write every page fetched to WARC/1.1 files in this folder (unchanged pages as revisit records)")
	c.warcMaxMiB = fs.Int("warc-max-mib", d.WarcMaxMiB, "size in MiB a WARC file reaches before the next one begins")
	c.heapHeadroom = fs.Float64("heap-headroom", d.HeapHeadroom, "garbage the heap may hold above its live size, as a share of it (at least a sixteenth of the machine's memory, from 256 MiB to 1 GiB); 0: Go's default (the heap doubles); GOGC or GOMEMLIMIT, when set, wins")
	return c
}

// settings layers the environment and the config file under the flags
// (layerSettings) and returns the result.
func (c *crawlFlagSet) settings() (crawlSettings, error) {
	if err := layerSettings(c.fs); err != nil {
		return crawlSettings{}, err
	}
	s := crawlSettings{
		Delay: duration{*c.delay}, Workers: *c.workers,
		RevisitMin: duration{*c.revisitMin}, RevisitMax: duration{*c.revisitMax},
		RevisitPolicy: *c.policy, FirstVisits: *c.firstVisits, Explore: *c.explore, Sitemaps: *c.sitemaps, SitemapEvery: duration{*c.sitemapEvery},
		UserAgent: *c.ua, From: *c.from, MaxCrawlDelay: duration{*c.maxCD},
		Scope: *c.scope, Include: c.include, Exclude: c.exclude, ConnsPerHost: *c.conns,
		ServerConns: *c.serverConns, ServerDelayShare: *c.serverDelayShare, MaxHostsPerServer: *c.maxHostsPerServer,
		Warc: *c.warc, WarcMaxMiB: *c.warcMaxMiB, HeapHeadroom: *c.heapHeadroom,
	}
	switch {
	case s.HeapHeadroom < 0:
		return s, usagef("--heap-headroom cannot be negative")
	case s.WarcMaxMiB < 1:
		return s, usagef("--warc-max-mib must be at least 1")
	case s.Delay.Duration < 0:
		return s, usagef("--delay cannot be negative")
	case s.Workers < 1:
		return s, usagef("--workers must be at least 1")
	case s.RevisitMin.Duration <= 0 || s.RevisitMax.Duration < s.RevisitMin.Duration:
		return s, usagef("--revisit-min must be positive and at most --revisit-max")
	case s.SitemapEvery.Duration <= 0:
		return s, usagef("--sitemap-every must be positive")
	case s.RevisitPolicy != crawl.RevisitOptimal && s.RevisitPolicy != crawl.RevisitAdaptive && s.RevisitPolicy != crawl.RevisitUniform:
		return s, usagef("--revisit-policy %q: optimal, adaptive or uniform", s.RevisitPolicy)
	case s.FirstVisits != crawl.FirstByBacklinks && s.FirstVisits != crawl.FirstByBreadth:
		return s, usagef("--first-visits %q: backlinks or breadth", s.FirstVisits)
	case s.Explore < 0 || s.Explore > 1:
		return s, usagef("--explore must be between 0 and 1")
	case s.ConnsPerHost < 1:
		return s, usagef("--conns-per-host must be at least 1")
	case s.ServerConns < 1:
		return s, usagef("--server-conns must be at least 1")
	case s.ServerDelayShare < 0 || s.ServerDelayShare > 1:
		return s, usagef("--server-delay-share must be between 0 and 1")
	case s.MaxHostsPerServer < 1:
		return s, usagef("--max-hosts-per-server must be at least 1")
	case strings.TrimSpace(s.UserAgent) == "":
		return s, usagef("--user-agent cannot be empty")
	}
	return s, nil
}

// keepHeapHeadroom bounds the collector's headroom until ctx ends
// (internal/memlimit).
func (s crawlSettings) keepHeapHeadroom(ctx context.Context) {
	h := memlimit.Default
	h.Share = s.HeapHeadroom
	memlimit.Keep(ctx, h)
}

// openArchive opens the WARC writer of --warc; nil without it.
func (s crawlSettings) openArchive() (*warc.Writer, error) {
	if s.Warc == "" {
		return nil, nil
	}
	w, err := warc.Open(warc.Options{Dir: s.Warc, MaxSize: int64(s.WarcMaxMiB) << 20, Software: s.UserAgent})
	if err != nil {
		return nil, fmt.Errorf("--warc: %w", err)
	}
	return w, nil
}

// archiveLine says what the WARC writer wrote.
func archiveLine(w *warc.Writer, dir string) string {
	s := w.Stats()
	return fmt.Sprintf("WARC: %d records (%d revisits), %.1f MB before compression, in %s", s.Records, s.Revisits, float64(s.Bytes)/1e6, dir)
}

// agentToken is the product token of a User-Agent, matched in robots.txt.
func agentToken(ua string) string {
	tok, _, _ := strings.Cut(strings.TrimSpace(ua), "/")
	tok, _, _ = strings.Cut(tok, " ")
	return strings.ToLower(tok)
}

// crawlConfig turns settings into a crawler configuration.
func (s crawlSettings) crawlConfig(seeds []string, cid string, allowPrivate bool) crawl.Config {
	return crawl.Config{
		Seeds: seeds, CID: cid, Agent: agentToken(s.UserAgent),
		Workers: s.Workers, MinDelay: s.Delay.Duration, DelaySet: true, MaxCrawlDelay: s.MaxCrawlDelay.Duration,
		RevisitMin: s.RevisitMin.Duration, RevisitMax: s.RevisitMax.Duration,
		Revisit: s.RevisitPolicy, FirstVisits: s.FirstVisits, Explore: shareFlag(s.Explore), NoSitemaps: !s.Sitemaps, SitemapEvery: s.SitemapEvery.Duration,
		Scope: s.Scope, Include: s.Include, Exclude: s.Exclude,
		ServerConns: s.ServerConns, ServerDelayShare: shareFlag(s.ServerDelayShare), MaxHostsPerServer: s.MaxHostsPerServer,
		Fetch: crawl.FetchConfig{UserAgent: s.UserAgent, From: s.From, AllowPrivate: allowPrivate, ConnsPerHost: s.ConnsPerHost},
	}
}

// shareFlag maps a share flag, where 0 means none (--explore,
// --server-delay-share), to crawl.Config's form, where 0 means the
// default and a negative share none.
func shareFlag(x float64) float64 {
	if x == 0 {
		return -1
	}
	return x
}

// defaultCID names a crawl-only peer: it serves nothing, so port 0.
func defaultCID(ua string) string {
	h, err := os.Hostname()
	if err != nil || h == "" {
		h = "localhost"
	}
	tok, _, _ := strings.Cut(strings.TrimSpace(ua), " ")
	return fmt.Sprintf("%s:0 %s", h, tok)
}
