package rho

import (
	"fmt"
	"math"
)

// Rate is the project's controller. It estimates the events gained per
// second of network time by polls and by merges, each over an
// exponentially decaying window of HalfLife operations, and every Every
// operations moves rho one Step towards the better side when that side's
// rate beats the other's by more than Margin. Rho stays within [Min, Max] so
// both sides keep being measured.
//
// Against BangBang it fixes two weaknesses the thesis names: merges are
// charged for the time they take, not counted as one operation each, and
// the window has a fixed length, so a peer that has run for months reacts
// to a change in the community as fast as a new one. Small steps with a
// dead band let it settle on an intermediate rho, which the thesis's fixed
// rho experiments show is where the best freshness lies for small and
// medium communities.
type Rate struct {
	Min, Max float64 // bounds of rho; default 0.05 and 0.95
	Start    float64 // initial rho; default 0.5
	Step     float64 // change per decision; default 0.05
	Margin   float64 // dead band: relative lead needed to move; default 0.2
	HalfLife float64 // operations after which an outcome weighs half; default 200
	Every    int     // operations between decisions; default 10
	// MinSamples is the decayed number of polls and of merges each side
	// needs before rho moves; default 3. It keeps the first few
	// operations from steering, yet lets a peer whose merges are rare
	// (one peer, merged every few seconds) adapt.
	MinSamples float64

	ready                     bool
	rho, decay                float64
	pollN, pollEv, pollSec    float64
	mergeN, mergeEv, mergeSec float64
	n                         int
}

// NewRate returns the controller with its default settings.
func NewRate() *Rate { r := &Rate{}; r.init(); return r }

func (r *Rate) init() {
	if r.ready {
		return
	}
	if r.Min <= 0 && r.Max <= 0 {
		r.Min, r.Max = 0.05, 0.95
	}
	if r.Start <= 0 {
		r.Start = 0.5
	}
	if r.Step <= 0 {
		r.Step = 0.05
	}
	if r.Margin <= 0 {
		r.Margin = 0.2
	}
	if r.HalfLife <= 0 {
		r.HalfLife = 200
	}
	if r.Every <= 0 {
		r.Every = 10
	}
	if r.MinSamples <= 0 {
		r.MinSamples = 3
	}
	r.rho = math.Min(r.Max, math.Max(r.Min, r.Start))
	r.decay = math.Exp2(-1 / r.HalfLife)
	r.ready = true
}

func (r *Rate) Rho() float64 { r.init(); return r.rho }

func (r *Rate) Observe(o Outcome) {
	r.init()
	sec := o.Cost.Seconds()
	if sec <= 0 {
		sec = 1e-3 // an operation is never free; keeps rates finite
	}
	for _, v := range []*float64{&r.pollN, &r.pollEv, &r.pollSec, &r.mergeN, &r.mergeEv, &r.mergeSec} {
		*v *= r.decay
	}
	if o.Merge {
		r.mergeN++
		r.mergeEv += float64(o.Events)
		r.mergeSec += sec
	} else {
		r.pollN++
		r.pollEv += float64(o.Events)
		r.pollSec += sec
	}
	r.n++
	// No decision in the first two periods: a handful of operations is
	// noise, not a rate.
	if r.n%r.Every != 0 || r.n < 2*r.Every || r.pollN < r.MinSamples || r.mergeN < r.MinSamples {
		return
	}
	p, m := r.pollEv/r.pollSec, r.mergeEv/r.mergeSec
	switch {
	case p > m*(1+r.Margin):
		r.rho = math.Min(r.Max, r.rho+r.Step)
	case m > p*(1+r.Margin):
		r.rho = math.Max(r.Min, r.rho-r.Step)
	}
}

// Rates returns the current estimates of events per second of network time
// for polls and merges.
func (r *Rate) Rates() (poll, merge float64) {
	if r.pollSec > 0 {
		poll = r.pollEv / r.pollSec
	}
	if r.mergeSec > 0 {
		merge = r.mergeEv / r.mergeSec
	}
	return poll, merge
}

func (r *Rate) Name() string { return "rate" }

func (r *Rate) String() string {
	p, m := r.Rates()
	return fmt.Sprintf("rate rho=%.2f poll=%.3g/s merge=%.3g/s", r.Rho(), p, m)
}
