package sim

import (
	"context"
	"errors"
	"fmt"
	"math"
	"math/bits"
	"math/rand/v2"
	"strconv"

	"github.com/cocrawl/cocrawl/peer/rho"
	"github.com/cocrawl/cocrawl/peer/trust"
)

// Versions a crawler holds of an object. An object's versions count its
// creation (1) and each update; a crawler holds none, one of them, or the
// knowledge that the object was deleted.
const (
	verNone    uint16 = 0
	verDeleted uint16 = math.MaxUint16
	verForged  uint16 = math.MaxUint16 - 1 // a liar's update: newer than any real version
	verMax     uint16 = math.MaxUint16 - 2
)

// ErrOverflow is returned when an object is updated more often than a
// version can count.
var ErrOverflow = errors.New("sim: an object was updated more than 65,000 times; lower the update rate or the duration")

// record is one web-event record: in a crawler's share log, and in flight
// in a merge. lpd is when the crawler that polled it saw the web-event (the
// last-polled date our .dat records carry, kept as records are merged on).
type record struct {
	obj uint32
	ver uint16
	src uint16 // the crawler it was merged from plus one; 0: polled (or made up)
	lpd float64
}

// world is the state of one run: the web, the crawlers, and the clock.
//
// Freshness is kept exact at O(1) per change: per object, a bitmap of the
// crawlers holding its current version (an update or deletion makes exactly
// those stale); per crawler, its fresh and total entries, and time
// integrals of fresh/entries and fresh/live brought up to date whenever
// either changes (the coverage integral uses a global integral of 1/live so
// that creations and deletions need not touch every crawler).
type world struct {
	m      Model
	n      int // crawlers
	words  int // bitmap words per object
	rng    *rand.Rand
	now    float64
	salt   uint64
	gnet   float64 // share of link speed the network leaves each transfer
	groups []string

	sampleShare float64 // Setup.SampleShare

	// the web, per object slot
	cur      []uint16 // current version; 0: not created yet
	dead     []bool
	created  int
	live     []uint32 // live objects, for uniform picks
	livePos  []int32
	versions []uint16 // slot*n + crawler
	src      []uint16 // slot*n + crawler: where the state came from, as record.src; nil without liars or checks
	policy   trust.Policy
	fresh    []uint64  // slot*words + crawler/64: holds the current version
	lastMod  []float64 // by slot, when it last changed; nil when no crawler keeps a schedule
	nextWeb  float64
	events   int64

	// integral of 1/live over time, for coverage
	gInt, gT float64

	crawlers []crawler
	jobs     *jobHeap

	// samples
	times  []float64
	series [][]float64 // [group][sample]
	cover  [][]float64
	err    error
}

