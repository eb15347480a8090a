package sim

import (
	"math"
	"math/rand/v2"
	"slices"
	"time"

	"github.com/cocrawl/cocrawl/peer/rho"
)

// chunkRecords is how many records a merge delivers at once: records travel
// newest first and land chunk by chunk, so a merge cut short by the end of
// the run has delivered the most recent part.
const chunkRecords = 256

// crawler is one simulated crawler running algorithm 5.1: single-threaded,
// always busy with one poll or one merge.
type crawler struct {
	id      int
	name    string // as a controller's Outcome.From names it
	ctrl    rho.Controller
	spec    string
	sharing bool
	group   int
	rng     *rand.Rand

	// visit order: a random affine permutation of the object slots,
	// slot = (permA*i + permB) mod permMod, skipping slots not created yet
	// (an object enters every visit order when it is created) and slots
	// known to be deleted (removed from the visitset, section 5.3).
	permA, permB, permMod, cursor uint64
	peers                         []int32
	nextPeer                      int

	// the operation in flight
	merging  bool
	obj      uint32     // the object polled
	peer     int        // the peer merged from
	report   rho.Report // what the peer's controller published when the merge began
	opStart  float64
	opRho    float64
	opEvents int
	recs     []uint32 // records of the merge new to this crawler, newest first, as offsets from recBase in the peer's log
	recBase  int64    // absolute log position recs count from
	recNext  int      // recs[:recNext] have landed
	moving   int      // records of the merge still in transfer, new or not
	phase    float64  // bytes left in the current phase
	rate     float64  // bytes per second now
	since    float64  // when phase was last brought up to date
	incoming []int32  // crawlers merging from this one now

	// merging state, per peer: when this crawler last merged from it and
	// how far into the peer's share log it has read
	lastVisit []float64 // -1: never
	lastPos   []int64

	// the share log: what this crawler polled or merged, in order
	log     []record
	logBase int64 // absolute position of log[0]
	trimAt  int

	// freshness
	fresh, entries   int
	tLast, gLast     float64
	areaCache        float64
	areaCover        float64
	polls, merges    int64
	pollEvents       int64
	mergeEvents      int64
	records, served  int64
	bytes            float64
	busy             float64
	rhoTime, lowTime float64
	logged           int64

	// liars and spot-checks (liars.go)
	lies     float64       // false records per second it publishes
	lied     int64         // false records it published
	checked  bool          // spot-checks what it merges
	trust    []sourceTrust // per crawler, what its checks found
	queue    []check       // polls that come before any other operation
	checking bool          // the poll in flight is the queue's probe
	probe    check
	sample   []check // the reservoir of the merge in flight
	sampled  int
	checks   checkCounts

	sched *pollSchedule // nil: the cycle (RevisitCycle)

	// the merge cadence (CrawlerSpec.Cadence): per crawler, the wait
	// between merges from it and when the next is due; firstMerge says
	// the merge in flight is the first from its peer.
	cadence             *Cadence
	mergeWait, mergeDue []float64
	firstMerge          bool

	// self-measurement (Setup.SampleShare): the poll in flight is a
	// sample; the samples with a verdict, and those that found the state
	// held current. Drawn with their own generator, so a run without
	// samples is the same as before they existed.
	sampleRng      *rand.Rand
	sampling       bool
	samples        int64
	sw, sw2, swHit float64 // weights of the verdicts, squared, of those current
}

// nextObject is the next slot of c's visit order that is created and not
// known to be deleted. ok is false only if no slot qualifies.
func (w *world) nextObject(c *crawler) (uint32, bool) {
	if c.sched != nil {
		return c.sched.pop()
	}
	for range c.permMod {
		i := c.cursor
		c.cursor++
		if c.cursor == c.permMod {
			c.cursor = 0
		}
		o := (c.permA*i + c.permB) % c.permMod
		if o >= uint64(w.created) {
			continue
		}
		// A deletion is final (section 5.3), unless a checking crawler
		// only merged it: its own poll is what it believes.
		if idx := int(o)*w.n + c.id; w.versions[idx] == verDeleted && (!c.checked || w.src[idx] == 0) {
			continue
		}
		return uint32(o), true
	}
	return 0, false
}

