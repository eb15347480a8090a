package demo

import (
	"encoding/csv"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"text/tabwriter"

	"github.com/cocrawl/cocrawl/internal/chart"
)

// PeerRow is one peer's figures at the end of a run.
type PeerRow struct {
	Name, Group   string
	Rho           float64
	Coverage      float64 // freshness at the end
	MeanCoverage  float64 // freshness averaged after the warm-up: the headline
	Cache         float64 // thesis cache freshness at the end
	False         float64 // share of pages held in a false state a liar gave, at the end
	Checks        int64   // spot-checks asked
	ChecksRefuted int64
	// ChecksInconclusive: checks whose poll could not judge the claim.
	ChecksInconclusive int64
	Polls, Merges      int64
	EventsPerPoll      float64
	EventsPerMerge     float64
	Bytes              int64
	// What the peer measured of its own freshness by sampled re-polls
	// (peer.FreshnessStatus), the truth averaged over the time its samples
	// span, and what its revisit model expected.
	Measured, MeasuredLow, MeasuredHigh float64
	MeasuredSamples                     int
	TruthInWindow, Expected             float64
}

// Report is what a run measured.
type Report struct {
	Config      Config
	Series      []Point
	Peers       []PeerRow
	Groups      map[string]PeerRow // means per group
	Ratio       float64            // cooperating / polling-only freshness after the warm-up
	Load        float64            // cooperating / polling-only requests per peer
	Liars       []LiarFate
	Interrupted bool
}

func (r *Report) summarise() {
	r.Groups = map[string]PeerRow{}
	n := map[string]float64{}
	for _, p := range r.Peers {
		g := r.Groups[p.Group]
		g.Name, g.Group = "mean", p.Group
		g.Rho += p.Rho
		g.Coverage += p.Coverage
		g.MeanCoverage += p.MeanCoverage
		g.Cache += p.Cache
		g.Polls += p.Polls
		g.Merges += p.Merges
		g.EventsPerPoll += p.EventsPerPoll
		g.EventsPerMerge += p.EventsPerMerge
		g.Bytes += p.Bytes
		g.False += p.False
		g.Checks += p.Checks
		g.ChecksRefuted += p.ChecksRefuted
		g.ChecksInconclusive += p.ChecksInconclusive
		r.Groups[p.Group] = g
		n[p.Group]++
	}
	for k, g := range r.Groups {
		c := n[k]
		g.Rho /= c
		g.Coverage /= c
		g.MeanCoverage /= c
		g.Cache /= c
		g.Polls = int64(float64(g.Polls) / c)
		g.Merges = int64(float64(g.Merges) / c)
		g.EventsPerPoll /= c
		g.EventsPerMerge /= c
		g.Bytes = int64(float64(g.Bytes) / c)
		g.False /= c
		g.Checks = int64(float64(g.Checks) / c)
		g.ChecksRefuted = int64(float64(g.ChecksRefuted) / c)
		g.ChecksInconclusive = int64(float64(g.ChecksInconclusive) / c)
		r.Groups[k] = g
	}
	if p := r.Groups[Poll].MeanCoverage; p > 0 {
		r.Ratio = r.Groups[Coop].MeanCoverage / p
	}
	if p := r.Groups[Poll].Polls; p > 0 {
		r.Load = float64(r.Groups[Coop].Polls) / float64(p)
	}
}

// Settings is every parameter of the run, on one line, so a summary can
// be reproduced.
func (c Config) Settings() string {
	return fmt.Sprintf("settings: --peers %d --hosts %d --pages %d --change-every %v --churn-every %v --duration %v --warmup %v --budget %g --revisit %v --split=%v --liars %d --lie-rate %g --controller %s --real-web=%v --seed %d",
		c.Peers, c.Hosts, c.Pages, c.ChangeEvery, c.ChurnEvery, c.Duration, c.Warmup, c.Budget, c.Revisit, c.Split, c.Liars, c.LieRate, c.Controller, c.RealWeb, c.Seed)
}