func newWorld(s Setup, ctrls []rho.Controller) *world {
	m := s.Model
	n := len(s.Crawlers)
	slots := m.maxSlots()
	w := &world{
		m:           m,
		n:           n,
		words:       (n + 63) / 64,
		rng:         newRand(s.Seed, 0),
		sampleShare: s.SampleShare,
		salt:        s.Seed*0x2545f4914f6cdd1d + 1,
		gnet:        1,
		cur:         make([]uint16, slots),
		dead:        make([]bool, slots),
		live:        make([]uint32, 0, slots),
		livePos:     make([]int32, slots),
		versions:    make([]uint16, slots*n),
		crawlers:    make([]crawler, n),
		jobs:        newJobHeap(n),
	}
	w.fresh = make([]uint64, slots*w.words)
	for _, spec := range s.Crawlers {
		if spec.Checked || spec.Lies > 0 {
			w.src = make([]uint16, slots*n)
			w.policy = s.Trust.WithDefaults()
			break
		}
	}
	_ = adviseHugePages(w.versions)
	_ = adviseHugePages(w.fresh)
	if m.Contention {
		w.gnet = min(1, m.Slots()/float64(n))
	}
	// The web at time 0: every initial object at version 1, every crawler
	// holding it ("crawlers started with an entirely fresh cache").
	for o := range m.Objects {
		w.cur[o] = 1
		w.livePos[o] = int32(len(w.live))
		w.live = append(w.live, uint32(o))
	}
	w.created = m.Objects
	for i := range w.versions[:m.Objects*n] {
		w.versions[i] = 1
	}
	full := make([]uint64, w.words)
	for c := range n {
		full[c/64] |= 1 << (c % 64)
	}
	for o := range m.Objects {
		copy(w.fresh[o*w.words:], full)
	}
	groupIndex := map[string]int{}
	prime := nextPrime(uint64(slots))
	for i, spec := range s.Crawlers {
		g, ok := groupIndex[spec.Group]
		if !ok {
			g = len(w.groups)
			groupIndex[spec.Group] = g
			w.groups = append(w.groups, spec.Group)
		}
		r := newRand(s.Seed, uint64(i)+1)
		c := &w.crawlers[i]
		*c = crawler{
			id:        i,
			name:      strconv.Itoa(i),
			ctrl:      ctrls[i],
			spec:      spec.Controller,
			sharing:   spec.Sharing,
			group:     g,
			rng:       r,
			sampleRng: newRand(s.Seed, uint64(i)+1<<32),
			permMod:   prime,
			permA:     1 + r.Uint64N(prime-1),
			permB:     r.Uint64N(prime),
			fresh:     m.Objects,
			entries:   m.Objects,
			lies:      spec.Lies,
			checked:   spec.Checked && w.policy.Checks > 0,
		}
		if c.checked {
			c.trust = make([]sourceTrust, n)
			for p := range c.trust {
				c.trust[p].distrustAt = -1
			}
		}
		c.cursor = r.Uint64N(prime)
		if spec.Cadence != nil {
			c.cadence = spec.Cadence
			c.mergeWait, c.mergeDue = make([]float64, n), make([]float64, n)
		}
		if spec.Revisit != RevisitCycle {
			c.sched = newPollSchedule(spec.Revisit, slots, m.Objects, m, r)
			if w.lastMod == nil {
				w.lastMod = make([]float64, slots)
			}
		}
		// Peers in a random order, visited round robin (section 6.1).
		for _, p := range r.Perm(n) {
			if p != i {
				c.peers = append(c.peers, int32(p))
			}
		}
		c.lastVisit = make([]float64, n)
		c.lastPos = make([]int64, n)
		for p := range c.lastVisit {
			c.lastVisit[p] = -1
		}
	}
	w.series = make([][]float64, len(w.groups))
	w.cover = make([][]float64, len(w.groups))
	return w
}

// nextPrime is the smallest prime >= n (n is at most a few tens of millions).
func nextPrime(n uint64) uint64 {
	if n < 3 {
		return 3
	}
	for p := n | 1; ; p += 2 {
		prime := true
		for d := uint64(3); d*d <= p; d += 2 {
			if p%d == 0 {
				prime = false
				break
			}
		}
		if prime {
			return p
		}
	}
}

// objectBytes is the size of object o, fixed per object and run.
func (w *world) objectBytes(o uint32) float64 {
	x := uint64(o) + w.salt
	x ^= x >> 30
	x *= 0xbf58476d1ce4e5b9
	x ^= x >> 27
	x *= 0x94d049bb133111eb
	x ^= x >> 31
	u := float64(x>>11) / (1 << 53)
	return w.m.ObjectBytes * (1 + w.m.ObjectSpread*(2*u-1))
}

// liveIntegral is the integral of 1/live from 0 to now.
func (w *world) liveIntegral() float64 {
	if len(w.live) == 0 {
		return w.gInt
	}
	return w.gInt + (w.now-w.gT)/float64(len(w.live))
}

func (w *world) settleLive() {
	w.gInt = w.liveIntegral()
	w.gT = w.now
}

// flush brings crawler c's freshness integrals up to now; called before
// anything changes its fresh or total entries.
func (w *world) flush(c *crawler) {
	dt := w.now - c.tLast
	if dt <= 0 {
		return
	}
	if c.entries > 0 {
		c.areaCache += float64(c.fresh) / float64(c.entries) * dt
	}
	g := w.liveIntegral()
	c.areaCover += float64(c.fresh) * (g - c.gLast)
	c.tLast, c.gLast = w.now, g
}

// staleHolders makes every crawler holding object o's current version stale.
func (w *world) staleHolders(o uint32) {
	bm := w.fresh[int(o)*w.words : int(o)*w.words+w.words]
	for i, word := range bm {
		for word != 0 {
			c := &w.crawlers[i*64+bits.TrailingZeros64(word)]
			w.flush(c)
			c.fresh--
			word &= word - 1
		}
		bm[i] = 0
	}
}