// startOp draws c's next operation (algorithm 5.1, lines 2-3) and starts it.
func (w *world) startOp(c *crawler) {
	c.opStart = w.now
	c.opRho = c.ctrl.Rho()
	c.opEvents = 0
	c.since = w.now
	if w.startCheck(c) {
		return
	}
	poll := len(c.peers) == 0 || c.rng.Float64() < c.opRho
	var p *crawler
	if !poll {
		if p = w.nextPeer(c); p == nil {
			poll = true // no merge is due: the slot polls
		}
	}
	if poll {
		c.sampling = w.sampleShare > 0 && w.created > 0 && c.sampleRng.Float64() < w.sampleShare
		var o uint32
		ok := true
		if c.sampling {
			o = uint32(c.sampleRng.IntN(w.created)) // any object it could know, whatever it holds
		} else {
			o, ok = w.nextObject(c)
		}
		c.merging = false
		c.obj = o
		c.phase = w.objectBytes(o)
		if !ok { // nothing left to poll: a request for nothing
			c.obj = math.MaxUint32
			c.phase = w.m.MergeOverhead
		}
		c.rate = w.rateOf(c)
		w.jobs.set(c.id, w.now+c.phase/c.rate)
		return
	}
	c.merging = true
	c.firstMerge = c.lastVisit[p.id] < 0
	c.peer = p.id
	// The peer's robots.shr, fetched first, carries its controller's report.
	c.report = rho.Report{}
	if r, ok := p.ctrl.(rho.Reporter); ok {
		c.report, _ = r.Report()
	}
	c.recs, c.recNext, c.moving = c.recs[:0], 0, 0
	c.sample, c.sampled = c.sample[:0], 0
	if p.sharing {
		w.collect(c, p)
	}
	c.phase = w.m.MergeOverhead + float64(min(c.moving, chunkRecords))*w.m.RecordBytes
	p.incoming = append(p.incoming, int32(c.id))
	c.rate = w.rateOf(c)
	w.jobs.set(c.id, w.now+c.phase/c.rate)
	w.linkChanged(p)
}

// nextPeer is the peer c merges from next: the next in turn, or with a
// cadence the next in turn whose wait is over (nil: none is).
func (w *world) nextPeer(c *crawler) *crawler {
	for range c.peers {
		p := &w.crawlers[c.peers[c.nextPeer]]
		c.nextPeer = (c.nextPeer + 1) % len(c.peers)
		if c.cadence == nil || c.mergeDue[p.id] <= w.now {
			return p
		}
	}
	return nil
}

// mergeDone sets when c next merges from p, with a cadence: the wait
// grows or shrinks by what the merge brought (rho.MergeStep), within the
// cadence's bounds and the share of a budget merges may take. A first
// merge from p brings nothing by design (collect): it keeps the wait.
func (w *world) mergeDone(c, p *crawler) {
	cd := c.cadence
	if cd == nil {
		return
	}
	least := cd.Min
	if cd.Budget {
		pollsPerSecond := w.m.LinkBps / 8 / w.m.ObjectBytes
		least = max(least, float64(len(c.peers))/(rho.MergeBudgetShare*pollsPerSecond))
	}
	wait := max(c.mergeWait[p.id], least)
	if !c.firstMerge {
		wait *= rho.MergeStep(int64(c.opEvents))
	}
	wait = min(max(wait, least), max(cd.Max, least))
	c.mergeWait[p.id], c.mergeDue[p.id] = wait, w.now+wait
}

