package sim

import (
	"math"
	"slices"
)

// Liars and spot-checks: the simulated side of spec section 12. A liar
// (CrawlerSpec.Lies) adds false records to its share log; a checked
// crawler (CrawlerSpec.Checked) applies peer/trust's policy to what it
// merges. Judging needs no Last-Modified here: the simulator knows the
// web, and judges a claim the way Judge in package peer does with one.

// check is a poll that comes before the crawler's other operations: a
// spot-check of a record merged from crawler from, or (from < 0) a re-poll
// of a state a distrusted source gave.
type check struct {
	obj  uint32
	ver  uint16
	from int32
}

// sourceTrust is what a checked crawler's checks found of one source.
type sourceTrust struct {
	confirmed, refuted, inconclusive    int64
	merges, checkedMerges               int64   // merges from the source completed, and checked
	distrustAt                          float64 // simulated second, -1: trusted
	mergesAtDistrust, checkedAtDistrust int64
}

type checkCounts struct {
	polls, repolls                           int64
	confirmed, refuted, inconclusive, blamed int64
}

// startCheck starts the queue's next poll, if any: checks come before
// polls and merges, as a live peer's Recheck does, and are paid from the
// same time.
func (w *world) startCheck(c *crawler) bool {
	c.checking = false
	if len(c.queue) == 0 {
		return false
	}
	c.probe = c.queue[0]
	c.queue = c.queue[1:]
	if len(c.queue) == 0 {
		c.queue = nil // let a long re-poll queue's memory go
	}
	c.checking = true
	c.merging = false
	c.obj = c.probe.obj
	c.phase = w.objectBytes(c.obj)
	c.rate = w.rateOf(c)
	w.jobs.set(c.id, w.now+c.phase/c.rate)
	return true
}

// offer puts a record that changed c's cache in a merge through the
// merge's reservoir sample.
func (w *world) offer(c *crawler, ck check) {
	if !c.checked {
		return
	}
	c.sampled++
	if len(c.sample) < w.policy.Checks {
		c.sample = append(c.sample, ck)
	} else if j := c.rng.IntN(c.sampled); j < w.policy.Checks {
		c.sample[j] = ck
	}
}

// mergeChecked ends a merge from p: the sample joins the queue, as much of
// it as the policy says (trust.Policy.Sample).
func (w *world) mergeChecked(c, p *crawler) {
	if !c.checked {
		return
	}
	c.trust[p.id].merges++
	if k := w.policy.Sample(w.vouched(c, p.id), c.checks.polls, c.polls); k > 0 && len(c.sample) > 0 {
		c.queue = append(c.queue, c.sample[:min(k, len(c.sample))]...)
		c.trust[p.id].checkedMerges++
	}
	c.sample, c.sampled = c.sample[:0], 0
}

// judge gives the verdict of the spot-check just polled, from what the web
// holds now: a version that never existed and a deletion of a live object
// are refuted; a claim the object has since moved past is inconclusive
// (package peer: a Last-Modified later than the claim).
func (w *world) judge(c *crawler) {
	ck := c.probe
	if ck.from < 0 {
		c.checks.repolls++
		return
	}
	c.checks.polls++
	o := int(ck.obj)
	t := &c.trust[ck.from]
	switch {
	case ck.ver == verForged || (ck.ver == verDeleted && !w.dead[o]):
		t.refuted++
		c.checks.refuted++
		if w.crawlers[ck.from].lies == 0 {
			c.checks.blamed++
		}
	case ck.ver == verDeleted || (!w.dead[o] && w.cur[o] == ck.ver):
		t.confirmed++
		c.checks.confirmed++
	default:
		t.inconclusive++
		c.checks.inconclusive++
	}
	if t.distrustAt < 0 && w.policy.Distrusts(t.confirmed, t.refuted) {
		w.distrust(c, int(ck.from))
	}
}

