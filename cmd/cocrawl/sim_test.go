package main

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

func TestSimCommand(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "out")
	out := mustRun(t, "sim", "baseline", "--scale", "tiny", "--n", "1,2", "--quiet", "--out", dir)
	if !strings.Contains(out, "N=2") || !strings.Contains(out, "results in "+dir) {
		t.Fatalf("output:\n%s", out)
	}
	for _, f := range []string{"summary.txt", "runs.csv", "baseline.csv", "figure-6.1.csv", "figure-6.1.svg"} {
		if _, err := os.Stat(filepath.Join(dir, f)); err != nil {
			t.Fatal(err)
		}
	}
	for _, args := range [][]string{
		{"sim"},
		{"sim", "nothing"},
		{"sim", "baseline", "--scale", "huge"},
		{"sim", "baseline", "--n", "0"},
		{"sim", "baseline", "--damping", "-1"},
	} {
		if out, code := cocrawl(t, args...); code != exitUsage {
			t.Errorf("%v: exit %d, want %d\n%s", args, code, exitUsage, out)
		}
	}
}

func TestSimLiars(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "out")
	out := mustRun(t, "sim", "liars", "--scale", "tiny", "--n", "3", "--liars", "2", "--quiet", "--out", dir)
	if !strings.Contains(out, "2 liar(s), spot-checks") || !strings.Contains(out, "distrusted in") {
		t.Fatalf("output:\n%s", out)
	}
	for _, f := range []string{"summary.txt", "liars.csv", "liars.svg"} {
		if _, err := os.Stat(filepath.Join(dir, f)); err != nil {
			t.Fatal(err)
		}
	}
	if out, code := cocrawl(t, "sim", "liars", "--lie-rate", "-1"); code != exitUsage {
		t.Errorf("--lie-rate -1: exit %d\n%s", code, out)
	}
}
