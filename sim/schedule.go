package sim

import (
	"math"
	"time"

	"github.com/cocrawl/cocrawl/crawl/revisit"
)

func secs(x float64) time.Duration { return time.Duration(x * 1e9) }

// Revisit policies of a simulated crawler (CrawlerSpec.Revisit).
const (
	// RevisitCycle is the thesis's crawler: every object in turn, in the
	// crawler's own random order, which is uniform revisiting.
	RevisitCycle = ""
	// RevisitAdaptive halves an object's interval when a poll found a
	// change and grows it by half when not (the live crawler's first
	// policy).
	RevisitAdaptive = "adaptive"
	// RevisitOptimal estimates each object's change rate from its polls
	// and splits the crawler's poll rate by the freshness optimum, as the
	// live crawler does (package crawl/revisit).
	RevisitOptimal = "optimal"
)

// pollSchedule is a crawler's per-object schedule under a revisit policy
// other than the cycle: the objects by due time in a heap, each with its
// interval, last poll and change-rate estimate (48 bytes per object
// slot). Merged records fill the crawler's cache but do not move its
// schedule.
type pollSchedule struct {
	policy  string
	undated bool       // Model.Undated: polls see no date of the last change
	byDue   *indexHeap // the objects queued, by due time
	iv      []float64  // by object
	seen    []float64  // the last poll; -1: never polled
	rate    []revisit.Rate

	// The budget is the crawler's own poll rate, measured between fits:
	// a simulated crawler is never idle, so what it polls is what it may.
	lo, hi          float64 // interval bounds
	floor           float64 // the least polls per second of an estimated object (revisit.FloorShare)
	mu              float64
	prior           revisit.Prior
	fitPolls, fitAt float64 // polls and time at the last fit
	budget          float64 // polls per second at the last fit
	fitEvery        float64
}

func newPollSchedule(policy string, slots, objects int, m Model, rng interface{ Float64() float64 }) *pollSchedule {
	s := &pollSchedule{policy: policy, undated: m.Undated, byDue: newIndexHeap(slots), iv: make([]float64, slots),
		seen: make([]float64, slots), rate: make([]revisit.Rate, slots)}
	// One poll takes ObjectBytes at link speed: the first estimate of the
	// budget, before any fit measures it.
	s.budget = m.LinkBps / 8 / m.ObjectBytes
	cycle := float64(objects) / s.budget
	s.lo, s.hi = cycle/100, m.Duration
	s.fitEvery = cycle / 10
	for o := range s.seen {
		s.seen[o] = -1
	}
	for o := range objects {
		// Crawlers start with a fresh cache, a look at every object at
		// time 0: first polls spread over a cycle, in random order.
		s.seen[o] = 0
		s.push(uint32(o), rng.Float64()*cycle, cycle)
	}
	return s
}

// push queues object o, due at due, with interval iv.
func (s *pollSchedule) push(o uint32, due, iv float64) {
	s.iv[o] = iv
	s.byDue.push(int(o), due)
}

func (s *pollSchedule) pop() (uint32, bool) {
	o, ok := s.byDue.pop()
	return uint32(o), ok
}

// created queues a new object, due now.
func (s *pollSchedule) created(o uint32, now float64) {
	s.push(o, now, float64(len(s.byDue.items)+1)/s.budget)
}

// polled reschedules object o after a poll at now that found it changed
// or not; lastMod is when it last changed. A deleted object is not queued
// again (section 5.3).
func (s *pollSchedule) polled(o uint32, now float64, changed, deleted bool, lastMod float64, polls int64) {
	s.byDue.remove(int(o)) // a spot-check polls an object that may still be queued
	if deleted {
		return
	}
	if s.seen[o] >= 0 && now > s.seen[o] {
		s.rate[o].Observe(secs(now-s.seen[o]), changed, secs(now-lastMod), !s.undated)
	}
	s.seen[o] = now
	iv := s.iv[o]
	switch s.policy {
	case RevisitAdaptive:
		iv = revisit.Adapt(secs(iv), changed, secs(s.lo), secs(s.hi)).Seconds()
	case RevisitOptimal:
		s.refit(now, polls)
		if lambda, ok := s.prior.Estimate(s.rate[o]); ok {
			// The longest interval is the floor's, as the live crawler's
			// (crawl.longest): an object skipped is still looked at.
			hi := s.hi
			if s.floor > 0 {
				hi = min(hi, max(s.lo, 1/s.floor))
			}
			iv = revisit.Interval(lambda, s.mu, s.rate[o], secs(iv), secs(s.lo), secs(hi)).Seconds()
		} else {
			// Not estimated yet: adaptive, no more often than uniform.
			iv = max(revisit.Adapt(secs(iv), changed, secs(s.lo), secs(s.hi)).Seconds(), float64(len(s.byDue.items)+1)/s.budget)
		}
	}
	s.push(o, now+iv, iv)
}

// refit measures the budget and fits μ over the estimated objects, every
// fitEvery, as the live crawler does per host (crawl/schedule.go): the
// objects not estimated yet take at most an even share each.
func (s *pollSchedule) refit(now float64, polls int64) {
	if now-s.fitAt < s.fitEvery && s.fitAt > 0 {
		return
	}
	if el := now - s.fitAt; s.fitAt > 0 && el > 0 {
		s.budget = (float64(polls) - s.fitPolls) / el
	}
	s.fitAt, s.fitPolls = now, float64(polls)
	avail := s.budget
	share := avail / float64(max(1, len(s.byDue.items)))
	var fit revisit.PriorFit
	for _, o := range s.byDue.items {
		fit.Add(s.rate[o])
	}
	s.prior = fit.Prior()
	var bins revisit.Bins
	for _, o := range s.byDue.items {
		if lambda, ok := s.prior.Estimate(s.rate[o]); ok {
			bins.Add(lambda)
		} else {
			avail -= min(share, 1/s.iv[o])
		}
	}
	l := revisit.Limits{Least: 1 / s.hi, Most: 1 / s.lo}
	l.Floor = min(l.Most, max(l.Least, revisit.FloorShare*share))
	s.floor = l.Floor
	s.mu = bins.Multiplier(avail, l)
	if math.IsNaN(s.mu) {
		s.mu = math.Inf(1)
	}
}
