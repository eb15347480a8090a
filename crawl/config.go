package crawl

import (
	"errors"
	"fmt"
	"log/slog"
	"math"
	"time"

	"github.com/cocrawl/cocrawl/webevents"
)

// Store is what the crawler needs of a peer's web-event store: its own
// polls' events are recorded; a proven publisher's ResourceSync changes
// are merged, attributed to the publisher (webevents' stores do both).
type Store interface {
	Get(url string) (webevents.Event, bool, error)
	Record(events []webevents.Event) error
	Merge(events []webevents.Event, c *webevents.Cursor) (webevents.MergeResult, error)
}

// Config configures a Crawler. Zero fields take the defaults named, which
// are polite for the real web.
type Config struct {
	Seeds []string
	CID   string // "host:port Moniker" written in every event; required
	Agent string // robots.txt product token; default "cocrawl"
	Fetch FetchConfig
	// Archive, when set, is given every page the crawler fetched
	// (archive.go): a WARC writer for `--warc DIR`.
	Archive Archive

	Workers       int           // fetches in flight across hosts; default 8
	MinDelay      time.Duration // per-host delay floor; default 1 s; 0 allowed with DelaySet
	DelaySet      bool          // MinDelay was set explicitly (so 0 means 0)
	MaxCrawlDelay time.Duration // cap on robots.txt Crawl-delay; default 30 s
	DelayFactor   float64       // delay at least this times the last download time; default 2
	BackoffBase   time.Duration // first backoff after 429/5xx/errors; default 30 s
	BackoffMax    time.Duration // default 1 h
	RobotsTTL     time.Duration // how long a robots.txt is cached; default (and at most) 24 h
	RobotsRetry   time.Duration // retry after a 5xx robots.txt; default 10 min

	// RevisitMin and RevisitMax bound revisit intervals; defaults 1 s and
	// 30 days. They are bounds, not the mechanism: politeness and the
	// request budget pace the polls, and the optimal policy revisits a
	// page no sooner than a visit has a fair chance (minChangeChance) to
	// find it changed, so a static page is not polled every second.
	RevisitMin time.Duration
	RevisitMax time.Duration // default 30 days
	// Revisit is the revisit policy: RevisitOptimal (default; by estimated
	// change rate under the hosts' politeness budgets), RevisitAdaptive
	// or RevisitUniform (schedule.go).
	Revisit string
	// FirstVisits orders the URLs never polled: FirstByBacklinks (default;
	// most pages seen linking to them first) or FirstByBreadth (in the
	// order found).
	FirstVisits string
	// FirstVisitsInMemory is how many first visits a host keeps in memory
	// when the frontier's store has a backlog (StoredFrontier with its
	// Backlog table): the others wait on disk (backlog.go). 0 means
	// DefaultFirstVisitsInMemory; negative keeps them all in memory.
	FirstVisitsInMemory int
	// RevisitsInMemory is how many URLs waiting for a revisit a host
	// keeps in memory when the frontier's store parks them (StoredFrontier
	// with its Revisits table): the others wait on disk (parking.go). 0
	// means DefaultRevisitsInMemory; negative keeps them all in memory.
	RevisitsInMemory int
	// Explore is the share of a host's requests kept for first visits
	// while revisits are due; default 0.1, negative for none.
	Explore float64
	// SampleShare is the share of polls spent re-polling a uniform random
	// sample of the URLs the crawler knows, to measure its own freshness
	// (selfcheck.go, Crawler.SelfMeasure); default DefaultSampleShare,
	// negative for none.
	SampleShare float64
	// NoSitemaps turns off reading hosts' sitemaps (signals.go), which
	// SitemapEvery paces: a round of each host's sitemaps every
	// SitemapEvery; default DefaultSitemapEvery (or RevisitMin when that
	// is longer).
	NoSitemaps   bool
	SitemapEvery time.Duration
	// RequestRate is what the caller lets the crawler send in all,
	// requests per second (`cocrawl crawl --budget`; a peer's request
	// budget, which its merges share): revisits are planned within it.
	// Run's workers keep to it; a caller that calls Poll itself keeps to
	// it by when it calls. 0: the crawler learns what its workers let it
	// send (schedule.go).
	RequestRate float64

	// Spread gives the crawler its own order: every revisit is put off by
	// a share of Spread that a hash of the URL, keyed by a seed drawn by
	// this crawler, decides. Peers that learn each other's polls through merges
	// (Hint) then interleave instead of polling the same URLs in the same
	// order: each URL settles on the peer that reaches it first. Make it a
	// few times the time a poll takes to reach the other peers; 0 (a lone
	// crawler) keeps the plain order.
	Spread time.Duration
	// Confirm records a poll that saw no change as a confirmation: the
	// state held, with this poll's lpd. Peers that merge it count it as a
	// visit, so a community polls an unchanged page once per interval, not
	// once per peer. A crawler that does not share has no use for it.
	Confirm bool

	// Scope: "host" (the seeds' hosts, default), "domain" (their registrable
	// domains) or "all"; Include and Exclude are regular expressions that a
	// URL must match (when Include is set) and must not match.
	Scope   string
	Include []string
	Exclude []string

	// Traps (Castillo, chapter 5 and appendix A): depth from a seed for
	// static and dynamic (with a query) pages, URLs per host, URL length,
	// and a limit on a path segment repeated.
	MaxStaticDepth  int // default 15
	MaxDynamicDepth int // default 5
	MaxURLsPerHost  int // default 100,000
	// Hosts are capped too, for "domain" and "all" scopes, where wildcard
	// subdomains would add hosts without end: MaxHosts in all (default
	// 100,000) and MaxHostsPerDomain per registrable domain (default
	// 1,000). A host keeps its parsed robots.txt; all of them together are
	// kept within MaxRobotsBytes (default 32 MiB) by dropping others,
	// which are fetched again when their host is next served.
	MaxHosts          int
	MaxHostsPerDomain int
	MaxRobotsBytes    int
	// Politeness per server (servers.go): virtual hosts on one address
	// (IP and port) share it. ServerConns is the requests in flight to a
	// server across its hosts (default 1); ServerDelayShare the share of
	// a host's delay that its server waits after a request before the
	// next to any of its hosts (default DefaultServerDelayShare, so a
	// server gets at most four hosts' requests; negative: none);
	// MaxHostsPerServer the hosts polled on one server (default
	// DefaultMaxHostsPerServer; a CDN's address serves many more sites,
	// and a crawl that meets one may raise it).
	ServerConns       int
	ServerDelayShare  float64
	MaxHostsPerServer int
	// MaxBacklog is how many events may wait for the store before Poll
	// sends no more requests (a stalled or full store); default 65,536.
	MaxBacklog      int
	MaxURLLength    int // default 2,048
	MaxSegmentRepet int // default 3

	Logger *slog.Logger
}

