package sim

import (
	"fmt"
	"math"

	"github.com/cocrawl/cocrawl/peer/trust"
)

// liarsController is the cooperating crawlers' controller in the liars
// experiment: seek, the one within 5% of the best fixed rho (sim/README.md).
func (p *plan) liarsController() string { return "seek:" + p.opts.Model.SeekPeriod().String() }

// lieRate is Options.LieRate or its default: one false record per poll
// time, a liar that makes up about as many records as it polls.
func (p *plan) lieRate() float64 {
	if p.opts.LieRate > 0 {
		return p.opts.LieRate
	}
	m := p.opts.Model
	return m.LinkBps / 8 / m.ObjectBytes
}

// liarsRun is n cooperating crawlers, checked or not, with k liars among
// them (the liars last).
func liarsRun(p *plan, n, k int, checked bool) *runSpec {
	cs := homogeneous(n, p.liarsController(), true, "coop")
	for i := range cs {
		cs[i].Checked = checked
	}
	for range k {
		cs = append(cs, CrawlerSpec{Controller: p.liarsController(), Sharing: true, Group: "liar", Lies: p.lieRate()})
	}
	return p.add(fmt.Sprintf("liars n=%d k=%d rate=%g checked=%v", n, k, p.lieRate(), checked), true, cs)
}

// planLiars: a community of n honest cooperating crawlers with K liars,
// without and with spot-checks, against the same community without liars
// (also with and without checks: their cost) and n polling-only crawlers.
func planLiars(p *plan) func(*Report) {
	ns := p.ns([]int{8})
	k := p.opts.Liars
	for _, n := range ns {
		baselineRun(p, n, true)
		for _, checked := range []bool{false, true} {
			liarsRun(p, n, 0, checked)
			liarsRun(p, n, k, checked)
		}
	}
	return func(r *Report) {
		pol := trust.Policy{}.WithDefaults()
		t := &Table{Name: "liars", Header: []string{"n", "liars", "checks", "web_freshness", "ratio_to_polling", "web_freshness_end", "cache_freshness", "held_false_end",
			"distrusted", "distrust_hours_mean", "distrust_hours_max", "merges_to_distrust_mean", "checked_merges_mean",
			"predicted_checked_merges", "lie_share", "refuted_share", "check_share", "repolls", "honest_refuted", "honest_distrusted"}}
		ch := &Chart{Name: "liars", Title: fmt.Sprintf("Honest crawlers' freshness with %d liar(s), without and with spot-checks", k),
			XLabel: "simulated days", YLabel: "share of the live web the honest crawlers hold current", YMax: 1}
		for _, n := range ns {
			base := baselineRun(p, n, true)
			fb := base.res.GroupMean("", func(c *CrawlerResult) float64 { return c.Coverage })
			ch.Series = append(ch.Series, timeSeries(fmt.Sprintf("polling only, N=%d", n), base, "baseline", true))
			r.Summary = append(r.Summary, fmt.Sprintf("N=%d honest crawlers (%s), %d liar(s) making up %.3g records/s each; polling-only web freshness %.3f",
				n, p.liarsController(), k, p.lieRate(), fb))
			for _, liars := range []int{0, k} {
				for _, checked := range []bool{false, true} {
					run := liarsRun(p, n, liars, checked)
					row, line := liarsRow(run, n, liars, checked, fb, pol)
					t.Rows = append(t.Rows, row)
					r.Summary = append(r.Summary, line)
					name := fmt.Sprintf("%d liar(s), %s, N=%d", liars, checksLabel(checked), n)
					ch.Series = append(ch.Series, timeSeries(name, run, "coop", false))
				}
			}
		}
		r.Summary = append(r.Summary, fmt.Sprintf("policy: k = %d checks per merge (1 once vouched), distrust at %d refutations and a false share over %g, vouch at %d confirmations",
			pol.Checks, pol.DistrustAfter, pol.MaxFalse, pol.Vouch))
		r.Charts = append(r.Charts, ch)
		r.Tables = append(r.Tables, t)
	}
}

func checksLabel(checked bool) string {
	if checked {
		return "spot-checks"
	}
	return "no checks"
}

// timeSeries is a group's web freshness (the share of the live web it
// holds current) over the run, in days.
func timeSeries(name string, run *runSpec, group string, dashed bool) Series {
	s := Series{Name: name, Dashed: dashed}
	for i, t := range run.res.Times {
		s.X = append(s.X, t/Day)
		s.Y = append(s.Y, run.res.Cover[group][i])
	}
	return s
}

