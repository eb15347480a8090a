package measure

import (
	"context"
	"fmt"
	"io"
	"log/slog"
	"math"
	"math/rand/v2"
	"net"
	"net/http"
	"net/url"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"text/tabwriter"
	"time"

	"github.com/cocrawl/cocrawl/crawl"
	"github.com/cocrawl/cocrawl/crawl/revisit"
	"github.com/cocrawl/cocrawl/internal/sampling"
	"github.com/cocrawl/cocrawl/internal/testweb"
	"github.com/cocrawl/cocrawl/peer"
	"github.com/cocrawl/cocrawl/sim"
	"github.com/cocrawl/cocrawl/webevents"
)

// The regime sweep (issue 28): cooperating peers against polling-only
// crawlers, both on their default settings, across the regimes a real
// community meets. Each cell is a fresh testweb of Hosts hosts whose pages
// change as Poisson processes; K `cocrawl run` peers (defaults, told of
// each other with --peer, over HTTP) and K `cocrawl crawl` crawlers
// (defaults) crawl it at the same time, every one with the cell's
// politeness delay. The figures:
//
//   - freshness ratio: the peers' mean freshness over the crawlers';
//   - load ratio: the peers' requests per peer over the crawlers';
//   - the lone crawler's share of the revisit optimum for the request rate
//     it reached (uniform revisits where pages change alike; Cho and
//     Garcia-Molina's frequencies for the pages' true rates where their
//     rates spread);
//   - the peers' self-measured freshness against the truth.

// RegimeCell is one cell of the sweep.
type RegimeCell struct {
	// CycleRatio is the lone poller's cycle over a host (Pages × Delay;
	// with a Budget that binds harder, over the web: Hosts × Pages /
	// Budget) over a page's mean change interval: 0.2 (it sees every
	// change), 1, 5 or 25 (it sees few).
	CycleRatio   float64
	Pages        int // per host
	LastModified bool
	// LastModifiedNow: the hosts send the response's time as
	// Last-Modified (a dynamic site), LastModified or not.
	LastModifiedNow bool
	// Noisy: the hosts serve testweb's Dynamic pages, with no validators
	// and template noise in every response (a time, a token, a rotating
	// box of links), which the crawler must learn to see changes by.
	Noisy bool
	Delay time.Duration
	Peers int
	// Soft404: pages are deleted and created, a tenth of a host's pages
	// each lone cycle either way, and a deleted page answers 200 with a
	// "not found" page (testweb Soft404), which a crawler must learn is a
	// deletion.
	Soft404 bool
	// RateSpread spreads the pages' change rates log-uniformly over this
	// many orders of magnitude, with the mean CycleRatio gives (testweb
	// RateSpread around its geometric centre): the web a revisit policy
	// by change rate is for. 0: every page changes alike.
	RateSpread float64
	// Budget is every member's request rate in all (a peer's --budget,
	// its polls and merges; a crawler's --budget), below what politeness
	// allows over the hosts: the regime of a crawler whose own bandwidth,
	// not the sites, binds. 0: none.
	Budget float64
	hosts  int // the sweep's Hosts, which the budget's cycle spans
}

func (c RegimeCell) String() string {
	lm := "LM"
	switch {
	case c.Noisy:
		lm = "noisy, no LM"
	case c.LastModifiedNow:
		lm = "LM now"
	case !c.LastModified:
		lm = "no LM"
	}
	extra := ""
	if c.Soft404 {
		extra = ", pages deleted as soft 404s"
	}
	if c.RateSpread > 0 {
		extra += fmt.Sprintf(", rates spread over %g orders of magnitude", c.RateSpread)
	}
	if c.Budget > 0 {
		extra += fmt.Sprintf(", a budget of %g requests/s", c.Budget)
	}
	return fmt.Sprintf("cycle/change %g, %d pages/host, %s, delay %v, %d peers%s", c.CycleRatio, c.Pages, lm, c.Delay, c.Peers, extra)
}

// meanRate is a page's mean change rate: CycleRatio changes a lone cycle.
func (c RegimeCell) meanRate() float64 { return c.CycleRatio / c.cycle().Seconds() }

