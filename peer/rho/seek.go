package rho

import (
	"fmt"
	"math"
	"time"
)

// DefaultSeekPeriod is the length of one Seek probe when none is given. The
// simulator found probes of about four times the mean time between changes
// of a page unbiased; shorter ones lean towards merging (sim/README.md). A
// day suits a community whose pages change several times a day; set
// seek:PERIOD from the change intervals the peer's polls see.
const DefaultSeekPeriod = 24 * time.Hour

// Seek is the project's freshness-seeking controller. It climbs towards the
// rho under which the cache is freshest, measuring that freshness itself: a
// poll that finds no change is a sample of a cache entry that was fresh,
// and a poll that finds a web-event a sample of one that was not, so the
// share of polls that find nothing estimates cache freshness. Event counts,
// which Rate and BangBang compare, do not: a merge's events are the peers'
// polls, so merging twice as often splits the same events over twice the
// merges and pays the overhead twice, yet looks as rich per second.
//
// It probes in step with its community. Time is cut into probes of Period
// on the clock outcomes carry (Outcome.End: peers' wall clocks agree to
// well under a second, and the simulator's crawlers share its clock): even
// probes merge Probe times more than the centre, odd probes Probe times
// less. Every peer running Seek with the same Period probes at the same
// moments, so the freshness a peer measures answers "what if the whole
// community merged more", not "what if I alone did". The second question
// is what greedy controllers answer, and its answer is always "merge
// more": a peer that merges more gets its peers' discoveries sooner while
// the polls it gives up cost everyone else. Probing together is how peers
// that never exchange a word find the rho that is best for all of them.
//
// It works on the scale of 1-rho (the share of merges), and starts at rho
// 0.95, where the simulator's fixed-rho sweeps put the optimum for most
// community sizes (sim/README.md). Each probe that counted at least
// MinPolls polls joins a pool of the probes at the current centre (at most
// 2 x Window, the oldest dropped), and the centre moves only when the
// difference the pool shows between merging more and merging less is Z
// standard errors clear of the noise (see endProbe: a fitted line takes
// any drift of freshness over time): with few polls per probe (a slow
// link, a congested network) one pair of probes rarely tells, several do.
// A move is by the current step, which grows by half while the centre
// searches one way and halves when it turns back, so a far optimum is
// reached in a few moves and a near one is not swung past. The pool is
// emptied after each move, as its evidence was about the old centre, and
// the very first probe is not counted, as it began in whatever state the
// cache was left in. The first Settle of each probe is not counted either,
// as freshness lags a change of rho. Without a clock (Outcome.End zero)
// the probes run on the sum of costs instead, a clock of the peer's own:
// it still climbs, but alone.
//
// Peers also pool their counts. Seek publishes them (Report; the
// robots.shr field "probe", spec 3.1) and takes its peers' from the
// outcomes of merges (Outcome.From, Outcome.Report): a probe's counts are
// its own plus the latest each peer reported for that probe, a peer's
// weighing at most twice its own. Every peer measures the same community
// answer, so pooling N peers' counts shrinks the noise by up to the
// square root of N: under contention a peer counts few polls a probe, and
// alone it needs many probes to see what a community sees in a few.
type Seek struct {
	Min, Max float64       // bounds of rho; default 0.5 and 0.998
	Start    float64       // initial rho; default 0.95
	Probe    float64       // factor on 1-rho while probing; default 1.5
	Period   time.Duration // length of one probe; default DefaultSeekPeriod
	Settle   float64       // share of each probe not counted; default 1/3
	MinPolls int           // polls a probe must count to be compared; default 30
	Window   int           // pairs of probes pooled at most; default 6
	Step     float64       // first move of ln(1-rho); default 0.3
	MinStep  float64       // smallest move of ln(1-rho); default 0.05
	MaxStep  float64       // largest move of ln(1-rho); default 1
	Z        float64       // standard errors a difference needs before the centre moves; default 2
	Boost    float64       // largest multiple of the step a clearer difference moves by; default 3

	ready        bool
	x            float64          // ln(1-rho) at the centre
	step         float64          // the next move's size
	lastMove     float64          // sign of the last move; 0 before the first
	probe        int64            // index of the current probe: even ones merge more
	clock        time.Duration    // sum of costs, the clock when outcomes carry none
	polls, fresh int              // counted in the current probe
	started      bool             // the first probe, begun in an unknown state, is over
	pool         []probeCount     // probes at the current centre, oldest first
	prev         count            // own counts of the probe before this one, if compared
	peers        map[string]count // peers' reports of the current probe, the latest of each
}

