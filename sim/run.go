package sim

import (
	"context"
	"fmt"
	"math"
	"math/rand/v2"
	"time"

	"github.com/cocrawl/cocrawl/peer/rho"
	"github.com/cocrawl/cocrawl/peer/trust"
)

// CrawlerSpec is one crawler of a run.
type CrawlerSpec struct {
	Controller string // a peer/rho controller as rho.Parse reads it: "1", "fixed:0.85", "bangbang", ...
	Sharing    bool   // publishes what it polls and merges for peers to merge
	Group      string // results and series are averaged per group ("coop", "mirror", ...)
	// New, if set, makes the crawler's controller instead of Controller:
	// for researchers' own rho.Controller implementations. It is called
	// once per run.
	New func() rho.Controller
	// Lies makes the crawler a liar: it adds this many false records per
	// simulated second to its share log, half of them updates to a version
	// that never existed and half deletions of live objects, at random
	// objects ("cocrawl sim liars"). 0 for an honest crawler.
	Lies float64
	// Checked makes the crawler spot-check what it merges, as a live peer
	// does (spec section 12, with the policy of peer/trust): a poll of its
	// own replaces any merged state; a sample of each merge's records is
	// re-polled and judged; a source whose refutations pass the bound is
	// distrusted (never merged again, every state it gave re-polled); and
	// records of sources it does not vouch for are not published onward.
	Checked bool
	// Revisit is the crawler's revisit policy: RevisitCycle (the
	// thesis's, the default), RevisitAdaptive or RevisitOptimal
	// (schedule.go).
	Revisit string
	// Cadence, if set, merges as a live peer does: from a peer only when
	// its wait is over (a merge drawn when none is due polls instead).
	// Without it, a crawler merges whenever rho draws a merge, from the
	// next peer in turn, as in the thesis.
	Cadence *Cadence
}

// Cadence is a live peer's merge schedule (package peer, rho.MergeStep):
// the wait between two merges from one peer follows what they bring,
// toward rho.MergeTarget events each, from Min to Max simulated seconds.
// With Budget the crawler's link is its request budget (a peer's
// --budget), and merges from all its peers take at most
// rho.MergeBudgetShare of the polls it could make.
type Cadence struct {
	Min, Max float64
	Budget   bool
}

// Setup is one simulation run.
type Setup struct {
	Model    Model
	Crawlers []CrawlerSpec
	Seed     uint64
	// Trust is the spot-check policy of Checked crawlers; zero fields take
	// peer/trust's defaults, as a live peer does.
	Trust trust.Policy
	// SampleShare is the share of each crawler's polls spent on a uniform
	// random object to measure its own freshness, as a live crawler does
	// (crawl.DefaultSampleShare, selfcheck.go): CrawlerResult.Measured is
	// what those polls measured, to check against Coverage. 0: none (the
	// thesis's crawlers), so the documented figures stay as they were.
	SampleShare float64
	// Progress, if set, is called with the share of simulated time done,
	// once per sample, from the run's goroutine.
	Progress func(done float64)
}

// CrawlerResult is what one crawler measured over a run.
type CrawlerResult struct {
	Group      string
	Controller string
	Sharing    bool
	// Freshness is the time-averaged cache freshness of section 4.2: the
	// share of the crawler's cache entries equal to the web's current state,
	// averaged over the whole run.
	Freshness    float64
	FreshnessEnd float64 // the same, at the end of the run
	// Coverage is the share of the whole live web whose current state the
	// crawler holds, averaged over the run.
	Coverage    float64
	CoverageEnd float64
	// Measured is the crawler's own estimate of its freshness from its
	// sampled polls (Setup.SampleShare): the share that found the object's
	// current state held, each weighed by the inverse of its chance to be
	// drawn then (1/rho), as the live crawler weighs them. Samples counts
	// the polls with a verdict, EffectiveSamples what they are worth.
	Measured         float64
	Samples          int64
	EffectiveSamples float64
	Polls            int64
	Merges           int64
	PollEvents       int64   // web-events polls found (creations, updates, deletions)
	MergeEvents      int64   // records merges brought that were new to the crawler
	Records          int64   // records received in merges, new or not
	Served           int64   // records sent to peers that merged from this crawler
	Bytes            float64 // bytes received
	MeanRho          float64 // rho averaged over simulated time
	LowShare         float64 // share of simulated time spent with rho < 0.5

	// Liars and spot-checks (CrawlerSpec.Lies and Checked).
	Lies       int64 // false records this crawler published (a liar)
	Logged     int64 // records it added to its share log, false ones included
	CheckPolls int64 // polls that checked a merged record
	Repolls    int64 // polls of states a distrusted source gave
	// Verdicts of its checks, and the refutations of sources that never
	// lied (an honest peer blamed).
	Confirmed, Refuted, Inconclusive, RefutedHonest int64
	// HeldFalse is the share of the live web this crawler holds, at the
	// end, in a state that never was: a version no one published on the
	// web, or a deletion of a live object.
	HeldFalse float64
	// Sources is what this crawler's checks found of each crawler of the
	// run, by index; nil for crawlers that do not check.
	Sources []SourceChecks
}

