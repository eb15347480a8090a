package publish

import (
	"slices"

	"github.com/cocrawl/cocrawl/webevents"
)

// maxConfirmsPerTick bounds the confirmations of one tick, so a clock jump
// or a huge site cannot stall the watcher.
const maxConfirmsPerTick = 1000

// confirm checks the next n live files in URL order; each unchanged one is
// recorded again with a new lpd: a confirmation (spec section 12.1).
func (p *Publisher) confirm(n int) {
	var b batch
	var confirms []webevents.Event
	var retry []string
	for range n {
		p.mu.Lock()
		if p.next >= len(p.order) {
			// A new pass over the files, in URL order.
			p.order = p.order[:0]
			for u := range p.files {
				p.order = append(p.order, u)
			}
			slices.Sort(p.order)
			p.next = 0
		}
		if len(p.order) == 0 {
			p.mu.Unlock()
			break
		}
		u := p.order[p.next]
		p.next++
		s, ok := p.files[u]
		p.mu.Unlock()
		if !ok {
			continue // gone since the pass began
		}
		rel := p.relOf(u)
		before := len(b.events)
		p.look(rel, &b)
		if len(b.events) > before {
			retry = append(retry, rel) // it had changed: that is the news
			continue
		}
		now := p.cfg.Now().Unix()
		confirms = append(confirms, webevents.Event{URL: u, Size: s.size, LMD: s.lmd, LPD: max(now, s.lmd), CID: p.cfg.CID, Stat: s.stat, Digest: s.digest})
	}
	p.commit(&b, retry, true)
	if len(confirms) == 0 {
		return
	}
	err := p.st.Record(confirms)
	p.mu.Lock()
	defer p.mu.Unlock()
	if err != nil {
		p.stats.RecordErrors++
		return
	}
	p.stats.Confirmed += int64(len(confirms))
}
