package demo

import (
	"context"
	"math/rand/v2"
	"time"

	"github.com/cocrawl/cocrawl/crawl"
	"github.com/cocrawl/cocrawl/internal/testweb"
	"github.com/cocrawl/cocrawl/webevents"
)

// lie makes m a liar: until ctx ends it records rate false events a second
// about live pages in its own store, which it shares like any peer. Half
// are DELETEs of live pages, half UPDATEs to a version that does not
// exist (lmd now), and half of each carry an honest peer's cid.
func lie(ctx context.Context, m *member, w *testweb.Web, honest []string, rate float64, seed uint64) {
	rng := rand.New(rand.NewPCG(seed, 0x11a7))
	t := time.NewTicker(time.Duration(float64(time.Second) / rate))
	defer t.Stop()
	n := 0
	var live []string
	var listed time.Time
	for {
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
		if time.Since(listed) > time.Second { // the list of every live page, once a second
			live, listed = w.LiveURLs(), time.Now()
		}
		if len(live) == 0 {
			continue
		}
		u, err := crawl.Normalize(nil, live[rng.IntN(len(live))])
		if err != nil {
			continue
		}
		now := time.Now().Unix()
		e := webevents.Event{URL: u, Size: 1 + int64(rng.IntN(5000)), LMD: now, LPD: now, CID: m.peer.CID(), Stat: webevents.Update}
		if n%2 == 1 {
			e.Stat = webevents.Delete
		}
		if n%4 >= 2 && len(honest) > 0 {
			e.CID = honest[rng.IntN(len(honest))]
		}
		n++
		_ = m.store.Record([]webevents.Event{e})
	}
}

// LiarFate is what became of one liar: for each cooperating peer, when it
// distrusted the liar (time since start; 0: it did not) and how many
// merges it had made from it by then.
type LiarFate struct {
	Name         string
	DistrustedBy map[string]time.Duration
	MergesBefore map[string]int64
	Refuted      map[string]int64
}

// liarFates reads every cooperating peer's row of every liar.
func (c *community) liarFates() []LiarFate {
	var out []LiarFate
	for _, l := range c.members {
		if l.group != Liar {
			continue
		}
		f := LiarFate{Name: l.name, DistrustedBy: map[string]time.Duration{}, MergesBefore: map[string]int64{}, Refuted: map[string]int64{}}
		for _, m := range c.members {
			if m.group != Coop {
				continue
			}
			for _, r := range m.peer.Peers() {
				if r.PeerID != l.peer.PeerID() {
					continue
				}
				f.MergesBefore[m.name], f.Refuted[m.name] = r.Merges, r.Refuted
				if !r.Distrusted.IsZero() {
					f.DistrustedBy[m.name] = r.Distrusted.Sub(c.started)
				}
			}
		}
		out = append(out, f)
	}
	return out
}