// count is what one crawler counted in one probe: polls, and the polls
// that found the cache fresh.
type count struct{ polls, fresh int }

// probeCount is what one probe counted: its index (even: merging more),
// this crawler's counts, and those its peers reported.
type probeCount struct {
	k     int64
	own   count
	peers map[string]count
}

// total is the probe's counts, own and pooled. A peer's counts weigh at
// most twice this crawler's own (or MinPolls, if more): a peer that
// reports a million polls, mistaken or hostile, cannot steer the centre
// alone. All peers' counts together weigh at most MaxPooled times it: a
// flood of identities cannot either.
func (pc probeCount) total(minPolls int) count {
	base := max(pc.own.polls, minPolls)
	limit := 2 * base
	var peers count
	for _, c := range pc.peers {
		if c.polls > limit {
			c.fresh = int(int64(c.fresh) * int64(limit) / int64(c.polls))
			c.polls = limit
		}
		peers.polls += c.polls
		peers.fresh += c.fresh
	}
	if all := MaxPooled * base; peers.polls > all {
		peers.fresh = int(int64(peers.fresh) * int64(all) / int64(peers.polls))
		peers.polls = all
	}
	return count{polls: pc.own.polls + peers.polls, fresh: pc.own.fresh + peers.fresh}
}

// MaxPooled bounds the weight of all pooled reports together, in this
// crawler's own counts: enough for an honest community of about 128
// peers to pool fully (sim/README.md), and a bound on what fake
// identities can add.
const MaxPooled = 128

// NewSeek returns the controller with its default settings.
func NewSeek() *Seek { s := &Seek{}; s.init(); return s }

func (s *Seek) init() {
	if s.ready {
		return
	}
	if s.Min <= 0 && s.Max <= 0 {
		s.Min, s.Max = 0.5, 0.998
	}
	if s.Start <= 0 {
		s.Start = 0.95
	}
	if s.Probe <= 1 {
		s.Probe = 1.5
	}
	if s.Period <= 0 {
		s.Period = DefaultSeekPeriod
	}
	if s.Settle <= 0 || s.Settle >= 1 {
		s.Settle = 1.0 / 3
	}
	if s.MinPolls <= 0 {
		s.MinPolls = 30
	}
	if s.Window <= 0 {
		s.Window = 6
	}
	if s.Step <= 0 {
		s.Step = 0.3
	}
	if s.MinStep <= 0 {
		s.MinStep = 0.05
	}
	if s.MaxStep <= 0 {
		s.MaxStep = 1
	}
	s.MaxStep = max(s.MaxStep, s.MinStep)
	s.step = min(s.MaxStep, max(s.MinStep, s.Step))
	if s.Z <= 0 {
		s.Z = 2
	}
	if s.Boost <= 0 {
		s.Boost = 3
	}
	s.Boost = max(s.Boost, 1)
	s.x = math.Log(1 - math.Min(s.Max, math.Max(s.Min, s.Start)))
	s.ready = true
}

// bounds of x = ln(1-rho)
func (s *Seek) lo() float64 { return math.Log(1 - s.Max) }
func (s *Seek) hi() float64 { return math.Log(1 - s.Min) }

// Rho is the current probe's rho: the centre with more merges in even
// probes, fewer in odd ones.
func (s *Seek) Rho() float64 {
	s.init()
	d := math.Log(s.Probe)
	if s.probe%2 != 0 {
		d = -d
	}
	return 1 - math.Exp(math.Min(s.hi(), math.Max(s.lo(), s.x+d)))
}

func (s *Seek) Observe(o Outcome) {
	s.init()
	var t time.Duration
	if o.End.IsZero() {
		s.clock += max(o.Cost, 0)
		t = s.clock
	} else {
		t = time.Duration(o.End.UnixNano())
	}
	if t < 0 {
		t = 0 // before 1970: a broken clock; probe 0 until it mends
	}
	if k := int64(t / s.Period); k != s.probe {
		s.endProbe()
		s.probe, s.polls, s.fresh, s.peers = k, 0, 0, nil
	}
	if o.Merge {
		s.pooled(o.From, o.Report)
		return
	}
	if t%s.Period < time.Duration(s.Settle*float64(s.Period)) {
		return
	}
	s.polls++
	if o.Events == 0 {
		s.fresh++
	}
}

