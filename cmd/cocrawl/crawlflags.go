package main

import (
	"flag"
	"fmt"
	"os"
	"strings"
	"time"

	"github.com/BurntSushi/toml"

	"github.com/cocrawl/cocrawl/crawl"
	"github.com/cocrawl/cocrawl/protocol"
)

// crawlSettings are the settings every crawling command takes (crawl now,
// run later): from a TOML file's [crawl] table, then flags.
type crawlSettings struct {
	Delay         duration `toml:"delay"`
	Workers       int      `toml:"workers"`
	RevisitMin    duration `toml:"revisit_min"`
	RevisitMax    duration `toml:"revisit_max"`
	UserAgent     string   `toml:"user_agent"`
	From          string   `toml:"from"`
	MaxCrawlDelay duration `toml:"max_crawl_delay"`
	Scope         string   `toml:"scope"`
	Include       []string `toml:"include"`
	Exclude       []string `toml:"exclude"`
	ConnsPerHost  int      `toml:"conns_per_host"`
}

// duration reads "1m30s" from TOML and flags.
type duration struct{ time.Duration }

func (d *duration) UnmarshalText(b []byte) error {
	v, err := time.ParseDuration(string(b))
	d.Duration = v
	return err
}

// defaultCrawlSettings are polite for the real web.
func defaultCrawlSettings() crawlSettings {
	return crawlSettings{
		Delay: duration{time.Second}, Workers: 8,
		RevisitMin: duration{time.Hour}, RevisitMax: duration{30 * 24 * time.Hour},
		UserAgent:     "cocrawl/" + protocol.CurrentVersion + " (+https://github.com/cocrawl/cocrawl)",
		MaxCrawlDelay: duration{30 * time.Second}, Scope: "host", ConnsPerHost: 1,
	}
}

// crawlFlagSet registers the crawl flags on fs; apply fills s from the
// config file (when given) and then from the flags the user set.
type crawlFlagSet struct {
	fs                                   *flag.FlagSet
	config                               *string
	delay, revisitMin, revisitMax, maxCD *time.Duration
	workers, conns                       *int
	ua, from, scope                      *string
	include, exclude                     multiFlag
}

func addCrawlFlags(fs *flag.FlagSet) *crawlFlagSet {
	d := defaultCrawlSettings()
	c := &crawlFlagSet{fs: fs}
	c.config = fs.String("config", "", "TOML file whose [crawl] table sets these settings; flags win")
	c.delay = fs.Duration("delay", d.Delay.Duration, "minimum delay between two requests to one host (0 is allowed, for loopback benchmarks)")
	c.workers = fs.Int("workers", d.Workers, "fetches in flight across hosts")
	c.revisitMin = fs.Duration("revisit-min", d.RevisitMin.Duration, "shortest adaptive revisit interval")
	c.revisitMax = fs.Duration("revisit-max", d.RevisitMax.Duration, "longest adaptive revisit interval")
	c.ua = fs.String("user-agent", d.UserAgent, "User-Agent, with a contact URL; its product token is matched in robots.txt")
	c.from = fs.String("from", "", "your e-mail, sent in the From header")
	c.maxCD = fs.Duration("max-crawl-delay", d.MaxCrawlDelay.Duration, "cap on a robots.txt Crawl-delay")
	c.scope = fs.String("scope", d.Scope, "what to follow: host (the seeds' hosts), domain (their registrable domains) or all")
	c.conns = fs.Int("conns-per-host", d.ConnsPerHost, "connections per host")
	fs.Var(&c.include, "include", "regular expression a URL must match (repeatable)")
	fs.Var(&c.exclude, "exclude", "regular expression a URL must not match (repeatable)")
	return c
}

func (c *crawlFlagSet) settings() (crawlSettings, error) {
	s := defaultCrawlSettings()
	if *c.config != "" {
		var file struct {
			Crawl crawlSettings `toml:"crawl"`
		}
		file.Crawl = s
		md, err := toml.DecodeFile(*c.config, &file)
		if err != nil {
			return s, usagef("config %s: %v", *c.config, err)
		}
		if und := md.Undecoded(); len(und) > 0 {
			return s, usagef("config %s: unknown setting %s", *c.config, und[0])
		}
		s = file.Crawl
	}
	set := map[string]bool{}
	c.fs.Visit(func(f *flag.Flag) { set[f.Name] = true })
	pick := func(name string, apply func()) {
		if set[name] {
			apply()
		}
	}
	pick("delay", func() { s.Delay.Duration = *c.delay })
	pick("workers", func() { s.Workers = *c.workers })
	pick("revisit-min", func() { s.RevisitMin.Duration = *c.revisitMin })
	pick("revisit-max", func() { s.RevisitMax.Duration = *c.revisitMax })
	pick("user-agent", func() { s.UserAgent = *c.ua })
	pick("from", func() { s.From = *c.from })
	pick("max-crawl-delay", func() { s.MaxCrawlDelay.Duration = *c.maxCD })
	pick("scope", func() { s.Scope = *c.scope })
	pick("conns-per-host", func() { s.ConnsPerHost = *c.conns })
	pick("include", func() { s.Include = c.include })
	pick("exclude", func() { s.Exclude = c.exclude })
	switch {
	case s.Delay.Duration < 0:
		return s, usagef("--delay cannot be negative")
	case s.Workers < 1:
		return s, usagef("--workers must be at least 1")
	case s.RevisitMin.Duration <= 0 || s.RevisitMax.Duration < s.RevisitMin.Duration:
		return s, usagef("--revisit-min must be positive and at most --revisit-max")
	case s.ConnsPerHost < 1:
		return s, usagef("--conns-per-host must be at least 1")
	case strings.TrimSpace(s.UserAgent) == "":
		return s, usagef("--user-agent cannot be empty")
	}
	return s, nil
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
		Scope: s.Scope, Include: s.Include, Exclude: s.Exclude,
		Fetch: crawl.FetchConfig{UserAgent: s.UserAgent, From: s.From, AllowPrivate: allowPrivate, ConnsPerHost: s.ConnsPerHost},
	}
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
