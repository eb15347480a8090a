package rho

import "time"

// tally sums operations and what they gained.
type tally struct {
	polls, pollEvents   int64
	merges, mergeEvents int64
	pollCost, mergeCost time.Duration
}

func (t *tally) add(o Outcome) {
	if o.Merge {
		t.merges++
		t.mergeEvents += int64(o.Events)
		t.mergeCost += o.Cost
		return
	}
	t.polls++
	t.pollEvents += int64(o.Events)
	t.pollCost += o.Cost
}

func (t tally) minus(u tally) tally {
	return tally{
		polls: t.polls - u.polls, pollEvents: t.pollEvents - u.pollEvents,
		merges: t.merges - u.merges, mergeEvents: t.mergeEvents - u.mergeEvents,
		pollCost: t.pollCost - u.pollCost, mergeCost: t.mergeCost - u.mergeCost,
	}
}

// history answers "what happened over the most recent fraction f of all
// operations" in bounded memory. It keeps the running totals at every
// step-th operation; when maxMarks are held it drops every other one and
// doubles step. The start of a window is therefore found to within step
// operations, at most 1/(maxMarks/2) of the history: 0.4% with 512 marks.
// The thesis's window (30% of history) grows without bound, so an exact
// answer would need memory linear in a peer's age.
type history struct {
	n     int64
	total tally
	step  int64
	marks []tally // marks[i]: totals after (i+1)*step operations
}

const maxMarks = 512

func (h *history) add(o Outcome) {
	if h.step == 0 {
		h.step = 1
	}
	h.total.add(o)
	h.n++
	if h.n%h.step != 0 {
		return
	}
	h.marks = append(h.marks, h.total)
	if len(h.marks) == maxMarks {
		kept := h.marks[:0]
		for i := 1; i < len(h.marks); i += 2 {
			kept = append(kept, h.marks[i]) // totals after 2*(j+1)*step
		}
		h.marks = kept
		h.step *= 2
	}
}

// recent returns the totals over the last fraction f of the operations.
func (h *history) recent(f float64) tally {
	start := h.n - int64(f*float64(h.n)+0.5)
	if start <= 0 {
		return h.total
	}
	// The mark at or just before start: marks[j] is after (j+1)*step ops.
	j := start/h.step - 1
	if j < 0 {
		return h.total
	}
	j = min(j, int64(len(h.marks))-1)
	return h.total.minus(h.marks[j])
}