// Print writes the comparison table.
func (r *Report) Print(w io.Writer) {
	fmt.Fprintln(w)
	if r.Interrupted {
		fmt.Fprintln(w, "(interrupted: figures so far)")
	}
	fmt.Fprintln(w, r.Config.Settings())
	fmt.Fprintf(w, "freshness: the share of the web's live pages whose current version a peer holds, averaged after the %v warm-up.\n\n", r.Config.Warmup)
	tw := tabwriter.NewWriter(w, 2, 4, 2, ' ', tabwriter.AlignRight)
	fmt.Fprintln(tw, "peer\tgroup\trho\tfreshness\tat end\tcache freshness\tpolls\tmerges\tevents/poll\tevents/merge\tMB moved\tchecks\trefuted\tinconclusive\tfalse pages\t")
	row := func(p PeerRow) {
		fmt.Fprintf(tw, "%s\t%s\t%.2f\t%.3f\t%.3f\t%.3f\t%d\t%d\t%.3f\t%.2f\t%.1f\t%d\t%d\t%d\t%.2f%%\t\n", p.Name, p.Group, p.Rho, p.MeanCoverage, p.Coverage,
			p.Cache, p.Polls, p.Merges, p.EventsPerPoll, p.EventsPerMerge, float64(p.Bytes)/(1<<20), p.Checks, p.ChecksRefuted, p.ChecksInconclusive, 100*p.False)
	}
	for _, p := range r.Peers {
		row(p)
	}
	fmt.Fprintln(tw, "\t\t\t\t\t\t\t\t\t\t\t\t\t\t\t")
	for _, g := range []string{Coop, Poll} {
		row(r.Groups[g])
	}
	tw.Flush()
	// What each peer believed of itself against the truth.
	fmt.Fprintln(w, "\nwhat each peer measured of its own freshness by sampled re-polls (95% interval), against the truth over the same time, and what its revisit model expected:")
	tw = tabwriter.NewWriter(w, 2, 4, 2, ' ', tabwriter.AlignRight)
	fmt.Fprintln(tw, "peer\tmeasured\tinterval\tsamples\ttruth\tmodel\t")
	for _, p := range r.Peers {
		if p.MeasuredSamples == 0 {
			fmt.Fprintf(tw, "%s\t-\t-\t0\t%.3f\t%.3f\t\n", p.Name, p.TruthInWindow, p.Expected)
			continue
		}
		fmt.Fprintf(tw, "%s\t%.3f\t[%.3f, %.3f]\t%d\t%.3f\t%.3f\t\n", p.Name, p.Measured, p.MeasuredLow, p.MeasuredHigh, p.MeasuredSamples, p.TruthInWindow, p.Expected)
	}
	tw.Flush()
	fmt.Fprintf(w, "\ncooperating peers were %.2fx as fresh as polling-only peers, each allowed %.0f requests per second;\n", r.Ratio, r.Config.Budget)
	fmt.Fprintf(w, "each sent %.2fx the requests of a polling-only peer (%d against %d).\n", r.Load, r.Groups[Coop].Polls, r.Groups[Poll].Polls)
	for _, l := range r.Liars {
		fmt.Fprintf(w, "%s:", l.Name)
		for _, name := range sortedKeys(l.MergesBefore) {
			if at, ok := l.DistrustedBy[name]; ok {
				fmt.Fprintf(w, " distrusted by %s at %.0fs after %d merges (%d claims refuted);", name, at.Seconds(), l.MergesBefore[name], l.Refuted[name])
			} else {
				fmt.Fprintf(w, " still trusted by %s (%d merges, %d refuted);", name, l.MergesBefore[name], l.Refuted[name])
			}
		}
		fmt.Fprintln(w)
	}
	if len(r.Liars) > 0 {
		fmt.Fprintf(w, "cooperating peers held %.2f%% of the web's pages in a false state a liar gave, at the end.\n", 100*r.Groups[Coop].False)
	}
}

func sortedKeys[V any](m map[string]V) []string {
	out := make([]string, 0, len(m))
	for k := range m {
		out = append(out, k)
	}
	sort.Strings(out)
	return out
}

// Write puts summary.txt, freshness.csv and freshness.svg in dir.
func (r *Report) Write(dir string) error {
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return err
	}
	var sb strings.Builder
	r.Print(&sb)
	if err := os.WriteFile(filepath.Join(dir, "summary.txt"), []byte(sb.String()), 0o644); err != nil {
		return err
	}
	f, err := os.Create(filepath.Join(dir, "freshness.csv"))
	if err != nil {
		return err
	}
	cw := csv.NewWriter(f)
	header := []string{"seconds", "cooperating_coverage", "cooperating_cache", "polling_coverage", "polling_cache"}
	for _, p := range r.Peers {
		header = append(header, p.Name+"_coverage", p.Name+"_cache")
	}
	_ = cw.Write(header)
	num := func(v float64) string { return strconv.FormatFloat(v, 'f', 4, 64) }
	for _, pt := range r.Series {
		rec := []string{num(pt.T.Seconds()), num(pt.Group[Coop][0]), num(pt.Group[Coop][1]), num(pt.Group[Poll][0]), num(pt.Group[Poll][1])}
		for _, p := range r.Peers {
			rec = append(rec, num(pt.Coverage[p.Name]), num(pt.Cache[p.Name]))
		}
		_ = cw.Write(rec)
	}
	cw.Flush()
	if err := cw.Error(); err != nil {
		f.Close()
		return err
	}
	if err := f.Close(); err != nil {
		return err
	}
	return os.WriteFile(filepath.Join(dir, "freshness.svg"), []byte(r.svg()), 0o644)
}

// svg draws freshness over time for both groups: coverage solid, cache
// freshness dashed.
func (r *Report) svg() string {
	c := &chart.Chart{
		Title:  fmt.Sprintf("Freshness over time: %d cooperating vs %d polling-only peers, %.0f requests/s each", r.Config.Peers, r.Config.Peers, r.Config.Budget),
		XLabel: "time since start (s)",
		YLabel: "freshness",
		YMax:   1,
		Note:   fmt.Sprintf("freshness ratio %.2fx after a %v warm-up", r.Ratio, r.Config.Warmup),
	}
	for _, s := range []struct {
		group, label, color string
		idx                 int
	}{
		{Coop, "cooperating, coverage", "#2563eb", 0},
		{Coop, "cooperating, cache", "#2563eb", 1},
		{Poll, "polling-only, coverage", "#d97706", 0},
		{Poll, "polling-only, cache", "#d97706", 1},
	} {
		line := chart.Series{Name: s.label, Color: s.color, Dashed: s.idx == 1}
		for _, pt := range r.Series {
			line.X = append(line.X, pt.T.Seconds())
			line.Y = append(line.Y, pt.Group[s.group][s.idx])
		}
		c.Series = append(c.Series, line)
	}
	return c.SVG()
}
