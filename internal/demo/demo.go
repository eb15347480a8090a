package demo

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"sync"
	"time"

	"github.com/cocrawl/cocrawl/crawl"
	"github.com/cocrawl/cocrawl/internal/sampling"
	"github.com/cocrawl/cocrawl/internal/testweb"
	"github.com/cocrawl/cocrawl/peer"
	"github.com/cocrawl/cocrawl/peer/p2p"
	"github.com/cocrawl/cocrawl/peer/rho"
	"github.com/cocrawl/cocrawl/webevents"
)

// Config sets up a demonstration. Zero fields take the defaults named.
type Config struct {
	Peers       int           // peers per group; default 3
	Hosts       int           // web servers; default 20
	Pages       int           // pages per host at start; default 100
	ChangeEvery time.Duration // mean time between two updates of one page; default 10 s
	ChurnEvery  time.Duration // mean time between creations (and deletions) on one host; default 2 min
	Duration    time.Duration // how long the peers run; default 3 min
	// Warmup is how long the peers run before freshness is averaged:
	// discovery is over and the figures are steady; default a third of
	// Duration.
	Warmup time.Duration
	Budget float64 // requests per second of every peer; default 40
	// Revisit, when set, fixes every peer's revisit interval (each page
	// wanted once per Revisit) instead of cocrawl run's default bounds: the
	// regime where the interval, not the budget, sets the load.
	Revisit time.Duration
	// Split hands each cooperating peer a share of the hosts with special
	// prefixes, as an operator would; by default the peers find their
	// split themselves.
	Split bool
	// Liars is how many lying peers join the community: mirrors that also
	// tell LieRate false DELETEs and UPDATEs a second about live pages,
	// half of them under an honest peer's cid.
	Liars   int
	LieRate float64 // default 20
	// RealWeb makes the web behave like the real one: its hosts serve
	// static pages, dynamic pages with template noise, pages whose
	// Last-Modified is the response's time and pages with an ETag per
	// response, and answer for deleted pages with 404s, soft 404s and
	// redirects home (testweb.Config.Kinds and Deletions).
	RealWeb    bool
	Controller string        // rho controller of the cooperating peers; default "rate"
	Seed       uint64        // the web's random seed; default 1
	Dir        string        // a new folder for the peers' stores is made in it; default the system's temporary folder
	Keep       bool          // keep Dir afterwards
	Results    string        // folder for freshness.csv, freshness.svg, summary.txt; default "demo-results"
	Every      time.Duration // progress line interval; default 5 s
	Out        io.Writer     // progress and results; default os.Stdout
	Logger     *slog.Logger  // default: warnings to stderr
}

func (c *Config) defaults() error {
	def := func(v *int, d int) {
		if *v <= 0 {
			*v = d
		}
	}
	def(&c.Peers, 3)
	def(&c.Hosts, 20)
	def(&c.Pages, 100)
	dur := func(v *time.Duration, d time.Duration) {
		if *v <= 0 {
			*v = d
		}
	}
	dur(&c.ChangeEvery, 10*time.Second)
	dur(&c.ChurnEvery, 2*time.Minute)
	dur(&c.Duration, 3*time.Minute)
	dur(&c.Warmup, c.Duration/3)
	if c.LieRate <= 0 {
		c.LieRate = 20
	}
	dur(&c.Every, 5*time.Second)
	if c.Budget <= 0 {
		c.Budget = 40
	}
	if c.Controller == "" {
		c.Controller = "rate"
	}
	if _, err := rho.Parse(c.Controller); err != nil {
		return err
	}
	if c.Seed == 0 {
		c.Seed = 1
	}
	if c.Results == "" {
		c.Results = "demo-results"
	}
	if c.Out == nil {
		c.Out = os.Stdout
	}
	if c.Logger == nil {
		c.Logger = slog.New(slog.NewTextHandler(os.Stderr, &slog.HandlerOptions{Level: slog.LevelError}))
	}
	if c.Peers < 2 {
		return errors.New("demo: a community needs at least 2 peers")
	}
	return nil
}

// Group names.
const (
	Coop = "cooperating"
	Poll = "polling-only"
	Liar = "liar"
)