// endProbe adds the probe that just ended to the pool and moves the
// centre if the pool shows a difference clear of the noise.
//
// Freshness drifts while a community warms up or the web's pace changes,
// and a drift seen through alternating probes looks like a difference
// between them. So the pool is fitted with a line in time plus the
// difference between probes merging more and less (weighted least squares,
// each probe weighted by its polls): probes alternate, so the line takes
// the drift and the difference is what is left. Its standard error is the
// larger of the binomial one (polls sample the cache at random) and the
// one the fit's residuals show, so a landscape the line does not fit makes
// Seek wait rather than move on it.
func (s *Seek) endProbe() {
	if !s.started {
		// The first probe began in whatever state the cache was left:
		// a cache that starts fresh, or was frozen while the peer was
		// down, ages through it whatever rho does.
		s.started = true
		s.prev = count{}
		return
	}
	pc := probeCount{k: s.probe, own: count{s.polls, s.fresh}, peers: s.peers}
	s.prev = count{}
	if pc.total(s.MinPolls).polls < s.MinPolls {
		return
	}
	s.prev = pc.own
	s.pool = append(s.pool, pc)
	if len(s.pool) > 2*s.Window {
		s.pool = append(s.pool[:0], s.pool[1:]...)
	}
	d, se, ok := s.fit()
	if !ok || d == 0 || math.Abs(d) < s.Z*se {
		return
	}
	// More merges fresher: move towards more merges (x up), and back.
	dir := 1.0
	if d < 0 {
		dir = -1
	}
	switch {
	case s.lastMove == dir:
		s.step = math.Min(s.MaxStep, s.step*1.5)
	case s.lastMove != 0:
		s.step = math.Max(s.MinStep, s.step/2)
	}
	s.lastMove = dir
	boost := math.Min(s.Boost, math.Abs(d)/(s.Z*se))
	s.x = math.Min(s.hi(), math.Max(s.lo(), s.x+dir*s.step*boost))
	s.pool = s.pool[:0]
}

// fit is the weighted least squares fit of the pool's fresh shares to
// a + b*t + d*(+1/2 merging more, -1/2 merging less): d, the difference
// merging more makes, and its standard error. ok is false until the pool
// holds three probes, both kinds among them: the fewest that fit a line
// and a difference.
func (s *Seek) fit() (d, se float64, ok bool) {
	if len(s.pool) < 3 {
		return 0, 0, false
	}
	var m [3][3]float64
	var v [3]float64
	var tMean, polls, fresh float64
	ups := 0
	totals := make([]count, len(s.pool))
	for i, pc := range s.pool {
		totals[i] = pc.total(s.MinPolls)
		tMean += float64(pc.k)
		polls += float64(totals[i].polls)
		fresh += float64(totals[i].fresh)
		if pc.k%2 == 0 {
			ups++
		}
	}
	if ups == 0 || ups == len(s.pool) {
		return 0, 0, false
	}
	tMean /= float64(len(s.pool))
	row := func(i int) ([3]float64, float64, float64) {
		side := -0.5
		if s.pool[i].k%2 == 0 {
			side = 0.5
		}
		c := totals[i]
		return [3]float64{1, float64(s.pool[i].k) - tMean, side}, float64(c.fresh) / float64(c.polls), float64(c.polls)
	}
	for k := range s.pool {
		x, y, w := row(k)
		for i := range 3 {
			v[i] += w * x[i] * y
			for j := range 3 {
				m[i][j] += w * x[i] * x[j]
			}
		}
	}
	inv, ok := invert3(m)
	if !ok {
		return 0, 0, false
	}
	var beta [3]float64
	for i := range 3 {
		for j := range 3 {
			beta[i] += inv[i][j] * v[j]
		}
	}
	// Var(y) = sigma2 / polls: binomial, or what the residuals show.
	p := fresh / polls
	sigma2 := p * (1 - p)
	var rss float64
	for k := range s.pool {
		x, y, w := row(k)
		r := y - (beta[0] + beta[1]*x[1] + beta[2]*x[2])
		rss += w * r * r
	}
	if len(s.pool) > 3 {
		sigma2 = math.Max(sigma2, rss/float64(len(s.pool)-3))
	}
	return beta[2], math.Sqrt(sigma2 * inv[2][2]), true
}

