package rho

import "math"

// The merge cadence: how often a peer merges from each of its peers,
// whatever rho says. A slot that draws a merge when none is due polls
// instead, so rho splits the slots only between what is due. The live
// peer (package peer) keeps one wait per peer by these rules; the
// simulator models them (sim.CrawlerSpec.Cadence). Without a cadence a
// controller that compares what one peer gains drifts towards merging
// (merging more helps it at once; fewer polls hurt everyone later): in
// the simulator two of three "rate" peers merged 94% of the time, each
// merge bringing about one record, and the community polled little more
// than one crawler alone.

// MergeTarget is the events a merge should bring: the wait between merges
// from a peer settles where they bring about this many. What a merge
// brings ages while it waits on the peer (a record merged d seconds after
// its poll is stale with probability 1 − e^(−λd)), so fewer events a merge
// means fresher ones; more means fewer requests. At 4, a merge costs at
// most a quarter of a request per event (a poll, about one per event on a
// web that changes as fast as it is polled), and the records wait on the
// peer a quarter of the time that peer takes to find four changes, which
// is short against the interval at which it polls any one page as long as
// it polls more than a handful.
const MergeTarget = 4

// MergeStep is the factor the wait between merges from a peer is
// multiplied by after a merge that gained events: the square root of
// MergeTarget/gained (a damped step toward the wait that would have
// brought MergeTarget at the same pace), within a halving and a doubling.
func MergeStep(gained int64) float64 {
	return min(2, max(0.5, math.Sqrt(MergeTarget/max(float64(gained), 0.25))))
}

// MergeBudgetShare is the most of a request budget that merges take,
// counted in the requests they make (a robots.shr and each day file read):
// the wait between merges from each peer is at least the peers times the
// requests a merge makes over MergeBudgetShare of the budget. Unbounded,
// a merge every 250 ms from each of two peers would take 8 of 40 requests
// a second from the polls that make the events merged (the demo: 0.63x the
// polls of a polling-only peer, 1.55x its freshness, against 2.01x with
// merges every second). The floor once counted merges, not their
// requests, and with three requests a merge let merges take 15%; the
// regime sweep's budget cell (3 peers, 20 requests a second, pages
// changing 5 times a lone cycle) measured 1.87x the lone crawlers'
// freshness there, and 1.69x with merges held to 5% of the requests: so
// the share is 15%, counted right.
const MergeBudgetShare = 0.15