// liarsRow sums up one run of the liars experiment: what the honest
// crawlers saw and, per liar, when the checking ones distrusted it. Its
// freshness is over the live web (the thesis's coverage), not over the
// cache: a false deletion takes a page out of the cache, and would make
// a poisoned cache look fresher.
func liarsRow(run *runSpec, n, liars int, checked bool, polling float64, pol trust.Policy) ([]string, string) {
	res := run.res
	honest := func(f func(*CrawlerResult) float64) float64 { return res.GroupMean("coop", f) }
	f := honest(func(c *CrawlerResult) float64 { return c.Coverage })
	fend := honest(func(c *CrawlerResult) float64 { return c.CoverageEnd })
	cache := honest(func(c *CrawlerResult) float64 { return c.Freshness })
	held := honest(func(c *CrawlerResult) float64 { return c.HeldFalse })
	var polls, checks, repolls, blamed int64
	var times, merges, checkedMerges []float64
	pairs, caught, honestDistrusted := 0, 0, 0
	var lies, logged, liarChecks, liarRefuted int64
	for i := range res.Crawlers {
		c := &res.Crawlers[i]
		if c.Group == "liar" {
			lies += c.Lies
			logged += c.Logged
			continue
		}
		polls += c.Polls
		checks += c.CheckPolls
		repolls += c.Repolls
		blamed += c.RefutedHonest
		for j, src := range c.Sources {
			if res.Crawlers[j].Group != "liar" {
				if src.DistrustAt >= 0 {
					honestDistrusted++
				}
				continue
			}
			pairs++
			liarChecks += src.Confirmed + src.Refuted + src.Inconclusive
			liarRefuted += src.Refuted
			if src.DistrustAt >= 0 {
				caught++
				times = append(times, src.DistrustAt/3600)
				merges = append(merges, float64(src.Merges))
				checkedMerges = append(checkedMerges, float64(src.CheckedMerges))
			}
		}
	}
	share := math.NaN()
	if logged > 0 {
		share = float64(lies) / float64(logged)
	}
	// Spec 12.4: about R/(k f) checked merges to catch a liar, where f is
	// the share of the checked records that are false. That share is far
	// above the share of lies in the liar's log: a lie always changes the
	// merger's cache, so it is always a candidate for the sample, while
	// most true records the merger already holds.
	refutedShare, predicted := math.NaN(), math.NaN()
	if liarChecks > 0 {
		refutedShare = float64(liarRefuted) / float64(liarChecks)
		predicted = float64(pol.DistrustAfter) / (float64(pol.Checks) * refutedShare)
	}
	maxT := math.NaN()
	for _, x := range times {
		maxT = math.Max(nanTo(maxT, x), x)
	}
	checkShare := 0.0
	if polls > 0 {
		checkShare = float64(checks) / float64(polls)
	}
	distrusted := "-"
	if liars > 0 && checked {
		distrusted = fmt.Sprintf("%d/%d", caught, pairs)
	}
	row := []string{fmt.Sprint(n), fmt.Sprint(liars), fmt.Sprint(checked), fmtNum(f), fmtNum(f / polling), fmtNum(fend), fmtNum(cache), fmtNum(held),
		distrusted, fmtNum(mean(times)), fmtNum(maxT), fmtNum(mean(merges)), fmtNum(mean(checkedMerges)),
		fmtNum(predicted), fmtNum(share), fmtNum(refutedShare), fmtNum(checkShare), fmt.Sprint(repolls), fmt.Sprint(blamed), fmt.Sprint(honestDistrusted)}
	line := fmt.Sprintf("  %d liar(s), %-12s web freshness %.3f (%.2fx polling-only), at the end %.3f with %.2f%% of the web held false (cache freshness %.3f)",
		liars, checksLabel(checked)+":", f, f/polling, fend, 100*held, cache)
	if liars > 0 {
		line += fmt.Sprintf("; lies %.0f%% of the liars' records", 100*share)
	}
	if liars > 0 && checked {
		line += fmt.Sprintf("; distrusted in %d of %d honest-liar pairs after %.2f h (max %.2f h), %.1f merges of which %.1f checked (predicted R/(k f) = %.1f with f = %.2f refuted of its checked records)",
			caught, pairs, mean(times), maxT, mean(merges), mean(checkedMerges), predicted, refutedShare)
	}
	if checked {
		line += fmt.Sprintf("; checks %.1f%% of polls, %d re-polls, %d refutations of honest crawlers, %d honest crawlers distrusted", 100*checkShare, repolls, blamed, honestDistrusted)
	}
	return row, line
}

func nanTo(v, alt float64) float64 {
	if math.IsNaN(v) {
		return alt
	}
	return v
}