// Run runs the demonstration until Config.Duration has passed or ctx ends,
// prints the comparison and writes the results. Everything it started is
// stopped, and its folders removed (unless Keep), before it returns.
func Run(ctx context.Context, cfg Config) (*Report, error) {
	if err := cfg.defaults(); err != nil {
		return nil, err
	}
	dir, err := workDir(cfg)
	if err != nil {
		return nil, err
	}
	if !cfg.Keep {
		defer os.RemoveAll(dir)
	}
	w, stopWeb, err := startWeb(cfg)
	if err != nil {
		return nil, err
	}
	defer stopWeb()
	printIntro(cfg, dir)
	c, err := startCommunity(cfg, dir, w)
	if err != nil {
		return nil, err
	}
	c.started = time.Now()
	defer c.stop()
	c.printDashboards(cfg.Out)

	rep := &Report{Config: cfg}
	interrupted, err := c.watch(ctx, cfg, w, rep)
	if err != nil {
		return rep, err
	}
	rep.Peers = finalRows(c.members, rep.Series, cfg.Warmup)
	rep.Liars = c.liarFates()
	c.stop()
	rep.Interrupted = interrupted
	return rep, finish(cfg, rep, dir)
}

// workDir makes a fresh folder for the peers' stores, inside Dir when
// given, so removing it at the end never touches anything else.
func workDir(cfg Config) (string, error) {
	if cfg.Dir != "" {
		if err := os.MkdirAll(cfg.Dir, 0o700); err != nil {
			return "", err
		}
	}
	return os.MkdirTemp(cfg.Dir, "cocrawl-demo-")
}

// startWeb starts the synthetic web and its changes; stop ends both.
func startWeb(cfg Config) (w *testweb.Web, stop func(), err error) {
	rate := func(d time.Duration) float64 { return 1 / d.Seconds() }
	var kinds []testweb.PageKind
	var deletions []testweb.DeletionStyle
	if cfg.RealWeb {
		kinds = []testweb.PageKind{testweb.Static, testweb.Dynamic, testweb.LastModifiedNow, testweb.WeakETagPerResponse, testweb.DynamicPlain}
		deletions = []testweb.DeletionStyle{testweb.NotFound, testweb.Soft404, testweb.RedirectHome}
	}
	w, err = testweb.Start(testweb.Config{
		Hosts: cfg.Hosts, PagesPerHost: cfg.Pages, LinksPerPage: 5,
		UpdateRate: rate(cfg.ChangeEvery), CreateRate: rate(cfg.ChurnEvery), DeleteRate: rate(cfg.ChurnEvery),
		Seed: cfg.Seed, Kinds: kinds, Deletions: deletions,
	})
	if err != nil {
		return nil, nil, err
	}
	ctx, cancel := context.WithCancel(context.Background())
	go w.Run(ctx)
	return w, func() { cancel(); w.Close() }, nil
}

func printIntro(cfg Config, dir string) {
	out := cfg.Out
	fmt.Fprintf(out, "cocrawl demo: a synthetic web of %d hosts x %d pages on loopback, each page updated every %v on average;\n",
		cfg.Hosts, cfg.Pages, cfg.ChangeEvery)
	split := "each finding its own part of the web (no hand-made split)"
	if cfg.Split {
		split = "with the hosts split between them by hand (special prefixes)"
	}
	fmt.Fprintf(out, "%d cooperating peers (sharing, merging, controller %s, found through a community DHT), %s,\n",
		cfg.Peers, cfg.Controller, split)
	fmt.Fprintf(out, "against %d polling-only peers; every peer limited to %.0f requests per second; running for %v.\n", cfg.Peers, cfg.Budget, cfg.Duration)
	if cfg.Liars > 0 {
		fmt.Fprintf(out, "%d lying peer(s) join the community, each telling %.0f false events a second.\n", cfg.Liars, cfg.LieRate)
	}
	fmt.Fprintf(out, "Freshness is the share of the web's live pages whose current version a peer holds; figures average it after a %v warm-up.\n", cfg.Warmup)
	fmt.Fprintf(out, "Data in %s.\n\n", dir)
}

// finish prints the report and writes its files.
func finish(cfg Config, rep *Report, dir string) error {
	out := cfg.Out
	rep.summarise()
	rep.Print(out)
	if err := rep.Write(cfg.Results); err != nil {
		return err
	}
	fmt.Fprintf(out, "\nresults: %s, %s and %s\n", filepath.Join(cfg.Results, "summary.txt"),
		filepath.Join(cfg.Results, "freshness.csv"), filepath.Join(cfg.Results, "freshness.svg"))
	if cfg.Keep {
		fmt.Fprintf(out, "data kept in %s\n", dir)
	}
	return nil
}