// centreRate is the geometric centre of the pages' change rates, which
// testweb spreads them around: the mean of 10^(s·(u−½)) over u uniform is
// (10^(s/2) − 10^(−s/2)) / (s·ln 10), so the mean stays meanRate.
func (c RegimeCell) centreRate() float64 {
	s := c.RateSpread
	if s <= 0 {
		return c.meanRate()
	}
	return c.meanRate() * s * math.Ln10 / (math.Pow(10, s/2) - math.Pow(10, -s/2))
}

// cycle is the lone poller's time around one host (Pages × Delay), or
// around the whole web where the budget binds harder (Hosts × Pages /
// Budget).
func (c RegimeCell) cycle() time.Duration {
	d := time.Duration(c.Pages) * c.Delay
	if c.Budget > 0 && c.hosts > 0 {
		d = max(d, time.Duration(float64(c.hosts*c.Pages)/c.Budget*float64(time.Second)))
	}
	return d
}

// DefaultRegimeCells is the grid `cocrawl measure regimes` runs when given
// none: every cycle ratio at 50 pages a host, 0.2 s, 3 peers and
// Last-Modified; then, at a ratio of 5, without Last-Modified, with the
// response's time as Last-Modified, with template noise and no
// validators, with a tenth of the pages replaced each cycle as soft 404s,
// with change rates spread over three orders of magnitude and no
// Last-Modified, at 1 s, with 2 and 5 peers, and 1,000 pages a host.
func DefaultRegimeCells() []RegimeCell {
	var cells []RegimeCell
	base := RegimeCell{CycleRatio: 5, Pages: 50, LastModified: true, Delay: 200 * time.Millisecond, Peers: 3}
	for _, r := range []float64{0.2, 1, 5, 25} {
		c := base
		c.CycleRatio = r
		cells = append(cells, c)
	}
	vary := func(f func(*RegimeCell)) {
		c := base
		f(&c)
		cells = append(cells, c)
	}
	vary(func(c *RegimeCell) { c.LastModified = false })
	vary(func(c *RegimeCell) { c.LastModifiedNow = true })
	vary(func(c *RegimeCell) { c.LastModified, c.Noisy = false, true })
	vary(func(c *RegimeCell) { c.Soft404 = true })
	vary(func(c *RegimeCell) { c.LastModified, c.RateSpread = false, 3 })
	vary(func(c *RegimeCell) { c.Delay = time.Second })
	vary(func(c *RegimeCell) { c.Peers = 2 })
	vary(func(c *RegimeCell) { c.Peers = 5 })
	vary(func(c *RegimeCell) { c.Pages = 1000 })
	return cells
}

// RegimeConfig shapes the sweep. Zero fields take the defaults named.
type RegimeConfig struct {
	Cells []RegimeCell // default DefaultRegimeCells
	Hosts int          // per web; default 4
	// Warmup and Measure are in lone-poller cycles (Pages × Delay), each
	// at least a minimum; defaults 3 cycles (at least 30 s) and 4 cycles
	// (at least 60 s).
	WarmupCycles, MeasureCycles float64
	// MinWarmup and MinMeasure are the least of each; defaults 30 s and
	// 60 s.
	MinWarmup, MinMeasure time.Duration
	// NoSplit runs the peers without the rendezvous split (the emergent
	// split of random orders), to compare.
	NoSplit  bool
	Seed     uint64
	Dir      string // for the peers' stores; default the system's temporary folder
	Progress io.Writer
}

func (c *RegimeConfig) defaults() {
	if len(c.Cells) == 0 {
		c.Cells = DefaultRegimeCells()
	}
	if c.Hosts <= 0 {
		c.Hosts = 4
	}
	if c.WarmupCycles <= 0 {
		c.WarmupCycles = 3
	}
	if c.MeasureCycles <= 0 {
		c.MeasureCycles = 4
	}
	if c.Seed == 0 {
		c.Seed = 1
	}
	if c.MinWarmup <= 0 {
		c.MinWarmup = 30 * time.Second
	}
	if c.MinMeasure <= 0 {
		c.MinMeasure = time.Minute
	}
}

