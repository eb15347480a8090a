package rho

import (
	"fmt"
	"math"
)

// Seek is the project's freshness-seeking controller. It climbs towards the
// rho under which its own cache is freshest, measuring that freshness
// itself: a poll that finds no change is a sample of a cache entry that was
// fresh, and a poll that finds a web-event a sample of one that was not, so
// the share of polls that find nothing estimates the crawler's cache
// freshness (polls visit objects in a random order). Event counts, which
// Rate and BangBang compare, do not: a merge's events are the peers'
// polls, so merging twice as often splits the same events over twice the
// merges and pays the overhead twice, yet looks as rich per second.
//
// It works on the scale of 1-rho (the share of merges), where the fixed rho
// experiments put the optimum between 0.9 and 0.99 for most communities: a
// probe of Epoch polls with the share of merges times Probe, then one
// divided by Probe (the first Settle polls of each probe not counted, as
// freshness lags a change), then a step of Gain times the relative
// difference, so noise averages out over many probes while a steady
// difference moves rho. Between probes rho stays within [Min, Max].
type Seek struct {
	Min, Max float64 // bounds of rho; default 0.5 and 0.998
	Start    float64 // initial rho; default 0.95
	Probe    float64 // factor on 1-rho while probing; default 1.5
	Epoch    int     // polls per probe; default 300
	Settle   int     // polls at the start of a probe not counted; default Epoch/3
	Gain     float64 // step of ln(1-rho) per unit of relative freshness difference; default 4
	MaxStep  float64 // largest step of ln(1-rho); default 0.3

	ready        bool
	x            float64 // ln(1-rho) at the centre
	phase        int     // 0: probing up (more merges), 1: probing down
	polls, fresh int
	up           float64 // freshness measured in the first probe
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
		s.Start = 0.95
	}
	if s.Probe <= 1 {
		s.Probe = 1.5
	}
	if s.Epoch <= 0 {
		s.Epoch = 300
	}
	if s.Settle <= 0 || s.Settle >= s.Epoch {
		s.Settle = s.Epoch / 3 // 100 with the default epoch
	}
	if s.Gain <= 0 {
		s.Gain = 4
	}
	if s.MaxStep <= 0 {
		s.MaxStep = 0.3
	}
	s.x = math.Log(1 - math.Min(s.Max, math.Max(s.Min, s.Start)))
	s.ready = true
}

// bounds of x = ln(1-rho)
func (s *Seek) lo() float64 { return math.Log(1 - s.Max) }
func (s *Seek) hi() float64 { return math.Log(1 - s.Min) }

// Rho is the probe's rho: the centre with more merges, then fewer.
func (s *Seek) Rho() float64 {
	s.init()
	d := math.Log(s.Probe)
	if s.phase == 1 {
		d = -d
	}
	return 1 - math.Exp(math.Min(s.hi(), math.Max(s.lo(), s.x+d)))
}

func (s *Seek) Observe(o Outcome) {
	s.init()
	if o.Merge {
		return
	}
	s.polls++
	if s.polls > s.Settle && o.Events == 0 {
		s.fresh++
	}
	if s.polls < s.Epoch {
		return
	}
	f := float64(s.fresh) / float64(s.Epoch-s.Settle)
	s.polls, s.fresh = 0, 0
	if s.phase == 0 {
		s.up, s.phase = f, 1
		return
	}
	s.phase = 0
	if s.up+f == 0 {
		return
	}
	// More merges fresher: move towards more merges (x up), and back.
	step := s.Gain * (s.up - f) / (s.up + f)
	step = math.Max(-s.MaxStep, math.Min(s.MaxStep, step))
	s.x = math.Min(s.hi(), math.Max(s.lo(), s.x+step))
}

// Centre is the rho the probes are centred on.
func (s *Seek) Centre() float64 { s.init(); return 1 - math.Exp(s.x) }

func (s *Seek) Name() string { return "seek" }

func (s *Seek) String() string { return fmt.Sprintf("seek rho=%.3f", s.Centre()) }