// collect gathers the records c merges from p (algorithm 5.3): those of
// p's cache seen on the web at or after c's last visit, newest first. A
// first visit only records the time, as in the thesis. p's share log holds
// every record p took, in order; an entry p has since replaced is skipped.
// The sharing crawler does no filtering for c (section 6.1), so records c
// already holds travel too.
//
// Algorithm 5.3 compares the record's last-modified date with the last
// visit. Read literally, a merge would carry only web-events that happened
// since the last visit, which a poll rarely sees (it finds an update up to a
// whole cycle after it happened), and merging could never beat polling,
// against every result of chapter 6. We compare the date the record's
// web-event was seen by the crawler that polled it (lpd in our .dat
// records, kept as records are merged on): see sim/README.md.
func (w *world) collect(c, p *crawler) {
	end := p.logBase + int64(len(p.log))
	last := c.lastVisit[p.id]
	from := c.lastPos[p.id]
	c.lastVisit[p.id] = w.now
	c.lastPos[p.id] = end
	if last < 0 {
		return
	}
	// Newest first: the log is in the order p took records, and a record
	// is seen before it is taken, so walking it backwards is close to
	// newest-seen first without a sort. A record c already holds (or holds
	// newer) at the start of the merge will change nothing when it lands,
	// as c's versions only grow: it is counted for the transfer's cost and
	// not kept, which halves the simulator's work on echoed records.
	start := max(from, p.logBase)
	log := p.log[start-p.logBase:]
	c.recBase = start
	for i := len(log) - 1; i >= 0; i-- {
		r := log[i]
		if r.lpd < last {
			continue
		}
		row := int(r.obj) * w.n
		if w.versions[row+p.id] != r.ver {
			continue // p has replaced it since
		}
		c.moving++
		if w.withholds(p, r.src) {
			continue // a comment line of the same length travels instead
		}
		if have := w.versions[row+c.id]; have == verDeleted || (r.ver != verDeleted && have != verNone && have >= r.ver) {
			continue
		}
		// A position, not a copy: a quarter of the memory, and p keeps
		// the record in its log until it lands (trimLog).
		c.recs = append(c.recs, uint32(i))
	}
	p.served += int64(c.moving)
}

// rateOf is the speed of c's transfer: its link's speed, shared with the
// merges served over the same link, times the share of the network.
func (w *world) rateOf(c *crawler) float64 {
	if !w.m.Contention {
		return w.m.LinkBps / 8
	}
	load := 1 + len(c.incoming)
	if c.merging {
		load = max(load, 1+len(w.crawlers[c.peer].incoming))
	}
	return w.m.LinkBps / 8 * w.gnet / float64(load)
}

// linkChanged reschedules the transfers on p's link after a merge from p
// started or ended: p's own operation and every merge p serves.
func (w *world) linkChanged(p *crawler) {
	if !w.m.Contention {
		return
	}
	w.reschedule(p)
	for _, q := range p.incoming {
		w.reschedule(&w.crawlers[q])
	}
}

func (w *world) reschedule(c *crawler) {
	rate := w.rateOf(c)
	if rate == c.rate {
		return
	}
	c.phase = max(0, c.phase-c.rate*(w.now-c.since))
	c.since = w.now
	c.rate = rate
	w.jobs.set(c.id, w.now+c.phase/rate)
}

