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
// It works on the scale of 1-rho (the share of merges), where the fixed rho
// experiments put the optimum between 0.9 and 0.99 for most communities.
// After each pair of probes the centre takes a step of Gain times the
// relative freshness difference (at most MaxStep), so noise averages out
// over many probes while a steady difference moves rho. The first Settle of
// each probe is not counted, as freshness lags a change of rho. Without a
// clock (Outcome.End zero) the probes run on the sum of costs instead, a
// clock of the peer's own: it still climbs, but alone.
type Seek struct {
	Min, Max float64       // bounds of rho; default 0.5 and 0.998
	Start    float64       // initial rho; default 0.975
	Probe    float64       // factor on 1-rho while probing; default 1.5
	Period   time.Duration // length of one probe; default DefaultSeekPeriod
	Settle   float64       // share of each probe not counted; default 1/3
	MinPolls int           // polls a probe must count to be compared; default 30
	Gain     float64       // step of ln(1-rho) per unit of relative freshness difference; default 4
	MaxStep  float64       // largest step of ln(1-rho); default 0.3
	Z        float64       // standard errors a difference needs before the centre moves; default 2

	ready        bool
	x            float64       // ln(1-rho) at the centre
	probe        int64         // index of the current probe: even ones merge more
	clock        time.Duration // sum of costs, the clock when outcomes carry none
	polls, fresh int           // counted in the current probe
	upPolls      int           // the last even probe's counts, pending its odd probe
	upFresh      int
	upProbe      int64  // the last even probe's index; -1 when none is pending
	pool         [4]int // pairs pooled so far: fresh and polls merging more, then less
	pairs        int
}

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
		s.Start = 0.975
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
	if s.Gain <= 0 {
		s.Gain = 4
	}
	if s.MaxStep <= 0 {
		s.MaxStep = 0.3
	}
	if s.Z <= 0 {
		s.Z = 2
	}
	s.x = math.Log(1 - math.Min(s.Max, math.Max(s.Min, s.Start)))
	s.upProbe = -1
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
		s.probe, s.polls, s.fresh = k, 0, 0
	}
	if o.Merge || t%s.Period < time.Duration(s.Settle*float64(s.Period)) {
		return
	}
	s.polls++
	if o.Events == 0 {
		s.fresh++
	}
}

// endProbe compares the probe that just ended with the one before and
// moves the centre if the difference is clear of the noise.
func (s *Seek) endProbe() {
	if s.polls < s.MinPolls {
		s.upProbe = -1
		return
	}
	if s.probe%2 == 0 {
		s.upFresh, s.upPolls, s.upProbe = s.fresh, s.polls, s.probe
		return
	}
	if s.upProbe != s.probe-1 {
		return
	}
	s.upProbe = -1
	up := float64(s.upFresh) / float64(s.upPolls)
	down := float64(s.fresh) / float64(s.polls)
	// Polls sample the cache at random, so each share is binomial; a
	// difference within Z standard errors is noise, and moving on it would
	// only walk the centre away from where the last clear difference left
	// it.
	p := float64(s.upFresh+s.fresh) / float64(s.upPolls+s.polls)
	se := math.Sqrt(p * (1 - p) * (1/float64(s.upPolls) + 1/float64(s.polls)))
	if up+down == 0 || math.Abs(up-down) < s.Z*se {
		return
	}
	// More merges fresher: move towards more merges (x up), and back.
	step := s.Gain * (up - down) / (up + down)
	step = math.Max(-s.MaxStep, math.Min(s.MaxStep, step))
	s.x = math.Min(s.hi(), math.Max(s.lo(), s.x+step))
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
