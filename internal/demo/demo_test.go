package demo

import (
	"bytes"
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

func smallConfig(t *testing.T) Config {
	return Config{Peers: 2, Hosts: 6, Pages: 15, ChangeEvery: 20 * time.Second, Duration: 6 * time.Second,
		Budget: 30, Results: t.TempDir(), Dir: filepath.Join(t.TempDir(), "data"), Every: 2 * time.Second}
}

func TestDemoRunsAndReports(t *testing.T) {
	cfg := smallConfig(t)
	var out bytes.Buffer
	cfg.Out = &out
	rep, err := Run(context.Background(), cfg)
	if err != nil {
		t.Fatal(err)
	}
	c, p := rep.Groups[Coop], rep.Groups[Poll]
	if c.Merges == 0 || p.Merges != 0 || c.Polls == 0 || p.Polls == 0 || p.Rho != 1 {
		t.Fatalf("groups: cooperating %+v, polling-only %+v", c, p)
	}
	for _, r := range rep.Peers {
		if r.Coverage < 0 || r.Coverage > 1 || r.Cache < 0 || r.Cache > 1 {
			t.Fatalf("freshness out of [0,1]: %+v", r)
		}
	}
	if len(rep.Series) < 2 || rep.Ratio <= 0 {
		t.Fatalf("%d points, ratio %v", len(rep.Series), rep.Ratio)
	}
	for _, f := range []string{"summary.txt", "freshness.csv", "freshness.svg"} {
		b, err := os.ReadFile(filepath.Join(cfg.Results, f))
		if err != nil || len(b) == 0 {
			t.Fatalf("%s: %v", f, err)
		}
	}
	svg, _ := os.ReadFile(filepath.Join(cfg.Results, "freshness.svg"))
	if strings.Count(string(svg), "<polyline") != 4 {
		t.Fatal("the chart lacks its four lines")
	}
	for _, want := range []string{"freshness: cooperating", "coop-1", "poll-2", "as fresh as polling-only", "settings: --peers 2 --hosts 6"} {
		if !strings.Contains(out.String(), want) {
			t.Fatalf("output lacks %q:\n%s", want, out.String())
		}
	}
	if left, _ := os.ReadDir(cfg.Dir); len(left) != 0 {
		t.Fatalf("data left behind in %s: %v", cfg.Dir, left)
	}
}

// A liar joins, is merged from, and its fate is in the summary.
func TestDemoWithALiar(t *testing.T) {
	cfg := smallConfig(t)
	cfg.Liars, cfg.Duration = 1, 8*time.Second
	var out bytes.Buffer
	cfg.Out = &out
	rep, err := Run(context.Background(), cfg)
	if err != nil {
		t.Fatal(err)
	}
	if len(rep.Liars) != 1 || len(rep.Liars[0].MergesBefore) == 0 {
		t.Fatalf("liars: %+v", rep.Liars)
	}
	summary, _ := os.ReadFile(filepath.Join(cfg.Results, "summary.txt"))
	for _, want := range []string{"liar-1:", "--liars 1", "in a false state a liar gave"} {
		if !strings.Contains(string(summary), want) {
			t.Fatalf("summary lacks %q:\n%s", want, summary)
		}
	}
}

// Ctrl-C stops the peers, prints what was measured and removes the data.
func TestDemoInterrupted(t *testing.T) {
	cfg := smallConfig(t)
	cfg.Duration = time.Minute
	var out bytes.Buffer
	cfg.Out = &out
	ctx, cancel := context.WithTimeout(context.Background(), 4*time.Second)
	defer cancel()
	start := time.Now()
	rep, err := Run(ctx, cfg)
	if err != nil {
		t.Fatal(err)
	}
	if !rep.Interrupted || time.Since(start) > 30*time.Second || !strings.Contains(out.String(), "interrupted") {
		t.Fatalf("interrupted %v after %v", rep.Interrupted, time.Since(start))
	}
	if left, _ := os.ReadDir(cfg.Dir); len(left) != 0 {
		t.Fatalf("data left behind in %s: %v", cfg.Dir, left)
	}
}