// member is one running peer of the demonstration.
type member struct {
	name, group string
	peer        *peer.Peer
	store       *webevents.BadgerStore
	srv         *http.Server
	base        string
}

// community is both groups of peers, and the liars, running.
type community struct {
	members []*member
	cancel  context.CancelFunc
	wg      sync.WaitGroup
	once    sync.Once
	started time.Time
}

// startCommunity starts cfg.Peers peers of each group and cfg.Liars liars;
// the first cooperating peer is the others' DHT bootstrap.
func startCommunity(cfg Config, dir string, w *testweb.Web) (*community, error) {
	ctx, cancel := context.WithCancel(context.Background())
	c := &community{cancel: cancel}
	var bootstrap, honest []string
	hosts := w.Seeds()
	for g, group := range []string{Coop, Poll, Liar} {
		n := cfg.Peers
		if group == Liar {
			n = cfg.Liars
		}
		for i := range n {
			m, err := startMember(ctx, cfg, dir, group, i, hosts, bootstrap)
			if err != nil {
				c.stop()
				return nil, err
			}
			c.members = append(c.members, m)
			if group == Coop {
				honest = append(honest, m.peer.CID())
			}
			if group == Liar {
				c.wg.Add(1)
				go func() {
					defer c.wg.Done()
					lie(ctx, m, w, honest, cfg.LieRate, uint64(i)+cfg.Seed)
				}()
			}
			c.wg.Add(1)
			go func() {
				defer c.wg.Done()
				if err := m.peer.Run(ctx); err != nil {
					fmt.Fprintf(cfg.Out, "%s stopped with an error: %v\n", m.name, err)
				}
			}()
			if g == 0 && i == 0 {
				bootstrap = m.peer.P2PAddrs()[:1]
			}
		}
	}
	return c, nil
}

// stop ends every peer and closes its server and store; it may be called
// more than once.
func (c *community) stop() {
	c.once.Do(func() {
		c.cancel()
		c.wg.Wait()
		for _, m := range c.members {
			_ = m.srv.Close() // no new requests; then the peer waits for the running ones
			m.peer.Close()
			_ = m.store.Close()
		}
	})
}

func (c *community) printDashboards(out io.Writer) {
	for _, m := range c.members {
		if m.group == Coop {
			fmt.Fprintf(out, "  %-8s dashboard %s/\n", m.name, m.base)
		}
	}
	fmt.Fprintln(out)
}

// watch measures every peer about every 2 s into rep.Series, printing progress,
// until cfg.Duration has passed or ctx ends (interrupted).
func (c *community) watch(ctx context.Context, cfg Config, w *testweb.Web, rep *Report) (interrupted bool, err error) {
	start := time.Now()
	deadline := time.NewTimer(cfg.Duration)
	defer deadline.Stop()
	// At random phases, a mean of 2 s apart: a fixed period looks at one
	// point of the peers' politeness grid (package sampling).
	sample := sampling.NewTicker(2*time.Second, uint64(start.UnixNano()))
	defer sample.Stop()
	lastPrint := start
loop:
	for {
		select {
		case <-ctx.Done():
			interrupted = true
			break loop
		case <-deadline.C:
			break loop
		case now := <-sample.C:
			pt, err := measure(w, c.members, now.Sub(start))
			if err != nil {
				return false, err
			}
			rep.Series = append(rep.Series, pt)
			if now.Sub(lastPrint) >= cfg.Every {
				lastPrint = now
				fmt.Fprintln(cfg.Out, progressLine(pt, c.members))
			}
		}
	}
	if pt, err := measure(w, c.members, time.Since(start)); err == nil {
		rep.Series = append(rep.Series, pt)
	}
	return interrupted, nil
}