// phaseDone handles the end of c's current transfer phase.
func (w *world) phaseDone(c *crawler) {
	if !c.merging {
		w.pollDone(c)
		w.finishOp(c)
		return
	}
	// This chunk of the transfer carries its share of the records new to
	// c (they are spread through the stream; the last chunk lands the rest).
	k := min(c.moving, chunkRecords)
	left := len(c.recs) - c.recNext
	u := left
	if k < c.moving {
		u = left * k / c.moving
	}
	p := &w.crawlers[c.peer]
	base := c.recBase - p.logBase
	for _, off := range c.recs[c.recNext : c.recNext+u] {
		r := p.log[base+int64(off)]
		if w.acquire(c, r.obj, r.ver, r.lpd, uint16(p.id+1)) {
			c.opEvents++
			w.offer(c, check{obj: r.obj, ver: r.ver, from: int32(p.id)})
		}
	}
	c.recNext += u
	c.moving -= k
	c.records += int64(k)
	c.bytes += float64(k) * w.m.RecordBytes
	if c.moving > 0 {
		c.phase = float64(min(c.moving, chunkRecords)) * w.m.RecordBytes
		c.since = w.now
		w.jobs.set(c.id, w.now+c.phase/c.rate)
		return
	}
	c.bytes += w.m.MergeOverhead
	if i := slices.Index(p.incoming, int32(c.id)); i >= 0 {
		p.incoming = slices.Delete(p.incoming, i, i+1)
	}
	c.merges++
	c.mergeEvents += int64(c.opEvents)
	w.mergeDone(c, p)
	w.mergeChecked(c, p)
	w.linkChanged(p)
	w.finishOp(c)
}

// pollDone applies what a poll saw when its response arrived (algorithm 5.2).
// A checking crawler's own poll replaces any state it merged (the
// own-poll rule, spec section 6); a spot-check is judged first.
func (w *world) pollDone(c *crawler) {
	c.polls++
	o := c.obj
	if c.checking {
		w.judge(c)
	}
	if int(o) >= w.created {
		return
	}
	c.bytes += w.objectBytes(o)
	idx := int(o)*w.n + c.id
	seen := w.cur[o]
	if c.sampling {
		w.judgeSample(c, idx, seen, w.dead[o])
	}
	if c.sched != nil {
		c.sched.polled(o, w.now, w.versions[idx] != seen, w.dead[o], w.lastMod[o], c.polls)
	}
	if w.dead[o] {
		if w.versions[idx] == verNone {
			w.versions[idx] = verDeleted // never seen: not an event, but not visited again
			return
		}
		seen = verDeleted
	}
	if c.checked && w.src[idx] != 0 {
		if w.overwrite(c, o, seen) {
			c.opEvents = 1
		}
	} else if w.acquire(c, o, seen, w.now, 0) {
		c.opEvents = 1
	}
	c.pollEvents += int64(c.opEvents)
}

// finishOp reports the operation to c's controller and starts the next.
func (w *world) finishOp(c *crawler) {
	d := w.now - c.opStart
	o := rho.Outcome{Merge: c.merging, Events: c.opEvents, Cost: time.Duration(d * 1e9), End: simClock(w.now)}
	if c.merging {
		o.From, o.Report = w.crawlers[c.peer].name, c.report
	}
	c.ctrl.Observe(o)
	if c.lies > 0 {
		w.lie(c, d)
	}
	c.busy += d
	c.rhoTime += c.opRho * d
	if c.opRho < 0.5 {
		c.lowTime += d
	}
	w.startOp(c)
}

// simEpoch is the wall-clock time of simulated second 0, which the crawlers'
// controllers read as their shared clock.
var simEpoch = time.Unix(0, 0).UTC()

func simClock(now float64) time.Time { return simEpoch.Add(time.Duration(now * 1e9)) }

// judgeSample records whether a sampled poll found the state c held
// current, as the live crawler judges (crawl/selfcheck.go): of a live
// object, whether c held its version; a deleted object gives no verdict
// (freshness is a share of the live web).
func (w *world) judgeSample(c *crawler, idx int, current uint16, dead bool) {
	if dead {
		return
	}
	// Weighed by the inverse of the chance a sample was drawn now, the
	// poll rate (crawl/selfcheck.go): a crawler is always busy, so that is
	// rho.
	wt := 1 / max(c.opRho, 1e-3)
	c.samples++
	c.sw += wt
	c.sw2 += wt * wt
	if w.versions[idx] == current {
		c.swHit += wt
	}
}