// RegimeResult is what one cell measured.
type RegimeResult struct {
	Cell RegimeCell
	// Mean freshness over the measured window: peers and lone crawlers.
	Coop, Alone float64
	// Requests per second per peer and per crawler over the window, and
	// what politeness allows each: one request per host per delay (the
	// download time takes a little off it).
	CoopRate, AloneRate, Allowed float64
	// Optimum is the best freshness the crawlers' request rate per page
	// buys: uniform revisits where pages change alike, else Cho and
	// Garcia-Molina's frequencies for each host's true rates. Uniform is
	// uniform revisits' freshness at that rate on the same rates.
	Optimum, Uniform float64
	// The peers' own measurement of their freshness at the end (mean of
	// the peers, and of their intervals), against the truth averaged over
	// the time each peer's samples span, in the frame the samples are
	// drawn from: the live pages and the hosts' home pages (selfFrame).
	Measured, MeasuredLow, MeasuredHigh float64
	TruthInWindow                       float64
	Samples                             int
	Merges                              float64 // per peer
	// DeadCoop and DeadAlone: of the pages deleted, the share each side
	// holds as live, averaged over the window (Soft404 cells).
	DeadCoop, DeadAlone float64
	// The same cell in the simulator (sim.RegimeCell): its cooperating
	// and lone crawlers' freshness.
	SimCoop, SimAlone float64
}

// SimRatio is the simulator's freshness ratio for the cell.
func (r RegimeResult) SimRatio() float64 { return r.SimCoop / max(r.SimAlone, 1e-9) }

// SimDisagrees says whether the live ratio and the simulator's differ by
// more than a tenth of the simulator's.
func (r RegimeResult) SimDisagrees() bool {
	return math.Abs(r.FreshRatio()-r.SimRatio()) > 0.1*r.SimRatio()
}

// FreshRatio is the peers' freshness over the lone crawlers'.
func (r RegimeResult) FreshRatio() float64 { return r.Coop / max(r.Alone, 1e-9) }

// LoadRatio is the peers' requests over the lone crawlers'.
func (r RegimeResult) LoadRatio() float64 { return r.CoopRate / max(r.AloneRate, 1e-9) }

// OptimumShare is the lone crawlers' freshness over the optimum for their
// request rate.
func (r RegimeResult) OptimumShare() float64 { return r.Alone / max(r.Optimum, 1e-9) }

// UniformShare is the lone crawlers' freshness over uniform revisits' at
// their request rate.
func (r RegimeResult) UniformShare() float64 { return r.Alone / max(r.Uniform, 1e-9) }

// Regimes runs every cell in turn.
func Regimes(ctx context.Context, cfg RegimeConfig) ([]RegimeResult, error) {
	cfg.defaults()
	var out []RegimeResult
	for i, cell := range cfg.Cells {
		if cfg.Progress != nil {
			fmt.Fprintf(cfg.Progress, "cell %d of %d: %s\n", i+1, len(cfg.Cells), cell)
		}
		r, err := runRegime(ctx, cfg, cell, cfg.Seed+uint64(i))
		if err != nil {
			return out, fmt.Errorf("cell %s: %w", cell, err)
		}
		if cfg.Progress != nil {
			fmt.Fprintf(cfg.Progress, "  freshness %.3f vs %.3f (%.2fx), load %.2fx (requests/s: %.1f a peer, %.1f a crawler, at most %.1f), measured %.3f [%.3f, %.3f] (truth then %.3f), sim %.2fx\n",
				r.Coop, r.Alone, r.FreshRatio(), r.LoadRatio(), r.CoopRate, r.AloneRate, r.Allowed, r.Measured, r.MeasuredLow, r.MeasuredHigh, r.TruthInWindow, r.SimRatio())
			if cell.Soft404 {
				fmt.Fprintf(cfg.Progress, "  deleted pages held as live: %.3f by a peer, %.3f by a crawler\n", r.DeadCoop, r.DeadAlone)
			}
			fmt.Fprintf(cfg.Progress, "  a crawler: %.3f of the optimum (%.3f), %.3f of uniform revisits (%.3f)\n", r.OptimumShare(), r.Optimum, r.UniformShare(), r.Uniform)
		}
		out = append(out, r)
	}
	return out, nil
}