// startMember starts peer i of group with its store, share server and, for
// the cooperating group, libp2p.
func startMember(ctx context.Context, cfg Config, dir, group string, i int, hosts, bootstrap []string) (*member, error) {
	name := fmt.Sprintf("%s-%d", map[string]string{Coop: "coop", Poll: "poll", Liar: "liar"}[group], i+1)
	st, err := webevents.OpenBadger(filepath.Join(dir, name, "db"), webevents.BadgerOptions{MemTableSize: 8 << 20, Logger: cfg.Logger})
	if err != nil {
		return nil, err
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		st.Close()
		return nil, err
	}
	// Revisit bounds, merge cadence and split are cocrawl run's defaults;
	// the delay and the budget are the demo's web and its comparison
	// (--delay 100ms --budget 40 for a user).
	var revisitMin, revisitMax time.Duration
	if cfg.Revisit > 0 {
		revisitMin, revisitMax = cfg.Revisit, cfg.Revisit
	}
	pc := peer.Config{
		Addr: ln.Addr().String(), Moniker: "cocrawl-demo/" + name,
		Crawl: crawl.Config{
			Seeds: hosts, Workers: 8, Agent: "cocrawl",
			MinDelay: 100 * time.Millisecond, DelaySet: true, DelayFactor: 1,
			RevisitMin: revisitMin, RevisitMax: revisitMax,
			BackoffBase: time.Second, BackoffMax: 30 * time.Second,
			Fetch: crawl.FetchConfig{AllowPrivate: true, Timeout: 5 * time.Second, UserAgent: "cocrawl-demo/1.1 (" + name + ")"},
		},
		RequestsPerSecond: cfg.Budget, AllowPrivate: true, Slots: 8,
		Schedule: peer.MergeSchedule{BackoffBase: time.Second, BackoffMax: 10 * time.Second},
		Grace:    3 * time.Second, Logger: cfg.Logger,
	}
	if group == Coop || group == Liar {
		ctl, _ := rho.Parse(cfg.Controller)
		pc.Controller, pc.Mode, pc.Share = ctl, "sharing-hybrid", true
		if group == Liar {
			pc.Controller, pc.Mode = rho.Fixed(0), "mirror"
		}
		// With Split, the hosts are shared out between the cooperating
		// peers with the protocol's special prefixes, as an operator would.
		for h, u := range hosts {
			if cfg.Split && group == Coop && h%cfg.Peers == i {
				pc.Special = append(pc.Special, strings.TrimSuffix(u, "/")+"/")
			}
		}
		pc.P2P = &p2p.Config{
			KeyFile: filepath.Join(dir, name, "identity.key"), Community: fmt.Sprintf("demo-%d", cfg.Seed),
			ListenAddrs: []string{"/ip4/127.0.0.1/tcp/0"}, Bootstrap: bootstrap, AllowPrivate: true,
			FindEvery: 500 * time.Millisecond, FindMax: 5 * time.Second,
		}
	} else {
		pc.Controller, pc.Mode, pc.Share = rho.Fixed(1), "current", false
	}
	p, err := peer.New(pc, peer.StoresIn(st))
	if err != nil {
		ln.Close()
		st.Close()
		return nil, err
	}
	srv := &http.Server{Handler: p.Handler(), ReadHeaderTimeout: 5 * time.Second}
	go func() { _ = srv.Serve(ln) }()
	return &member{name: name, group: group, peer: p, store: st, srv: srv, base: "http://" + ln.Addr().String()}, nil
}

// Point is one measurement of every peer.
type Point struct {
	T        time.Duration
	Coverage map[string]float64 // by peer
	Cache    map[string]float64
	False    map[string]float64    // share of pages held in a false state a liar gave
	Group    map[string][2]float64 // by group: mean coverage, mean cache
}

// measure compares every peer's store with the web's truth.
func measure(w *testweb.Web, members []*member, t time.Duration) (Point, error) {
	truth := w.Truth()
	live := 0
	for _, ps := range truth {
		if ps.Live {
			live++
		}
	}
	pt := Point{T: t, Coverage: map[string]float64{}, Cache: map[string]float64{}, Group: map[string][2]float64{}}
	sums := map[string][3]float64{}
	liars := map[string]bool{}
	for _, m := range members {
		if m.group == Liar {
			liars["http://"+m.peer.PeerID()+"/robots.shr"] = true
		}
	}
	pt.False = map[string]float64{}
	for _, m := range members {
		if m.group == Liar {
			continue
		}
		var entries, freshEntries, freshLive, held int
		err := m.store.Current(func(e webevents.Event) error {
			ps, ok := truth[e.URL]
			if !ok {
				return nil
			}
			entries++
			if fresh(e, ps) {
				freshEntries++
				if ps.Live {
					freshLive++
				}
			} else if liars[e.From] {
				held++ // a false state a liar gave
			}
			return nil
		})
		if err != nil {
			return pt, fmt.Errorf("demo: read %s: %w", m.name, err)
		}
		pt.Coverage[m.name] = ratio(freshLive, live)
		pt.False[m.name] = ratio(held, len(truth))
		pt.Cache[m.name] = ratio(freshEntries, entries)
		s := sums[m.group]
		s[0] += pt.Coverage[m.name]
		s[1] += pt.Cache[m.name]
		s[2]++
		sums[m.group] = s
	}
	for g, s := range sums {
		pt.Group[g] = [2]float64{s[0] / s[2], s[1] / s[2]}
	}
	return pt, nil
}