// SourceChecks is what a checking crawler's checks found of one source.
type SourceChecks struct {
	DistrustAt float64 // simulated second of distrust, -1: never
	// Merges and CheckedMerges count the merges from the source, and
	// those whose sample was checked, up to the distrust (or the end).
	Merges, CheckedMerges            int64
	Confirmed, Refuted, Inconclusive int64
}

// Result is one run's outcome.
type Result struct {
	Crawlers  []CrawlerResult
	Times     []float64            // sample times, simulated seconds
	Series    map[string][]float64 // per group, mean instantaneous cache freshness at each sample
	Cover     map[string][]float64 // per group, mean coverage at each sample
	WebEvents int64                // creations, updates and deletions on the web
	Ops       int64                // polls and merges completed by all crawlers
	Moved     int64                // records moved by all merges
	Wall      time.Duration        // wall time of the run
	MemBytes  int64                // bytes of the per-object and per-crawler state
}

// GroupMean averages f over the crawlers of group g (all crawlers if g is "").
func (r *Result) GroupMean(g string, f func(*CrawlerResult) float64) float64 {
	sum, n := 0.0, 0
	for i := range r.Crawlers {
		if g == "" || r.Crawlers[i].Group == g {
			sum += f(&r.Crawlers[i])
			n++
		}
	}
	if n == 0 {
		return math.NaN()
	}
	return sum / float64(n)
}

// Run simulates one setup to the end of its model's duration. It is
// deterministic for a given setup and seed.
func Run(ctx context.Context, s Setup) (*Result, error) {
	if err := s.Model.Validate(); err != nil {
		return nil, err
	}
	if len(s.Crawlers) == 0 {
		return nil, fmt.Errorf("%w: no crawlers", ErrModel)
	}
	if len(s.Crawlers) > 4096 {
		return nil, fmt.Errorf("%w: %d crawlers, at most 4,096", ErrModel, len(s.Crawlers))
	}
	// The per-object state is 2 bytes per crawler and object slot: refuse
	// what cannot fit rather than fail deep in an allocation.
	if b := int64(s.Model.maxSlots()) * int64(len(s.Crawlers)) * 2; b > maxStateBytes {
		return nil, fmt.Errorf("%w: %d crawlers x %d object slots need %d GiB of state, at most %d", ErrModel,
			len(s.Crawlers), s.Model.maxSlots(), b>>30, maxStateBytes>>30)
	}
	for i, c := range s.Crawlers {
		switch c.Revisit {
		case RevisitCycle, RevisitAdaptive, RevisitOptimal:
		default:
			return nil, fmt.Errorf("%w: crawler %d: revisit policy %q is not adaptive or optimal", ErrModel, i, c.Revisit)
		}
		if cd := c.Cadence; cd != nil && !(cd.Min >= 0 && cd.Max >= cd.Min && !math.IsInf(cd.Max, 0)) {
			return nil, fmt.Errorf("%w: crawler %d: a cadence's waits must run from 0 or more to a finite bound no less", ErrModel, i)
		}
	}
	ctrls := make([]rho.Controller, len(s.Crawlers))
	for i, c := range s.Crawlers {
		if c.New != nil {
			if ctrls[i] = c.New(); ctrls[i] == nil {
				return nil, fmt.Errorf("%w: crawler %d: New made no controller", ErrModel, i)
			}
			continue
		}
		ctl, err := rho.Parse(c.Controller)
		if err != nil {
			return nil, fmt.Errorf("crawler %d: %w", i, err)
		}
		ctrls[i] = ctl
	}
	start := time.Now()
	w := newWorld(s, ctrls)
	if err := w.run(ctx, s.Progress); err != nil {
		return nil, err
	}
	res := w.result()
	res.Wall = time.Since(start)
	return res, nil
}

// maxStateBytes bounds a run's per-object state (N = 4,096 at thesis scale
// needs 13 GiB).
const maxStateBytes = 16 << 30

// newRand returns the generator of one stream of a run.
func newRand(seed, stream uint64) *rand.Rand {
	return rand.New(rand.NewPCG(seed, stream^0x9e3779b97f4a7c15))
}