// regimeMember is a peer or a lone crawler, with its store.
type regimeMember struct {
	coop  bool
	peer  *peer.Peer
	c     *crawl.Crawler
	store interface {
		Get(string) (webevents.Event, bool, error)
	}
	fresh   float64
	samples int
	dead    float64 // the share of deleted pages held live, summed over samples
	polls   [2]int64
	series  []truthAt // its true freshness in its self-measurement's frame (selfFrame), about every second from the start
}

type truthAt struct {
	at    time.Duration
	fresh float64
}

// meanSince is the member's true freshness averaged from from on.
func (m *regimeMember) meanSince(from time.Duration) float64 {
	sum, n := 0.0, 0
	for _, p := range m.series {
		if p.at >= from {
			sum += p.fresh
			n++
		}
	}
	return sum / float64(max(n, 1))
}

func (m *regimeMember) pollCount() int64 {
	if m.peer != nil {
		return m.peer.Status(false).Polls
	}
	return m.c.Stats().Polls
}

func runRegime(ctx context.Context, cfg RegimeConfig, cell RegimeCell, seed uint64) (RegimeResult, error) {
	cell.hosts = cfg.Hosts
	res := RegimeResult{Cell: cell}
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	changeEvery := time.Duration(float64(cell.cycle()) / cell.CycleRatio)
	wc := testweb.Config{Hosts: cfg.Hosts, PagesPerHost: cell.Pages, UpdateRate: 1 / changeEvery.Seconds(), CrossLinks: -1, Seed: seed,
		ServedDigests: cell.Noisy}
	if cell.RateSpread > 0 {
		wc.UpdateRate, wc.RateSpread = cell.centreRate(), cell.RateSpread
	}
	if cell.Soft404 {
		if len(wc.Kinds) == 0 {
			wc.Kinds = []testweb.PageKind{testweb.Static} // Deletions need Kinds
		}
		wc.Deletions = []testweb.DeletionStyle{testweb.Soft404}
		wc.CreateRate = float64(cell.Pages) / 10 / cell.cycle().Seconds()
		wc.DeleteRate = wc.CreateRate
	}
	switch {
	case cell.Noisy:
		wc.Kinds = []testweb.PageKind{testweb.Dynamic}
	case cell.LastModifiedNow:
		wc.LastModifiedNow = true
	case !cell.LastModified:
		wc.NoLastModifiedEvery = 1
	}
	w, err := testweb.Start(wc)
	if err != nil {
		return res, err
	}
	defer w.Close()
	dir, err := os.MkdirTemp(cfg.Dir, "cocrawl-regimes-")
	if err != nil {
		return res, err
	}
	defer os.RemoveAll(dir)
	quiet := slog.New(slog.DiscardHandler)

	var wg sync.WaitGroup
	// stop stops the web and the members; deferred after each store's
	// Close, it runs before it (last in, first out).
	stop := func() { cancel(); wg.Wait() }
	defer stop()
	wg.Add(1)
	go func() { defer wg.Done(); w.Run(ctx) }()

	// The peers: `cocrawl run --delay D --seed ... --peer ...` on defaults.
	lns := make([]net.Listener, cell.Peers)
	for i := range lns {
		if lns[i], err = net.Listen("tcp", "127.0.0.1:0"); err != nil {
			return res, err
		}
		defer lns[i].Close()
	}
	var members []*regimeMember
	for i, ln := range lns {
		var others []string
		for j, o := range lns {
			if j != i {
				others = append(others, "http://"+o.Addr().String()+"/robots.shr")
			}
		}
		st, err := webevents.OpenBadger(filepath.Join(dir, fmt.Sprintf("peer-%d", i)), webevents.BadgerOptions{MemTableSize: 8 << 20, Logger: quiet})
		if err != nil {
			return res, err
		}
		defer st.Close()
		defer stop()
		beh, err := peer.ResolveMode("", "", nil) // the default mode, a controller of its own
		if err != nil {
			return res, err
		}
		p, err := peer.New(peer.Config{
			Addr: ln.Addr().String(), Moniker: fmt.Sprintf("cocrawl-regimes/peer-%d", i),
			Crawl: crawl.Config{Seeds: w.Seeds(), MinDelay: cell.Delay, DelaySet: true,
				Fetch: crawl.FetchConfig{AllowPrivate: true, Timeout: 10 * time.Second}},
			Controller: beh.Controller, Mode: beh.Name, Share: beh.Share, Peers: others, AllowPrivate: true, Logger: quiet,
			NoSplit: cfg.NoSplit, RequestsPerSecond: cell.Budget,
		}, peer.StoresIn(st))
		if err != nil {
			return res, err
		}
		srv := &http.Server{Handler: p.Handler(), ReadHeaderTimeout: 5 * time.Second}
		go func() { _ = srv.Serve(ln) }()
		defer srv.Close()
		members = append(members, &regimeMember{coop: true, peer: p, store: st})
		wg.Add(1)
		go func() { defer wg.Done(); _ = p.Run(ctx) }()
	}
	// The lone crawlers: `cocrawl crawl --delay D --seed ...` on defaults,
	// on a Badger store with the frontier in it, as that command sets
	// them up (the stored frontier parks revisits beyond a head).
	for i := range cell.Peers {
		st, err := webevents.OpenBadger(filepath.Join(dir, fmt.Sprintf("alone-%d", i)), webevents.BadgerOptions{MemTableSize: 8 << 20, Logger: quiet})
		if err != nil {
			return res, err
		}
		defer st.Close()
		defer stop()
		c, err := crawl.New(crawl.Config{Seeds: w.Seeds(), CID: fmt.Sprintf("alone-%d.test:0 cocrawl", i),
			MinDelay: cell.Delay, DelaySet: true, Logger: quiet, RequestRate: cell.Budget,
			Fetch: crawl.FetchConfig{AllowPrivate: true, Timeout: 10 * time.Second}}, st, peer.StoresIn(st).Frontier)
		if err != nil {
			return res, err
		}
		if _, err := c.Load(); err != nil {
			return res, err
		}
		members = append(members, &regimeMember{c: c, store: st})
		wg.Add(1)
		go func() { defer wg.Done(); _ = c.Run(ctx) }()
	}

	cycles := func(n float64, least time.Duration) time.Duration {
		return max(least, time.Duration(n*float64(cell.cycle())))
	}
	warmup, measure := cycles(cfg.WarmupCycles, cfg.MinWarmup), cycles(cfg.MeasureCycles, cfg.MinMeasure)
	rng := rand.New(rand.NewPCG(seed, 28))
	// The truth is sampled about every second from the start: the window is
	// averaged for the figures, and the whole run serves to check each
	// peer's own measurement over the time its samples span.
	begin := time.Now()
	var start time.Time
	var updates int
	// At random phases (a mean of 1 s apart): a fixed period looks at
	// one point of the crawlers' politeness grid (package sampling).
	tick := sampling.NewTicker(time.Second, seed)
	defer tick.Stop()
	for time.Since(begin) < warmup+measure {
		select {
		case <-ctx.Done():
			return res, ctx.Err()
		case <-tick.C:
		}
		if start.IsZero() && time.Since(begin) >= warmup {
			start, updates = time.Now(), w.Stats().Updates
			for _, m := range members {
				m.polls[0] = m.pollCount()
			}
		}
		truth := w.Truth()
		urls := sampleLive(truth, 2000, rng)
		dead := sampleDead(truth, 2000, rng)
		frame := selfFrameOf(truth)
		at := time.Since(begin)
		for _, m := range members {
			f := heldShare(m.store, truth, urls, w.VersionOf)
			m.series = append(m.series, truthAt{at, frame.share(f, heldShare(m.store, truth, frame.homes, w.VersionOf))})
			if !start.IsZero() {
				m.fresh += f
				m.dead += heldLive(m.store, dead)
				m.samples++
			}
		}
	}
	el := time.Since(start).Seconds()
	end := time.Since(begin)
	var nc, na float64
	for _, m := range members {
		m.polls[1] = m.pollCount()
		f := m.fresh / float64(max(m.samples, 1))
		rate := float64(m.polls[1]-m.polls[0]) / el
		dead := m.dead / float64(max(m.samples, 1))
		if m.coop {
			res.Coop += f
			res.DeadCoop += dead
			res.CoopRate += rate
			st := m.peer.Status(false)
			res.Measured += st.Freshness.Freshness
			res.TruthInWindow += m.meanSince(end - time.Duration(st.Freshness.WindowS*float64(time.Second)))
			res.MeasuredLow += st.Freshness.Low
			res.MeasuredHigh += st.Freshness.High
			res.Samples += st.Freshness.Samples
			res.Merges += float64(st.Merges)
			nc++
		} else {
			res.Alone += f
			res.DeadAlone += dead
			res.AloneRate += rate
			na++
		}
	}
	res.Coop, res.CoopRate, res.DeadCoop = res.Coop/nc, res.CoopRate/nc, res.DeadCoop/nc
	res.Measured, res.MeasuredLow, res.MeasuredHigh, res.Merges = res.Measured/nc, res.MeasuredLow/nc, res.MeasuredHigh/nc, res.Merges/nc
	res.TruthInWindow /= nc
	res.Samples = int(float64(res.Samples) / nc)
	res.Alone, res.AloneRate, res.DeadAlone = res.Alone/na, res.AloneRate/na, res.DeadAlone/na
	res.Allowed = float64(cfg.Hosts) / cell.Delay.Seconds()
	if cell.Budget > 0 {
		res.Allowed = min(res.Allowed, cell.Budget)
	}
	// The optimum for the pages' change rates at the lone crawlers'
	// request rate on them (they poll the home pages as often, which
	// never change here): where pages change alike, uniform revisits at
	// their realised rate; else each host's budget split by Cho and
	// Garcia-Molina over its pages' true rates.
	pages := float64(cfg.Hosts * cell.Pages)
	perPage := res.AloneRate * float64(cell.Pages) / float64(cell.Pages+1) / pages
	if cell.RateSpread > 0 {
		res.Optimum, res.Uniform = spreadOptimum(w.Rates(), perPage)
	} else {
		lambda := float64(w.Stats().Updates-updates) / pages / el
		res.Optimum = revisit.Freshness(lambda, perPage)
		res.Uniform = res.Optimum
	}
	simCell := sim.RegimeSetup{Objects: cfg.Hosts * cell.Pages, Peers: cell.Peers, CycleRatio: cell.CycleRatio, RateSpread: cell.RateSpread,
		Budget: cell.Budget > 0, MergeMinPolls: peer.DefaultMergeMin.Seconds() * res.Allowed, Seed: seed,
		Undated: !cell.LastModified || cell.LastModifiedNow}
	if cell.RateSpread > 0 {
		simCell.Revisit = sim.RevisitOptimal
	}
	res.SimCoop, res.SimAlone, err = sim.RegimeCell(ctx, simCell)
	return res, err
}

