//go:build e2e

package main

import (
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/cocrawl/cocrawl/internal/testweb"
)

// chromium returns the headless browser to test with: $CHROMIUM, or the
// first of Debian's and Google's names on PATH.
func chromium(t *testing.T) string {
	if p := os.Getenv("CHROMIUM"); p != "" {
		return p
	}
	for _, name := range []string{"chromium", "chromium-browser", "google-chrome"} {
		if p, err := exec.LookPath(name); err == nil {
			return p
		}
	}
	t.Fatal("no chromium on PATH: apt-get install chromium, or set CHROMIUM")
	return ""
}

// browse loads url in headless Chromium with extra flags and returns what
// it printed. The flags keep it off every network but loopback.
func browse(t *testing.T, url string, extra ...string) string {
	t.Helper()
	args := []string{"--headless", "--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run",
		"--disable-background-networking", "--disable-component-update", "--disable-sync",
		"--user-data-dir=" + t.TempDir(), "--window-size=1280,1000", "--virtual-time-budget=8000"}
	args = append(args, extra...)
	ctx, cancel := context.WithTimeout(context.Background(), 90*time.Second)
	defer cancel()
	out, err := exec.CommandContext(ctx, chromium(t), append(args, url)...).Output()
	if err != nil {
		t.Fatalf("chromium %v: %v", extra, err)
	}
	return string(out)
}

// The dashboard loads in a real browser, shows live numbers from the API
// and the peer table, and a screenshot is written (E2E_OUT, default
// build/dashboard.png).
func TestDashboardInChromium(t *testing.T) {
	w, err := testweb.Start(testweb.Config{Hosts: 2, PagesPerHost: 20, UpdateRate: 0.2, Seed: 5})
	if err != nil {
		t.Fatal(err)
	}
	defer w.Close()
	stopWeb := make(chan struct{})
	defer close(stopWeb)
	go w.Run(contextUntil(stopWeb))

	addrs := freePorts(t, 2)
	for i, addr := range addrs {
		runPeer(t, "--data", t.TempDir(), "--listen", addr, "--seed", w.Seeds()[i], "--allow-private",
			"--delay", "100ms", "--revisit-min", "1s", "--revisit-max", "5s", "--merge-min", "500ms", "--merge-max", "3s",
			"--status-every", "0", "--log-level", "warn", "--peer", "http://"+addrs[1-i]+"/robots.shr")
	}
	// Let it gather a few samples so the charts have lines.
	var st runStatus
	deadline := time.Now().Add(30 * time.Second)
	for !(getJSON(t, "http://"+addrs[0]+"/api/status?history=0", &st) && st.Merges > 0 && st.Polls > 20) {
		if time.Now().After(deadline) {
			t.Fatalf("the peer did not get going: %+v", st)
		}
		time.Sleep(200 * time.Millisecond)
	}
	time.Sleep(5 * time.Second)

	dom := browse(t, "http://"+addrs[0]+"/", "--dump-dom")
	text := func(id string) string {
		m := regexp.MustCompile(`id="` + id + `"[^>]*>([^<]*)<`).FindStringSubmatch(dom)
		if m == nil {
			t.Fatalf("no #%s in the page:\n%s", id, dom)
		}
		return m[1]
	}
	if r, err := strconv.ParseFloat(text("rho"), 64); err != nil || r < 0 || r > 1 {
		t.Fatalf("#rho shows %q", text("rho"))
	}
	if n, err := strconv.Atoi(text("polls")); err != nil || n == 0 {
		t.Fatalf("#polls shows %q", text("polls"))
	}
	if !strings.HasPrefix(text("state"), "live") {
		t.Fatalf("#state shows %q", text("state"))
	}
	if !strings.Contains(dom, "healthy") || !strings.Contains(dom, addrs[1]) {
		t.Fatalf("the peer table does not show the healthy peer %s", addrs[1])
	}
	// How the peer is reached: on loopback AutoNAT has no verdict, so the
	// DHT serves; connections by kind and hole punches.
	if nat := text("nat"); !strings.HasPrefix(nat, "unknown · server") {
		t.Fatalf("#nat shows %q", nat)
	}
	if conns := text("conns"); !regexp.MustCompile(`^\d+ / \d+ · \d+ / \d+$`).MatchString(conns) {
		t.Fatalf("#conns shows %q", conns)
	}
	// Its own freshness, measured by samples, beside the model's (issue 28).
	if fr := text("mfresh"); !regexp.MustCompile(`^measured( \d\.\d{3} \[\d\.\d\d, \d\.\d\d\], [\d,]+ samples(, \d+% of the URLs known gone)?|: no samples yet) · model `).MatchString(fr) {
		t.Fatalf("#mfresh shows %q", fr)
	}
	if !strings.Contains(dom, "<th>connection</th>") {
		t.Fatal("the peer table has no connection column")
	}
	if !strings.Contains(dom, "<polyline") {
		t.Fatal("no chart line was drawn")
	}

	shot := os.Getenv("E2E_OUT")
	if shot == "" {
		shot = filepath.Join("..", "..", "build", "dashboard.png")
	}
	shot, _ = filepath.Abs(shot)
	if err := os.MkdirAll(filepath.Dir(shot), 0o755); err != nil {
		t.Fatal(err)
	}
	os.Remove(shot)
	browse(t, "http://"+addrs[0]+"/", "--screenshot="+shot)
	if fi, err := os.Stat(shot); err != nil || fi.Size() < 10_000 {
		t.Fatalf("screenshot %s: %v", shot, err)
	}
	t.Logf("screenshot written to %s; rho %s, polls %s, merges %s", shot, text("rho"), text("polls"), text("merges"))
}