// fresh says whether an entry is state-equivalent to the page now (thesis
// equation 4.1): same version of a live page, or a deletion of a page
// that is gone.
func fresh(e webevents.Event, ps testweb.PageState) bool {
	if !ps.Live {
		return e.Stat == webevents.Delete
	}
	if e.Stat == webevents.Delete {
		return false
	}
	if e.ETag != "" && ps.ETag != "" && !strings.HasPrefix(e.ETag, "W/") {
		return e.ETag == ps.ETag
	}
	// No ETag, or a weak one that differs at every response (--real-web):
	// the date says. Without a Last-Modified it is when the version was
	// first seen, so no earlier than the change.
	return e.LMD >= ps.LMD
}

func ratio(a, b int) float64 {
	if b == 0 {
		return 0
	}
	return float64(a) / float64(b)
}

func progressLine(pt Point, members []*member) string {
	var rhos []string
	var polls, merges [2]int64
	for _, m := range members {
		st := m.peer.Status(false)
		g := 0
		switch m.group {
		case Poll:
			g = 1
		case Liar:
			continue
		default:
			rhos = append(rhos, fmt.Sprintf("%.2f", st.Rho))
		}
		polls[g] += st.Polls
		merges[g] += st.Merges
	}
	c, p := pt.Group[Coop], pt.Group[Poll]
	return fmt.Sprintf("%5.0fs  freshness: cooperating %.3f (cache %.3f), polling-only %.3f (cache %.3f) | rho %s | polls %d vs %d | merges %d",
		pt.T.Seconds(), c[0], c[1], p[0], p[1], strings.Join(rhos, " "), polls[0], polls[1], merges[0])
}

// finalRows reads every peer's figures at the end of the run.
func finalRows(members []*member, series []Point, warmup time.Duration) []PeerRow {
	var rows []PeerRow
	for _, m := range members {
		if m.group == Liar {
			continue
		}
		st := m.peer.Status(false)
		r := PeerRow{Name: m.name, Group: m.group, Rho: st.Rho, Polls: st.Polls, Merges: st.Merges,
			EventsPerPoll: st.EventsPerPoll, EventsPerMerge: st.EventsPerMerge,
			Bytes: st.Bytes["poll"] + st.Bytes["merge"]}
		if n := len(series); n > 0 {
			r.Coverage, r.Cache = series[n-1].Coverage[m.name], series[n-1].Cache[m.name]
			r.MeanCoverage = meanAfter(series, warmup, func(p Point) float64 { return p.Coverage[m.name] })
			r.False = series[n-1].False[m.name]
		}
		r.Checks, r.ChecksRefuted, r.ChecksInconclusive = st.Checks.Asked, st.Checks.Refuted, st.Checks.Inconclusive
		fr := st.Freshness
		r.Measured, r.MeasuredLow, r.MeasuredHigh, r.MeasuredSamples, r.Expected = fr.Freshness, fr.Low, fr.High, fr.Samples, fr.Expected
		if n := len(series); n > 0 {
			from := series[n-1].T - time.Duration(fr.WindowS*float64(time.Second))
			r.TruthInWindow = meanAfter(series, from, func(p Point) float64 { return p.Coverage[m.name] })
		}
		rows = append(rows, r)
	}
	sort.SliceStable(rows, func(i, j int) bool { return rows[i].Group < rows[j].Group })
	return rows
}

// meanAfter averages a series after the warm-up, when discovery is over:
// the time-averaged freshness of the thesis's section 4.2. A run shorter
// than its warm-up averages its second half.
func meanAfter(series []Point, warmup time.Duration, f func(Point) float64) float64 {
	if len(series) == 0 {
		return 0
	}
	if end := series[len(series)-1].T; warmup >= end {
		warmup = end / 2
	}
	var sum float64
	var n int
	for _, p := range series {
		if p.T >= warmup {
			sum += f(p)
			n++
		}
	}
	if n == 0 {
		return 0
	}
	return sum / float64(n)
}