// spreadOptimum is the mean freshness of the optimal revisit frequencies
// and of uniform ones at perPage visits a second a page, each host's
// budget split over its own pages (politeness binds per host), for the
// pages' true rates by URL; home pages are left out, as the samples leave
// them out.
func spreadOptimum(rates map[string]float64, perPage float64) (optimum, uniform float64) {
	byHost := map[string][]float64{}
	for u, l := range rates {
		if strings.HasSuffix(u, "/") {
			continue
		}
		pu, err := url.Parse(u)
		if err != nil {
			continue
		}
		byHost[pu.Host] = append(byHost[pu.Host], l)
	}
	n := 0
	for _, ls := range byHost {
		_, f := revisit.OptimalFrequencies(ls, perPage*float64(len(ls)))
		optimum += f * float64(len(ls))
		for _, l := range ls {
			uniform += revisit.Freshness(l, perPage)
		}
		n += len(ls)
	}
	return optimum / float64(max(n, 1)), uniform / float64(max(n, 1))
}

// sampleLive picks up to n live pages of the truth at random, home pages
// left out (they change only with creations and deletions, which most
// cells have none of: always fresh, they would flatter every crawler).
func sampleLive(truth map[string]testweb.PageState, n int, rng *rand.Rand) []string {
	var live []string
	for u, ps := range truth {
		if ps.Live && !strings.HasSuffix(u, "/") {
			live = append(live, u)
		}
	}
	if len(live) <= n {
		return live
	}
	rng.Shuffle(len(live), func(i, j int) { live[i], live[j] = live[j], live[i] })
	return live[:n]
}

