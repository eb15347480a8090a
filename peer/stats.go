package peer

import (
	"context"
	"sync"
	"sync/atomic"
	"time"

	"github.com/cocrawl/cocrawl/crawl"
	"github.com/cocrawl/cocrawl/internal/netguard"
	"github.com/cocrawl/cocrawl/protocol"
)

// stats counts what the loop did; /api/status and /metrics both read it.
type stats struct {
	idle atomic.Int64 // slot turns with nothing due on either side

	mu sync.Mutex
	// ops[op][drawn]: operations run, by what ran and what the slot drew
	// (a slot whose drawn side had nothing due goes to the other side).
	ops     map[string]map[string]int64
	events  map[string]*[3]int64 // by source: created, updated, deleted
	bytes   map[string]int64
	seconds map[string]float64
	errs    map[string]map[string]int64 // by op, then kind
}

func newStats() *stats {
	s := &stats{
		ops:     map[string]map[string]int64{"poll": {}, "merge": {}},
		events:  map[string]*[3]int64{"poll": {}, "merge": {}},
		bytes:   map[string]int64{},
		seconds: map[string]float64{},
		errs:    map[string]map[string]int64{"poll": {}, "merge": {}},
	}
	return s
}

func (s *stats) poll(drawn string, r crawl.PollResult) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.ops["poll"][drawn]++
	s.bytes["poll"] += r.Bytes
	s.seconds["poll"] += r.Cost.Seconds()
	if r.Changed {
		s.events["poll"][r.Event.Stat.Index()]++
	}
	if r.ErrKind != "" {
		s.errs["poll"][r.ErrKind]++
	}
}

func (s *stats) merge(drawn string, rep *protocol.MergeReport, err error, took time.Duration) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.ops["merge"][drawn]++
	s.seconds["merge"] += took.Seconds()
	if rep != nil {
		s.bytes["merge"] += rep.WireBytes
		for i, n := range rep.Result.ByStat {
			s.events["merge"][i] += int64(n)
		}
		for _, d := range rep.Days {
			if d.Err != nil {
				s.errs["merge"]["day"]++
			}
		}
		if rep.BadRecords > 0 {
			s.errs["merge"]["bad_record"] += rep.BadRecords
		}
	}
	if err != nil {
		s.errs["merge"][mergeErrorKind(err)]++
	}
}

// badProbeReport counts a peer's robots.shr probe report that did not
// parse: the merge went on without it.
func (s *stats) badProbeReport() {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.errs["merge"]["bad_probe_report"]++
}

// mergeErrorKind names the failure of a whole merge for metrics.
func mergeErrorKind(err error) string {
	switch {
	case netguard.IsTimeout(err):
		return "timeout"
	case isRefused(err):
		return "refused"
	}
	return "failed"
}

// counters is a copy of the totals.
type counters struct {
	Polls, Merges           int64
	PollEvents, MergeEvents int64
	ByKind                  map[string]map[string]int64 // source -> kind -> n
	Drawn                   map[string]map[string]int64 // op -> drawn -> n
	Bytes                   map[string]int64
	Seconds                 map[string]float64
	Errors                  map[string]map[string]int64
	Idle                    int64
	Create, Update, Delete  int64
}

var kindNames = [3]string{"create", "update", "delete"}

func (s *stats) snapshot() counters {
	s.mu.Lock()
	defer s.mu.Unlock()
	c := counters{ByKind: map[string]map[string]int64{}, Drawn: map[string]map[string]int64{},
		Bytes: map[string]int64{}, Seconds: map[string]float64{}, Errors: map[string]map[string]int64{}, Idle: s.idle.Load()}
	for op, m := range s.ops {
		c.Drawn[op] = map[string]int64{"poll": m["poll"], "merge": m["merge"]}
	}
	c.Polls = c.Drawn["poll"]["poll"] + c.Drawn["poll"]["merge"]
	c.Merges = c.Drawn["merge"]["poll"] + c.Drawn["merge"]["merge"]
	for src, ev := range s.events {
		k := map[string]int64{}
		var sum int64
		for i, n := range ev {
			k[kindNames[i]] = n
			sum += n
		}
		c.ByKind[src] = k
		if src == "poll" {
			c.PollEvents = sum
		} else {
			c.MergeEvents = sum
		}
		c.Create += ev[0]
		c.Update += ev[1]
		c.Delete += ev[2]
	}
	for k, v := range s.bytes {
		c.Bytes[k] = v
	}
	for k, v := range s.seconds {
		c.Seconds[k] = v
	}
	for op, m := range s.errs {
		c.Errors[op] = map[string]int64{}
		for k, v := range m {
			c.Errors[op][k] = v
		}
	}
	return c
}

// Sample is one point of the status history the dashboard draws.
type Sample struct {
	T           int64   `json:"t"` // unix milliseconds
	Rho         float64 `json:"rho"`
	Polls       int64   `json:"polls"`
	Merges      int64   `json:"merges"`
	PollEvents  int64   `json:"poll_events"`
	MergeEvents int64   `json:"merge_events"`
	Create      int64   `json:"create"`
	Update      int64   `json:"update"`
	Delete      int64   `json:"delete"`
}

// historyLen is how many samples are kept: an hour at one every 2 s.
const (
	historyLen  = 1800
	sampleEvery = 2 * time.Second
)

func (p *Peer) sample(now time.Time) {
	c := p.stats.snapshot()
	s := Sample{T: now.UnixMilli(), Rho: p.Rho(), Polls: c.Polls, Merges: c.Merges,
		PollEvents: c.PollEvents, MergeEvents: c.MergeEvents, Create: c.Create, Update: c.Update, Delete: c.Delete}
	p.histMu.Lock()
	defer p.histMu.Unlock()
	if len(p.history) == historyLen {
		copy(p.history, p.history[1:])
		p.history = p.history[:historyLen-1]
	}
	p.history = append(p.history, s)
}

func (p *Peer) sampler(ctx context.Context) {
	p.sample(time.Now())
	t := time.NewTicker(sampleEvery)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			p.sample(time.Now())
			return
		case now := <-t.C:
			p.sample(now)
			p.expireChecks(now)
			p.warnIfDeceived(now)
			p.refreshSplit(now)
		}
	}
}
