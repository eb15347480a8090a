package sim

import (
	"context"
	"fmt"
	"math"
)

// RegimeSetup is a cell of the live regime sweep (cocrawl measure
// regimes) as the model sees it.
type RegimeSetup struct {
	Objects, Peers int
	// CycleRatio is a lone crawler's cycle over the objects over an
	// object's mean change interval; RateSpread spreads the rates
	// (Model.RateSpread).
	CycleRatio, RateSpread float64
	// Budget: the live peers' polls and merges share one request budget
	// (cocrawl run --budget), which the model's link is. Without, the
	// sites' politeness binds the polls alone, and a merge, a request to
	// a peer, costs the polls nothing: the model's merges then cost next
	// to no link time.
	Budget bool
	// MergeMinPolls is the live peer's shortest wait between two merges
	// from one peer (peer.DefaultMergeMin) in its own polls: 5 for 250 ms
	// at 20 polls a second. 0: 5.
	MergeMinPolls float64
	// Revisit is every crawler's revisit policy: RevisitCycle (the
	// default: where objects change alike it is the optimum, which the
	// live crawler reaches within a few per cent) or RevisitOptimal (the
	// live crawler's, for spread rates).
	Revisit string
	// Undated: the live hosts send no Last-Modified, or the response's
	// time, or no validators at all (noisy pages): Model.Undated.
	Undated bool
	Seed    uint64
}

// RegimeCell runs a cell of the live regime sweep in the model, so the
// two can be compared: a lone crawler's cycle over the objects (one
// object a second, the thesis's link) CycleRatio times an object's mean
// change interval, peers sharing crawlers (the live default: the rate
// controller, spot-checks, Setup.SampleShare at the live default, the
// live peer's merge cadence) beside peers polling-only ones, no
// contention (loopback does not bind), no churn, for 20 cycles. It
// returns both groups' coverage over the last half. What the model
// leaves out: hosts and politeness (one link per crawler instead), the
// live peers' rendezvous split and their sooner revisits of what merges
// bring.
func RegimeCell(ctx context.Context, s RegimeSetup) (coop, alone float64, err error) {
	if s.Objects < 1 || s.Peers < 1 || !(s.CycleRatio > 0) || s.MergeMinPolls < 0 || math.IsInf(s.MergeMinPolls, 0) {
		return 0, 0, fmt.Errorf("%w: a regime cell needs objects, peers, a cycle ratio and a merge wait of 0 or more", ErrModel)
	}
	m := Thesis()
	m.Objects = s.Objects
	m.ObjectSpread = 0
	m.Contention = false
	m.CreatePerDay, m.DeletePerDay = 0, 0
	poll := m.ObjectBytes / (m.LinkBps / 8) // seconds
	cycle := float64(s.Objects) * poll
	m.UpdateRate = s.CycleRatio / cycle
	m.RateSpread = s.RateSpread
	m.Undated = s.Undated
	m.Duration = 20 * cycle
	m.SampleEvery = cycle / 10
	if !s.Budget {
		m.MergeOverhead, m.RecordBytes = m.ObjectBytes/1000, 0
	}
	minPolls := s.MergeMinPolls
	if minPolls == 0 {
		minPolls = 5
	}
	// The live bounds are 250 ms and 30 minutes: the longest is 7,200
	// times the shortest.
	cd := &Cadence{Min: minPolls * poll, Max: 7200 * minPolls * poll, Budget: s.Budget}
	revisit := s.Revisit
	cs := make([]CrawlerSpec, 0, 2*s.Peers)
	for range s.Peers {
		cs = append(cs, CrawlerSpec{Controller: "1", Group: "alone", Revisit: revisit})
	}
	for range s.Peers {
		cs = append(cs, CrawlerSpec{Controller: "rate", Sharing: true, Checked: true, Group: "coop", Cadence: cd, Revisit: revisit})
	}
	r, err := Run(ctx, Setup{Model: m, Crawlers: cs, Seed: s.Seed, SampleShare: 0.03})
	if err != nil {
		return 0, 0, err
	}
	return lastHalf(r.Times, r.Cover["coop"], m.Duration), lastHalf(r.Times, r.Cover["alone"], m.Duration), nil
}