// selfFrame is the frame a peer's self-measurement samples: every live
// URL it knows, home pages included (crawl's selfcheck.go), where the
// freshness figures count the pages with change rates only (sampleLive).
// On hosts of a few pages the difference is not small: a home page that
// never changes is one URL in seven of a 6-page host, and the truth
// without it read 0.326 where the peers measured 0.430 (0.422 with it).
type selfFrame struct {
	pages int      // live pages, home pages left out
	homes []string // live home pages
}

func selfFrameOf(truth map[string]testweb.PageState) selfFrame {
	var f selfFrame
	for u, ps := range truth {
		switch {
		case !ps.Live:
		case strings.HasSuffix(u, "/"):
			f.homes = append(f.homes, u)
		default:
			f.pages++
		}
	}
	return f
}

// share is the frame's freshness from the pages' (pages, as sampleLive
// measured it) and the home pages' (homes).
func (f selfFrame) share(pages, homes float64) float64 {
	n := f.pages + len(f.homes)
	if n == 0 {
		return 0
	}
	return (float64(f.pages)*pages + float64(len(f.homes))*homes) / float64(n)
}

// sampleDead picks up to n deleted pages of the truth at random.
func sampleDead(truth map[string]testweb.PageState, n int, rng *rand.Rand) []string {
	var dead []string
	for u, ps := range truth {
		if !ps.Live {
			dead = append(dead, u)
		}
	}
	if len(dead) <= n {
		return dead
	}
	rng.Shuffle(len(dead), func(i, j int) { dead[i], dead[j] = dead[j], dead[i] })
	return dead[:n]
}