// webEvent applies the next web-event and draws the time of the one after.
func (w *world) webEvent() {
	live := float64(len(w.live))
	upd := w.m.maxObjectRate() * live
	cr := w.m.CreatePerDay / Day
	del := w.m.DeletePerDay / Day
	u := w.rng.Float64() * (upd + cr + del)
	switch {
	case u < upd:
		o := w.live[w.rng.IntN(len(w.live))]
		if w.m.RateSpread > 0 && w.rng.Float64()*w.m.maxObjectRate() >= w.m.ObjectRate(o) {
			// Thinning: candidates come at the fastest object's rate and
			// each is kept with its object's share of it, which makes
			// every object's updates Poisson at its own rate.
			w.scheduleWeb()
			return
		}
		if w.cur[o] >= verMax {
			w.err = ErrOverflow
			return
		}
		w.staleHolders(o)
		w.cur[o]++
		w.changed(o)
	case u < upd+cr:
		if w.created >= len(w.cur) {
			w.err = fmt.Errorf("sim: more creations than the %d slots allocated", len(w.cur))
			return
		}
		o := uint32(w.created)
		w.created++
		w.settleLive()
		w.cur[o] = 1
		w.livePos[o] = int32(len(w.live))
		w.live = append(w.live, o)
		w.changed(o)
		for i := range w.crawlers {
			if s := w.crawlers[i].sched; s != nil {
				s.created(o, w.now)
			}
		}
	default:
		if len(w.live) == 0 {
			break
		}
		i := w.rng.IntN(len(w.live))
		o := w.live[i]
		w.staleHolders(o)
		w.settleLive()
		w.dead[o] = true
		w.changed(o)
		last := w.live[len(w.live)-1]
		w.live[i] = last
		w.livePos[last] = int32(i)
		w.live = w.live[:len(w.live)-1]
	}
	w.events++
	w.scheduleWeb()
}

// changed notes when object o last changed, for the schedules' estimates
// (their polls see Last-Modified).
func (w *world) changed(o uint32) {
	if w.lastMod != nil {
		w.lastMod[o] = w.now
	}
}

func (w *world) scheduleWeb() {
	rate := w.m.maxObjectRate()*float64(len(w.live)) + (w.m.CreatePerDay+w.m.DeletePerDay)/Day
	if rate <= 0 {
		w.nextWeb = math.Inf(1)
		return
	}
	w.nextWeb = w.now + w.rng.ExpFloat64()/rate
}

// acquire gives crawler c record (o, v) first seen at lpd, resolving it
// against what c holds: a newer version replaces an older one, a deletion
// is final. It reports whether c's cache changed (a web-event new to c).
func (w *world) acquire(c *crawler, o uint32, v uint16, lpd float64, src uint16) bool {
	idx := int(o)*w.n + c.id
	old := w.versions[idx]
	if old == verDeleted || (v != verDeleted && old != verNone && old >= v) {
		return false
	}
	w.flush(c)
	if w.src != nil {
		w.src[idx] = src
		// Only a lie replaces a version the web still has (a forged one,
		// or a deletion of a live object): take the fresh entry back.
		if word, bit := &w.fresh[int(o)*w.words+c.id/64], uint64(1)<<(c.id%64); *word&bit != 0 {
			c.fresh--
			*word &^= bit
		}
	}
	switch {
	case v == verDeleted:
		if old != verNone {
			c.entries-- // the object was deleted on the web, so the entry was stale
		}
	default:
		if old == verNone {
			c.entries++
		}
		if v == w.cur[o] && !w.dead[o] {
			c.fresh++
			w.fresh[int(o)*w.words+c.id/64] |= 1 << (c.id % 64)
		}
	}
	w.versions[idx] = v
	w.logRecord(c, record{obj: o, ver: v, src: src, lpd: lpd})
	return true
}

// logRecord adds a record c took to its share log, if c shares.
func (w *world) logRecord(c *crawler, r record) {
	if !c.sharing {
		return
	}
	c.log = append(c.log, r)
	c.logged++
	if len(c.log) >= c.trimAt {
		w.trimLog(c)
	}
}