// DefaultSitemapEvery is how often a host's sitemaps are read by default:
// one request per host every ten minutes.
const DefaultSitemapEvery = 10 * time.Minute

// Defaults is the Config a zero one runs with (but for its CID and
// logger): the one place the crawler's defaults are written, which
// cocrawl's flags show.
func Defaults() Config {
	c := Config{CID: "defaults"}
	_ = c.defaults() // a zero Config with a CID holds no mistake
	c.Fetch.defaults()
	c.CID, c.Logger = "", nil
	return c
}

func (c *Config) defaults() error {
	if c.CID == "" {
		return errors.New("crawl: a CID (\"host:port Moniker\") is required")
	}
	if c.Agent == "" {
		c.Agent = "cocrawl"
	}
	def := func(d *time.Duration, v time.Duration) {
		if *d <= 0 {
			*d = v
		}
	}
	if !c.DelaySet {
		def(&c.MinDelay, time.Second)
	}
	def(&c.MaxCrawlDelay, 30*time.Second)
	def(&c.BackoffBase, 30*time.Second)
	def(&c.BackoffMax, time.Hour)
	def(&c.RobotsRetry, 10*time.Minute)
	def(&c.RevisitMin, time.Second)
	def(&c.RevisitMax, 30*24*time.Hour)
	if c.RobotsTTL <= 0 || c.RobotsTTL > 24*time.Hour {
		c.RobotsTTL = 24 * time.Hour
	}
	def(&c.SitemapEvery, max(c.RevisitMin, DefaultSitemapEvery))
	if c.RevisitMax < c.RevisitMin {
		return fmt.Errorf("crawl: revisit max %v is below revisit min %v", c.RevisitMax, c.RevisitMin)
	}
	if c.Workers <= 0 {
		c.Workers = 8
	}
	if c.RequestRate < 0 || math.IsNaN(c.RequestRate) || math.IsInf(c.RequestRate, 0) {
		return fmt.Errorf("crawl: request rate %g is not a rate (0 for none)", c.RequestRate)
	}
	if c.DelayFactor <= 0 {
		c.DelayFactor = 2
	}
	ints := []struct {
		p *int
		v int
	}{{&c.MaxStaticDepth, 15}, {&c.MaxDynamicDepth, 5}, {&c.MaxURLsPerHost, 100000}, {&c.MaxURLLength, 2048}, {&c.MaxSegmentRepet, 3},
		{&c.MaxHosts, 100000}, {&c.MaxHostsPerDomain, 1000}, {&c.MaxRobotsBytes, 32 << 20}, {&c.MaxBacklog, 1 << 16},
		{&c.ServerConns, 1}, {&c.MaxHostsPerServer, DefaultMaxHostsPerServer}}
	for _, x := range ints {
		if *x.p <= 0 {
			*x.p = x.v
		}
	}
	switch c.Revisit {
	case "":
		c.Revisit = RevisitOptimal
	case RevisitOptimal, RevisitAdaptive, RevisitUniform:
	default:
		return fmt.Errorf("crawl: revisit policy %q is not optimal, adaptive or uniform", c.Revisit)
	}
	switch c.FirstVisits {
	case "":
		c.FirstVisits = FirstByBacklinks
	case FirstByBacklinks, FirstByBreadth:
	default:
		return fmt.Errorf("crawl: first-visit order %q is not backlinks or breadth", c.FirstVisits)
	}
	for _, sh := range []struct {
		p         *float64
		def, most float64
		name      string
	}{{&c.Explore, 0.1, 1, "explore"}, {&c.SampleShare, DefaultSampleShare, 0.5, "sample"}, {&c.ServerDelayShare, DefaultServerDelayShare, 1, "server delay"}} {
		switch {
		case *sh.p == 0:
			*sh.p = sh.def
		case *sh.p < 0:
			*sh.p = 0
		case *sh.p > sh.most:
			return fmt.Errorf("crawl: %s share %g is above %g", sh.name, *sh.p, sh.most)
		}
	}
	switch c.Scope {
	case "":
		c.Scope = "host"
	case "host", "domain", "all":
	default:
		return fmt.Errorf("crawl: scope %q is not host, domain or all", c.Scope)
	}
	if c.Logger == nil {
		c.Logger = slog.Default()
	}
	return nil
}