// heldLive is the share of urls (pages deleted) that the store holds as
// live; 0 for none.
func heldLive(st interface {
	Get(string) (webevents.Event, bool, error)
}, urls []string) float64 {
	live := 0
	for _, u := range urls {
		if e, ok, err := st.Get(u); err == nil && ok && e.Stat != webevents.Delete {
			live++
		}
	}
	return float64(live) / float64(max(len(urls), 1))
}

// heldShare is the share of urls whose present version the store holds:
// by the version of the body whose digest the record carries, where the
// web knows it (versionOf: a noisy cell's pages have no validators, and
// their dates have whole seconds, which a page changing every 0.4 s
// passes several times a second); else by the ETag, else by the date.
func heldShare(st interface {
	Get(string) (webevents.Event, bool, error)
}, truth map[string]testweb.PageState, urls []string, versionOf func(digest string) (int, bool)) float64 {
	fresh := 0
	for _, u := range urls {
		e, ok, err := st.Get(u)
		if err != nil || !ok || e.Stat == webevents.Delete {
			continue
		}
		ps := truth[u]
		if v, ok := versionOf(e.Digest); ok {
			if v == ps.Version {
				fresh++
			}
			continue
		}
		if (e.ETag != "" && e.ETag == ps.ETag) || (e.ETag == "" && e.LMD >= ps.LMD) {
			fresh++
		}
	}
	return float64(fresh) / float64(max(len(urls), 1))
}

// PrintRegimes writes the sweep's table.
func PrintRegimes(out io.Writer, cfg RegimeConfig, rs []RegimeResult) {
	cfg.defaults()
	fmt.Fprintf(out, "regimes: %d hosts a web; cooperating `cocrawl run` peers against as many `cocrawl crawl` crawlers, all on defaults with the cell's --delay\n", cfg.Hosts)
	tw := tabwriter.NewWriter(out, 2, 4, 2, ' ', tabwriter.AlignRight)
	fmt.Fprintln(tw, "cycle/change\tpages/host\tLM\tdelay\tpeers\tfresh coop\tfresh alone\tratio\tload ratio\talone/optimum\talone/uniform\tdead held live\tmeasured [95%]\ttruth then\tmerges/peer\tsim ratio\t")
	for _, r := range rs {
		c := r.Cell
		lm := "yes"
		switch {
		case c.Noisy:
			lm = "noisy"
		case c.LastModifiedNow:
			lm = "now"
		case !c.LastModified:
			lm = "no"
		}
		flag := ""
		if r.SimDisagrees() {
			flag = " *"
		}
		dead := "-"
		if c.Soft404 {
			dead = fmt.Sprintf("%.2f, %.2f", r.DeadCoop, r.DeadAlone)
		}
		ratio := fmt.Sprintf("%g", c.CycleRatio)
		if c.RateSpread > 0 {
			ratio += fmt.Sprintf(" (spread %g)", c.RateSpread)
		}
		fmt.Fprintf(tw, "%s\t%d\t%s\t%v\t%d\t%.3f\t%.3f\t%.2f\t%.2f\t%.2f\t%.2f\t%s\t%.3f [%.2f, %.2f]\t%.3f\t%.0f\t%.2f%s\t\n", ratio, c.Pages, lm, c.Delay, c.Peers,
			r.Coop, r.Alone, r.FreshRatio(), r.LoadRatio(), r.OptimumShare(), r.UniformShare(), dead, r.Measured, r.MeasuredLow, r.MeasuredHigh, r.TruthInWindow, r.Merges, r.SimRatio(), flag)
	}
	tw.Flush()
	fmt.Fprintln(out, "dead held live: of the pages deleted (soft-404 cells), the share a peer and a crawler hold as live")
	fmt.Fprintln(out, "measured, truth then: a peer's own sampled freshness, and the truth over the same time and frame (live pages and home pages)")
	fmt.Fprintln(out, "sim ratio: the same cell in the simulator (sim.RegimeCell, which has no deletions); * where it and the live ratio differ by more than 10%")
}