// trimLog drops the part of c's share log that no peer will ask for again:
// entries before the oldest position a peer has merged up to. A peer that
// has never merged from c starts from its first visit (algorithm 5.3), so
// it needs nothing older.
func (w *world) trimLog(c *crawler) {
	keep := c.logBase + int64(len(c.log))
	for i := range w.crawlers {
		q := &w.crawlers[i]
		if i != c.id && q.lastVisit[c.id] >= 0 && q.lastPos[c.id] < keep {
			keep = q.lastPos[c.id]
		}
	}
	// Merges from c in flight still read their records from c's log: the
	// oldest they have yet to land is their last (they land newest first).
	for _, qi := range c.incoming {
		q := &w.crawlers[qi]
		if q.recNext < len(q.recs) {
			keep = min(keep, q.recBase+int64(q.recs[len(q.recs)-1]))
		}
	}
	drop := int(keep - c.logBase)
	if drop > 0 {
		c.log = c.log[:copy(c.log, c.log[drop:])]
		c.logBase = keep
	}
	c.trimAt = max(4096, 2*len(c.log))
}

// run advances the simulation to the end of the model's duration.
func (w *world) run(ctx context.Context, progress func(float64)) error {
	for i := range w.crawlers {
		w.startOp(&w.crawlers[i])
	}
	w.jobs.init()
	w.scheduleWeb()
	end := w.m.Duration
	nextSample := 0.0
	for {
		jt := w.jobs.key[w.jobs.top()]
		t := min(w.nextWeb, jt, nextSample)
		if t >= end {
			break
		}
		w.now = t
		switch {
		case t == nextSample:
			w.sample()
			nextSample += w.m.SampleEvery
			if progress != nil {
				progress(t / end)
			}
			if err := ctx.Err(); err != nil {
				return err
			}
		case t == w.nextWeb:
			w.webEvent()
		default:
			w.phaseDone(&w.crawlers[w.jobs.top()])
		}
		if w.err != nil {
			return w.err
		}
	}
	w.now = end
	w.sample()
	for i := range w.crawlers {
		w.flush(&w.crawlers[i])
	}
	if progress != nil {
		progress(1)
	}
	return nil
}

// sample records every group's mean instantaneous freshness and coverage.
func (w *world) sample() {
	sum := make([]float64, len(w.groups))
	cov := make([]float64, len(w.groups))
	cnt := make([]float64, len(w.groups))
	live := float64(max(1, len(w.live)))
	for i := range w.crawlers {
		c := &w.crawlers[i]
		if c.entries > 0 {
			sum[c.group] += float64(c.fresh) / float64(c.entries)
		}
		cov[c.group] += float64(c.fresh) / live
		cnt[c.group]++
	}
	w.times = append(w.times, w.now)
	for g := range w.groups {
		w.series[g] = append(w.series[g], sum[g]/cnt[g])
		w.cover[g] = append(w.cover[g], cov[g]/cnt[g])
	}
}

func (w *world) result() *Result {
	r := &Result{Times: w.times, Series: map[string][]float64{}, Cover: map[string][]float64{}, WebEvents: w.events}
	for g, name := range w.groups {
		r.Series[name] = w.series[g]
		r.Cover[name] = w.cover[g]
	}
	live := float64(max(1, len(w.live)))
	d := w.m.Duration
	for i := range w.crawlers {
		c := &w.crawlers[i]
		cr := CrawlerResult{
			Group:       w.groups[c.group],
			Controller:  c.spec,
			Sharing:     c.sharing,
			Freshness:   c.areaCache / d,
			Coverage:    c.areaCover / d,
			CoverageEnd: float64(c.fresh) / live,
			Polls:       c.polls,
			Merges:      c.merges,
			PollEvents:  c.pollEvents,
			MergeEvents: c.mergeEvents,
			Records:     c.records,
			Served:      c.served,
			Bytes:       c.bytes,
			Samples:     c.samples,
		}
		if c.sw > 0 {
			cr.Measured, cr.EffectiveSamples = c.swHit/c.sw, c.sw*c.sw/c.sw2
		}
		if c.entries > 0 {
			cr.FreshnessEnd = float64(c.fresh) / float64(c.entries)
		}
		if c.busy > 0 {
			cr.MeanRho = c.rhoTime / c.busy
			cr.LowShare = c.lowTime / c.busy
		}
		w.trustResult(c, &cr)
		r.Ops += c.polls + c.merges
		r.Moved += c.records
		r.Crawlers = append(r.Crawlers, cr)
	}
	slots := int64(len(w.cur))
	r.MemBytes = slots*(2+1+4+4) + int64(len(w.versions)+len(w.src))*2 + int64(len(w.fresh))*8
	for i := range w.crawlers {
		r.MemBytes += int64(cap(w.crawlers[i].log))*16 + int64(w.n)*16
	}
	return r
}
