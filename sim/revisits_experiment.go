package sim

import (
	"fmt"
	"math"

	"github.com/cocrawl/cocrawl/crawl/revisit"
)

// revisitSpread is the revisits experiment's rate spread when the model
// has none: three orders of magnitude, as the live measurement's.
const revisitSpread = 3

// planRevisits: one polling-only crawler per revisit policy on a web whose
// objects change at rates spread over orders of magnitude, against the
// optimum for the poll rate each reached (Cho and Garcia-Molina's
// allocation over the true rates). The model runs four times its duration
// without creations and deletions (so the optimum over the objects is
// exact) and freshness is averaged over the last half, once the estimates
// have settled.
func planRevisits(p *plan) func(*Report) {
	m := &p.opts.Model
	if !p.opts.RatesGiven {
		m.RateSpread = revisitSpread
	}
	m.CreatePerDay, m.DeletePerDay = 0, 0
	m.Duration *= 4
	m.SampleEvery *= 4
	policies := []struct{ name, revisit string }{
		{"uniform (the cycle)", RevisitCycle}, {"adaptive (halve, x1.5)", RevisitAdaptive}, {"optimal (estimated rates)", RevisitOptimal},
	}
	runs := make([]*runSpec, len(policies))
	for i, pol := range policies {
		runs[i] = p.add("revisits policy="+pol.revisit, true, []CrawlerSpec{{Controller: "1", Group: "crawler", Revisit: pol.revisit}})
	}
	return func(r *Report) {
		rates := make([]float64, m.Objects)
		for o := range rates {
			rates[o] = m.ObjectRate(uint32(o))
		}
		t := &Table{Name: "revisits", Header: []string{"policy", "web_freshness_last_half", "optimum", "share_of_optimum", "polls_per_second"}}
		ch := &Chart{Name: "revisits", Title: fmt.Sprintf("One crawler's web freshness by revisit policy, rates spread over %g orders of magnitude", m.RateSpread),
			XLabel: "simulated days", YLabel: "share of the web held current", YMax: 1}
		dates := "dated changes (Last-Modified)"
		if m.Undated {
			dates = "undated changes (no Last-Modified)"
		}
		r.Summary = append(r.Summary, fmt.Sprintf("%d objects, update rates log-uniform over %g orders of magnitude (mean %.3g/s; 0: all equal), %s, no churn, %.1f simulated days; freshness over the last half",
			m.Objects, m.RateSpread, m.UpdateRate, dates, m.Duration/Day))
		for i, pol := range policies {
			run := runs[i]
			c := run.res.Crawlers[0]
			budget := float64(c.Polls) / m.Duration
			_, opt := revisit.OptimalFrequencies(rates, budget)
			f := lastHalf(run.res.Times, run.res.Cover["crawler"], m.Duration)
			t.Rows = append(t.Rows, []string{pol.name, fmtNum(f), fmtNum(opt), fmtNum(f / opt), fmtNum(budget)})
			r.Summary = append(r.Summary, fmt.Sprintf("%-26s web freshness %.4f, %.3f of the optimum %.4f for its %.3f polls/s", pol.name, f, f/opt, opt, budget))
			ch.Series = append(ch.Series, timeSeries(pol.name, run, "crawler", false))
		}
		r.Tables = append(r.Tables, t)
		r.Charts = append(r.Charts, ch)
	}
}

// lastHalf averages a series over the samples in the last half of the run.
func lastHalf(times, ys []float64, duration float64) float64 {
	sum, n := 0.0, 0
	for i, t := range times {
		if t >= duration/2 {
			sum += ys[i]
			n++
		}
	}
	if n == 0 {
		return math.NaN()
	}
	return sum / float64(n)
}