// ParseRegimeCells reads cells as
// "ratio:pages:lm|nolm|lmnow|noisy:delay:peers[:soft404][:spreadN][:budgetR]",
// comma-separated, as in "5:50:lm:200ms:3,25:50:nolm:1s:2:soft404:spread3".
func ParseRegimeCells(s string) ([]RegimeCell, error) {
	var cells []RegimeCell
	for _, part := range strings.Split(s, ",") {
		f := strings.Split(strings.TrimSpace(part), ":")
		if len(f) < 5 || len(f) > 8 {
			return nil, fmt.Errorf("cell %q: want ratio:pages:lm|nolm|lmnow|noisy:delay:peers[:soft404][:spreadN][:budgetR]", part)
		}
		var c RegimeCell
		if _, err := fmt.Sscanf(f[0], "%g", &c.CycleRatio); err != nil || c.CycleRatio <= 0 {
			return nil, fmt.Errorf("cell %q: ratio %q", part, f[0])
		}
		if _, err := fmt.Sscanf(f[1], "%d", &c.Pages); err != nil || c.Pages < 1 {
			return nil, fmt.Errorf("cell %q: pages %q", part, f[1])
		}
		switch f[2] {
		case "lm":
			c.LastModified = true
		case "nolm":
		case "lmnow":
			c.LastModifiedNow = true
		case "noisy":
			c.Noisy = true
		default:
			return nil, fmt.Errorf("cell %q: %q is not lm, nolm, lmnow or noisy", part, f[2])
		}
		d, err := time.ParseDuration(f[3])
		if err != nil || d <= 0 {
			return nil, fmt.Errorf("cell %q: delay %q", part, f[3])
		}
		c.Delay = d
		if _, err := fmt.Sscanf(f[4], "%d", &c.Peers); err != nil || c.Peers < 2 {
			return nil, fmt.Errorf("cell %q: peers %q (at least 2)", part, f[4])
		}
		for _, opt := range f[5:] {
			switch {
			case opt == "soft404" && !c.Soft404:
				c.Soft404 = true
			case strings.HasPrefix(opt, "spread") && c.RateSpread == 0:
				if _, err := fmt.Sscanf(opt[len("spread"):], "%g", &c.RateSpread); err != nil || !(c.RateSpread > 0 && c.RateSpread <= 6) {
					return nil, fmt.Errorf("cell %q: %q: a spread of more than 0 and at most 6 orders of magnitude", part, opt)
				}
			case strings.HasPrefix(opt, "budget") && c.Budget == 0:
				if _, err := fmt.Sscanf(opt[len("budget"):], "%g", &c.Budget); err != nil || !(c.Budget > 0 && c.Budget < 1e6) {
					return nil, fmt.Errorf("cell %q: %q: a budget of more than 0 requests a second", part, opt)
				}
			default:
				return nil, fmt.Errorf("cell %q: %q is not soft404, spreadN or budgetR (once each)", part, opt)
			}
		}
		cells = append(cells, c)
	}
	return cells, nil
}
