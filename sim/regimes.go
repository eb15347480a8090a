package sim

import (
	"context"
	"fmt"
)

// RegimeCell is a cell of the live regime sweep (cocrawl measure regimes)
// in the model, so the two can be compared: objects pages, a lone
// crawler's cycle over them (one object a second, the thesis's link)
// cycleRatio times an object's mean change interval, peers sharing
// crawlers (the rate controller, spot-checks, Setup.SampleShare at the
// live default) beside peers polling-only ones, no contention (loopback
// does not bind), no churn, for 20 cycles; rateSpread spreads the objects'
// change rates as Model.RateSpread does (0: every object alike). It
// returns both groups' coverage over the last half. What the model leaves out: hosts and
// politeness (one link per crawler instead), the live peers' rendezvous
// split, merge cadence and revisit schedule (a simulated crawler polls in
// its own random cycle and merges in turn, section 5.1).
func RegimeCell(ctx context.Context, objects, peers int, cycleRatio, rateSpread float64, seed uint64) (coop, alone float64, err error) {
	if objects < 1 || peers < 1 || !(cycleRatio > 0) {
		return 0, 0, fmt.Errorf("%w: a regime cell needs objects, peers and a cycle ratio", ErrModel)
	}
	m := Thesis()
	m.Objects = objects
	m.ObjectSpread = 0
	m.Contention = false
	m.CreatePerDay, m.DeletePerDay = 0, 0
	cycle := float64(objects) * m.ObjectBytes / (m.LinkBps / 8)
	m.UpdateRate = cycleRatio / cycle
	m.RateSpread = rateSpread
	m.Duration = 20 * cycle
	m.SampleEvery = cycle / 10
	cs := homogeneous(peers, "1", false, "alone")
	for range peers {
		cs = append(cs, CrawlerSpec{Controller: "rate", Sharing: true, Checked: true, Group: "coop"})
	}
	r, err := Run(ctx, Setup{Model: m, Crawlers: cs, Seed: seed, SampleShare: 0.03})
	if err != nil {
		return 0, 0, err
	}
	return lastHalf(r.Times, r.Cover["coop"], m.Duration), lastHalf(r.Times, r.Cover["alone"], m.Duration), nil
}