// invert3 inverts a symmetric 3x3 matrix; ok is false if it is singular.
// Written out by cofactors rather than taken from gonum/mat: a fit of three
// unknowns once a probe does not justify a linear-algebra package in every
// peer.
func invert3(m [3][3]float64) (inv [3][3]float64, ok bool) {
	c00 := m[1][1]*m[2][2] - m[1][2]*m[2][1]
	c01 := m[1][2]*m[2][0] - m[1][0]*m[2][2]
	c02 := m[1][0]*m[2][1] - m[1][1]*m[2][0]
	det := m[0][0]*c00 + m[0][1]*c01 + m[0][2]*c02
	if math.Abs(det) < 1e-12*math.Abs(m[0][0]*m[1][1]*m[2][2]) || det == 0 {
		return inv, false
	}
	inv[0][0] = c00 / det
	inv[0][1] = (m[0][2]*m[2][1] - m[0][1]*m[2][2]) / det
	inv[0][2] = (m[0][1]*m[1][2] - m[0][2]*m[1][1]) / det
	inv[1][0] = c01 / det
	inv[1][1] = (m[0][0]*m[2][2] - m[0][2]*m[2][0]) / det
	inv[1][2] = (m[0][2]*m[1][0] - m[0][0]*m[1][2]) / det
	inv[2][0] = c02 / det
	inv[2][1] = (m[0][1]*m[2][0] - m[0][0]*m[2][1]) / det
	inv[2][2] = (m[0][0]*m[1][1] - m[0][1]*m[1][0]) / det
	return inv, true
}

// pooled takes a peer's report, given with a merge from it, into the
// counts of the probes it covers: its counts so far of the current probe
// (replacing what the peer reported before) and its final counts of the
// probe before, if that probe is still in the pool. A report of another
// period, or from a peer centred more than a probe's width away (a factor
// of Probe squared on 1-rho), answers another question and is not taken.
// Nearer ones are: peers pooling much the same counts move together, but
// one may move a probe before another, and a tolerance narrower than a
// move would split the community for good.
func (s *Seek) pooled(from string, r Report) {
	if from == "" || r.Period != s.Period || !(r.Centre >= 0 && r.Centre < 1) {
		return
	}
	if math.Abs(math.Log(1-r.Centre)-s.x) > 2*math.Log(s.Probe) {
		return
	}
	s.take(from, r.Probe, count{r.Polls, r.Fresh})
	if r.PrevPolls > 0 {
		s.take(from, r.Probe-1, count{r.PrevPolls, r.PrevFresh})
	}
}

func (s *Seek) take(from string, k int64, c count) {
	if c.polls <= 0 || c.fresh < 0 || c.fresh > c.polls {
		return
	}
	var m *map[string]count
	if k == s.probe {
		m = &s.peers
	} else {
		for i := range s.pool {
			if s.pool[i].k == k {
				m = &s.pool[i].peers
			}
		}
	}
	if m == nil {
		return
	}
	if *m == nil {
		*m = map[string]count{}
	}
	(*m)[from] = c
}

// Report is what Seek publishes for its peers to pool: its counts so far
// in the current probe and its counts of the one before, if compared. A
// period that is not a whole number of seconds has no report: the field
// carries whole seconds, and peers would take it for another period.
func (s *Seek) Report() (Report, bool) {
	s.init()
	if s.Period%time.Second != 0 {
		return Report{}, false
	}
	return Report{
		Period: s.Period, Centre: s.Centre(), Probe: s.probe,
		Polls: s.polls, Fresh: s.fresh, PrevPolls: s.prev.polls, PrevFresh: s.prev.fresh,
	}, true
}

// Centre is the rho the probes are centred on.
func (s *Seek) Centre() float64 { s.init(); return 1 - math.Exp(s.x) }

// Name is "seek", or "seek:PERIOD" when the period is not the default.
func (s *Seek) Name() string {
	s.init()
	if s.Period == DefaultSeekPeriod {
		return "seek"
	}
	return "seek:" + s.Period.String()
}

func (s *Seek) String() string { return fmt.Sprintf("%s rho=%.3f", s.Name(), s.Centre()) }