// distrust stops c merging from p and queues a re-poll of every state p
// gave c that c still holds: the poll then replaces it.
func (w *world) distrust(c *crawler, p int) {
	t := &c.trust[p]
	t.distrustAt = w.now
	t.mergesAtDistrust, t.checkedAtDistrust = t.merges, t.checkedMerges
	if i := slices.Index(c.peers, int32(p)); i >= 0 {
		c.peers = slices.Delete(c.peers, i, i+1)
		if c.nextPeer > i {
			c.nextPeer--
		}
		if c.nextPeer >= len(c.peers) {
			c.nextPeer = 0
		}
	}
	mark := uint16(p + 1)
	for o := range w.created {
		if w.src[o*w.n+c.id] == mark {
			c.queue = append(c.queue, check{obj: uint32(o), from: -1})
		}
	}
}

// vouched says whether c publishes records it merged from p onward.
func (w *world) vouched(c *crawler, p int) bool {
	t := &c.trust[p]
	return t.distrustAt < 0 && w.policy.Vouches(t.confirmed, t.refuted)
}

// withholds says whether p leaves a record out of what it serves: p
// checks, and the record came from a source p does not vouch for.
func (w *world) withholds(p *crawler, src uint16) bool {
	return p.checked && src != 0 && !w.vouched(p, int(src)-1)
}

// overwrite gives a checking crawler what its own poll saw, over a state
// it merged, whatever their versions: a merged record never outranks the
// crawler's own later poll. It reports whether the cache changed.
func (w *world) overwrite(c *crawler, o uint32, v uint16) bool {
	idx := int(o)*w.n + c.id
	w.src[idx] = 0
	old := w.versions[idx]
	if old == v {
		return false
	}
	w.flush(c)
	word, bit := &w.fresh[int(o)*w.words+c.id/64], uint64(1)<<(c.id%64)
	if *word&bit != 0 {
		c.fresh--
		*word &^= bit
	}
	if old != verNone && old != verDeleted {
		c.entries--
	}
	if v != verDeleted {
		c.entries++
		if v == w.cur[o] && !w.dead[o] {
			c.fresh++
			*word |= bit
		}
	}
	w.versions[idx] = v
	w.logRecord(c, record{obj: o, ver: v, lpd: w.now})
	return true
}

// lie adds the false records a liar makes up during an operation of d
// seconds: a Poisson number at its rate, each a forged update or a false
// deletion of a random live object, taken into its own cache (and so its
// share log) like any record.
func (w *world) lie(c *crawler, d float64) {
	for n := poisson(c.rng.Float64, c.lies*d); n > 0 && len(w.live) > 0; n-- {
		o := w.live[c.rng.IntN(len(w.live))]
		v := verForged
		if c.rng.IntN(2) == 0 {
			v = verDeleted
		}
		if w.acquire(c, o, v, w.now, 0) {
			c.lied++
		}
	}
}

// poisson draws a Poisson variate of the given mean by counting unit-rate
// arrivals (the means here are a few at most).
func poisson(uniform func() float64, mean float64) int {
	n := 0
	for t := -math.Log(1 - uniform()); t < mean; t -= math.Log(1 - uniform()) {
		n++
	}
	return n
}

// trustResult fills a crawler's result with its lies, its checks and what
// it holds false at the end.
func (w *world) trustResult(c *crawler, r *CrawlerResult) {
	r.Lies, r.Logged = c.lied, c.logged
	r.CheckPolls, r.Repolls = c.checks.polls, c.checks.repolls
	r.Confirmed, r.Refuted, r.Inconclusive, r.RefutedHonest = c.checks.confirmed, c.checks.refuted, c.checks.inconclusive, c.checks.blamed
	if w.src != nil {
		held := 0
		for o := range w.created {
			v := w.versions[o*w.n+c.id]
			if v == verForged || (v == verDeleted && !w.dead[o]) {
				held++
			}
		}
		r.HeldFalse = float64(held) / float64(max(1, len(w.live)))
	}
	if c.checked {
		r.Sources = make([]SourceChecks, w.n)
		for p, t := range c.trust {
			r.Sources[p] = SourceChecks{DistrustAt: t.distrustAt, Merges: t.mergesAtDistrust, CheckedMerges: t.checkedAtDistrust,
				Confirmed: t.confirmed, Refuted: t.refuted, Inconclusive: t.inconclusive}
			if t.distrustAt < 0 {
				r.Sources[p].Merges, r.Sources[p].CheckedMerges = t.merges, t.checkedMerges
			}
		}
	}
}
