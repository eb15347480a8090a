package sim

import (
	"encoding/csv"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"
)

// Write puts the report in dir: summary.txt, runs.csv (every run, per
// group of crawlers), one CSV per table, and a CSV and an SVG per chart.
func (r *Report) Write(dir string) error {
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return err
	}
	if err := writeFile(filepath.Join(dir, "summary.txt"), func(w io.Writer) error {
		_, err := io.WriteString(w, r.Text())
		return err
	}); err != nil {
		return err
	}
	if err := writeFile(filepath.Join(dir, "runs.csv"), r.writeRuns); err != nil {
		return err
	}
	for _, t := range r.Tables {
		if err := writeFile(filepath.Join(dir, t.Name+".csv"), func(w io.Writer) error {
			cw := csv.NewWriter(w)
			if err := cw.Write(t.Header); err != nil {
				return err
			}
			if err := cw.WriteAll(t.Rows); err != nil {
				return err
			}
			return cw.Error()
		}); err != nil {
			return err
		}
	}
	for _, c := range r.Charts {
		if err := writeFile(filepath.Join(dir, c.Name+".csv"), c.WriteCSV); err != nil {
			return err
		}
		if err := os.WriteFile(filepath.Join(dir, c.Name+".svg"), []byte(c.SVG()), 0o644); err != nil {
			return err
		}
	}
	return nil
}

// Text is the report's summary for a person.
func (r *Report) Text() string {
	var b strings.Builder
	o := r.Options
	m := o.Model
	fmt.Fprintf(&b, "experiment %s, scale %s: %d objects, %.4g simulated days, update rate %.3g/s, seed %d\n",
		r.Experiment, o.Scale, m.Objects, m.Duration/Day, m.UpdateRate, o.Seed)
	if o.Cadence {
		b.WriteString("sharing crawlers merge with a live peer's cadence (--cadence), not whenever rho draws a merge\n")
	}
	if m.Undated {
		b.WriteString("objects carry no date of their last change (--undated): crawlers estimate rates from whether each poll found a change\n")
	}
	var ops, events, moved int64
	var cpu float64
	for _, run := range r.Runs {
		ops += run.res.Ops
		events += run.res.WebEvents
		moved += run.res.Moved
		cpu += run.res.Wall.Seconds()
	}
	fmt.Fprintf(&b, "%d runs in %s on %d workers; %.3g operations, %.3g web-events, %.3g records merged; %.3g operations per second of run time\n",
		len(r.Runs), r.Wall.Round(1e6), o.Workers, float64(ops), float64(events), float64(moved), float64(ops)/max(cpu, 1e-9))
	for _, l := range r.Summary {
		b.WriteString(l)
		b.WriteByte('\n')
	}
	return b.String()
}

func (r *Report) writeRuns(w io.Writer) error {
	cw := csv.NewWriter(w)
	if err := cw.Write([]string{"run", "n", "contention", "group", "crawlers", "freshness", "freshness_end", "coverage", "coverage_end",
		"polls", "merges", "events_per_poll", "events_per_merge", "records_per_merge", "mean_rho", "low_rho_share", "ops", "web_events", "wall_s", "mem_bytes"}); err != nil {
		return err
	}
	for _, run := range r.Runs {
		res := run.res
		groups := map[string][]*CrawlerResult{}
		var order []string
		for i := range res.Crawlers {
			c := &res.Crawlers[i]
			if _, ok := groups[c.Group]; !ok {
				order = append(order, c.Group)
			}
			groups[c.Group] = append(groups[c.Group], c)
		}
		for _, g := range order {
			cs := groups[g]
			var f, fe, cv, ce, polls, merges, pe, me, recs, mr, low float64
			for _, c := range cs {
				f += c.Freshness
				fe += c.FreshnessEnd
				cv += c.Coverage
				ce += c.CoverageEnd
				polls += float64(c.Polls)
				merges += float64(c.Merges)
				pe += float64(c.PollEvents)
				me += float64(c.MergeEvents)
				recs += float64(c.Records)
				mr += c.MeanRho
				low += c.LowShare
			}
			k := float64(len(cs))
			if err := cw.Write([]string{run.key, fmt.Sprint(run.n), fmt.Sprint(run.contend), g, fmt.Sprint(len(cs)),
				fmtNum(f / k), fmtNum(fe / k), fmtNum(cv / k), fmtNum(ce / k), fmtNum(polls / k), fmtNum(merges / k),
				fmtNum(pe / max(polls, 1)), fmtNum(me / max(merges, 1)), fmtNum(recs / max(merges, 1)), fmtNum(mr / k), fmtNum(low / k),
				fmt.Sprint(res.Ops), fmt.Sprint(res.WebEvents), fmtNum(res.Wall.Seconds()), fmt.Sprint(res.MemBytes)}); err != nil {
				return err
			}
		}
	}
	cw.Flush()
	return cw.Error()
}

func writeFile(path string, fill func(io.Writer) error) error {
	f, err := os.Create(path)
	if err != nil {
		return err
	}
	if err := fill(f); err != nil {
		f.Close()
		return err
	}
	return f.Close()
}
