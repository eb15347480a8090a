package measure

import (
	"context"
	"fmt"
	"math"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/cocrawl/cocrawl/crawl"
	"github.com/cocrawl/cocrawl/crawl/revisit"
	"github.com/cocrawl/cocrawl/internal/testweb"
)

// writeHubSite writes a site where breadth-first finds the hot pages last:
// an index links 10 sections, each section 20 leaves, and each leaf links
// its section and 3 of 30 hubs, which nothing else links. The sections and
// hubs are the hot pages; breadth-first reaches the hubs only after every
// leaf.
func writeHubSite(t *testing.T) string {
	t.Helper()
	dir := t.TempDir()
	write := func(name string, links ...string) {
		var b strings.Builder
		fmt.Fprintf(&b, "<!doctype html><html><head><title>%s</title></head><body>\n", name)
		for _, l := range links {
			fmt.Fprintf(&b, "<p><a href=\"%s\">%s</a></p>\n", l, l)
		}
		b.WriteString("</body></html>\n")
		if err := os.WriteFile(filepath.Join(dir, name), []byte(b.String()), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	var sections []string
	for s := range 10 {
		sections = append(sections, fmt.Sprintf("section-%d.html", s))
		var leaves []string
		for l := range 20 {
			j := s*20 + l
			leaves = append(leaves, fmt.Sprintf("leaf-%d.html", j))
			write(leaves[l], sections[s], fmt.Sprintf("hub-%d.html", j%30), fmt.Sprintf("hub-%d.html", (j+7)%30), fmt.Sprintf("hub-%d.html", (j+13)%30))
		}
		write(sections[s], leaves...)
	}
	for h := range 30 {
		write(fmt.Sprintf("hub-%d.html", h))
	}
	write("index.html", sections...)
	return dir
}

// Backlink order finds the hot pages of a site where breadth-first finds
// them last, live as in simulation, and the live crawl comes within 90% of
// the simulated backlink order it implements. On this site PageRank does
// better still (hubs linked only from leaves gain rank before they gain
// more backlinks than a leaf has): docs/performance.md reports it.
func TestFirstVisitsOnAHubSite(t *testing.T) {
	cfg := FirstVisitConfig{Sites: []string{writeHubSite(t)}, Delay: time.Millisecond}
	res, err := FirstVisits(context.Background(), cfg)
	if err != nil {
		t.Fatal(err)
	}
	r := res[0]
	var b strings.Builder
	PrintFirstVisits(&b, cfg, res)
	t.Log("\n" + b.String())
	if r.URLs != 241 || r.Budget != 25 {
		t.Fatalf("mapped %d URLs with a budget of %d, want 241 and 25", r.URLs, r.Budget)
	}
	if !(r.Simulated[orderBacklinks] > r.Simulated[orderBreadth] && r.Live[crawl.FirstByBacklinks] > r.Live[crawl.FirstByBreadth]) {
		t.Errorf("backlinks did not beat breadth-first: %+v", r)
	}
	if got := r.Live[crawl.FirstByBacklinks]; got < 0.9*r.Simulated[orderBacklinks] {
		t.Errorf("the live backlink crawl found %.3f of the hot pages, the simulated one %.3f", got, r.Simulated[orderBacklinks])
	}
}

// Real HTML: the Python documentation, when installed (apt-get install
// python3-doc), crawled the same way.
func TestFirstVisitsOnRealPages(t *testing.T) {
	// Only a tree of HTML: other python3* packages (python3-pip) ship
	// an html folder of Markdown sources.
	var dirs []string
	all, _ := filepath.Glob("/usr/share/doc/python3*/html")
	for _, d := range all {
		if _, err := os.Stat(filepath.Join(d, "index.html")); err == nil {
			dirs = append(dirs, d)
		}
	}
	if len(dirs) == 0 {
		t.Skip("no Python documentation installed (apt-get install python3-doc)")
	}
	if testing.Short() {
		t.Skip("real pages: a few seconds")
	}
	cfg := FirstVisitConfig{Sites: dirs[:1], Delay: time.Millisecond}
	res, err := FirstVisits(context.Background(), cfg)
	if err != nil {
		t.Fatal(err)
	}
	var b strings.Builder
	PrintFirstVisits(&b, cfg, res)
	t.Log("\n" + b.String())
	r := res[0]
	if r.URLs < 100 || r.Hot == 0 {
		t.Fatalf("mapped %d URLs, %d hot: not the site meant", r.URLs, r.Hot)
	}
	if got := r.Live[crawl.FirstByBacklinks]; got < 0.9*r.Best() {
		t.Errorf("the live backlink crawl found %.3f of the hot pages, the better simulated order %.3f", got, r.Best())
	}
}

// The revisit experiment runs each policy and reports it against one
// optimum (a short run: the mechanics, not the figures), here on hosts
// that send no Last-Modified.
func TestRevisitsReport(t *testing.T) {
	if _, err := Revisits(context.Background(), RevisitConfig{LastModified: "sometimes"}); err == nil {
		t.Error("Last-Modified \"sometimes\" taken")
	}
	rep, err := Revisits(context.Background(), RevisitConfig{Hosts: 1, Pages: 20, Delay: 10 * time.Millisecond, LastModified: LastModifiedAbsent,
		Warmup: 2 * time.Second, Measure: 2 * time.Second, Policies: []string{crawl.RevisitOptimal, crawl.RevisitUniform}})
	if err != nil {
		t.Fatal(err)
	}
	var b strings.Builder
	rep.Print(&b)
	t.Log("\n" + b.String())
	if !strings.Contains(b.String(), "Last-Modified absent") {
		t.Error("the report does not say the hosts sent no Last-Modified")
	}
	if len(rep.Runs) != 2 || rep.Budget <= 0 {
		t.Fatalf("report %+v", rep)
	}
	for _, r := range rep.Runs {
		if r.Requests <= 0 || r.Freshness <= 0 || r.Freshness > 1 || r.Optimum <= 0 || r.Optimum > 1 {
			t.Errorf("%s: %+v", r.Policy, r)
		}
	}
}

// The sitemap experiment runs its five arms and reports each (a short
// run: the mechanics, not the figures).
func TestSitemapsReport(t *testing.T) {
	cfg := SitemapConfig{Hosts: 1, Pages: 20, ChangeEvery: 5 * time.Second, Delay: 10 * time.Millisecond, SitemapEvery: 500 * time.Millisecond,
		Warmup: 2 * time.Second, Measure: 2 * time.Second}
	runs, err := Sitemaps(context.Background(), cfg)
	if err != nil {
		t.Fatal(err)
	}
	var b strings.Builder
	PrintSitemaps(&b, cfg, runs)
	t.Log("\n" + b.String())
	if len(runs) != 5 {
		t.Fatalf("%d arms", len(runs))
	}
	for _, r := range runs {
		if r.Requests <= 0 || r.Freshness <= 0 || r.Freshness > 1 {
			t.Errorf("%s: %+v", r.Arm, r)
		}
	}
	if runs[0].Signals.SitemapReads != 0 || runs[1].Signals.SitemapReads == 0 {
		t.Errorf("sitemap reads: plain %d, honest %d", runs[0].Signals.SitemapReads, runs[1].Signals.SitemapReads)
	}
}

// The sweep a user runs by default measures every regime the policies
// must hold in, not only the one they were tuned on: each cycle ratio,
// Last-Modified given, absent and the response's time, template noise,
// soft 404s, spread rates, a slower delay, 2 and 5 peers, a large host.
func TestDefaultRegimeCellsCoverTheRegimes(t *testing.T) {
	has := map[string]bool{}
	for _, c := range DefaultRegimeCells() {
		has[fmt.Sprint("ratio ", c.CycleRatio)] = true
		switch {
		case c.Noisy:
			has["noisy"] = true
		case c.LastModifiedNow:
			has["lm now"] = true
		case !c.LastModified:
			has["no lm"] = true
		}
		has["soft404"] = has["soft404"] || c.Soft404
		has["spread"] = has["spread"] || c.RateSpread > 0
		has["delay 1s"] = has["delay 1s"] || c.Delay >= time.Second
		has[fmt.Sprint("peers ", c.Peers)] = true
		has["1000 pages"] = has["1000 pages"] || c.Pages >= 1000
	}
	for _, want := range []string{"ratio 0.2", "ratio 1", "ratio 5", "ratio 25", "noisy", "lm now", "no lm", "soft404", "spread", "delay 1s", "peers 2", "peers 3", "peers 5", "1000 pages"} {
		if !has[want] {
			t.Errorf("the default sweep has no cell for %s", want)
		}
	}
}

// One small cell of the regime sweep: the harness runs peers and lone
// crawlers on a changing web and its figures are sane; the simulator's
// cell runs beside it.
func TestRegimeCellRuns(t *testing.T) {
	if testing.Short() {
		t.Skip("a live cell: 10 s")
	}
	cells, err := ParseRegimeCells("1:20:lm:20ms:2")
	if err != nil {
		t.Fatal(err)
	}
	cfg := RegimeConfig{Cells: cells, Hosts: 2, WarmupCycles: 1, MeasureCycles: 1, MinWarmup: 3 * time.Second, MinMeasure: 6 * time.Second}
	rs, err := Regimes(context.Background(), cfg)
	if err != nil {
		t.Fatal(err)
	}
	var b strings.Builder
	PrintRegimes(&b, cfg, rs)
	t.Log("\n" + b.String())
	r := rs[0]
	if !(r.Coop > 0 && r.Coop <= 1 && r.Alone > 0 && r.Alone <= 1) || !(r.CoopRate > 0 && r.AloneRate > 0) {
		t.Fatalf("figures %+v", r)
	}
	if r.Merges == 0 || r.Samples == 0 || !(r.SimAlone > 0) || !(r.Optimum > 0) {
		t.Fatalf("no merges, samples, simulated cell or optimum: %+v", r)
	}
	if cs, err := ParseRegimeCells("25:200:noisy:1s:5,5:50:lm:200ms:3:soft404,5:50:nolm:1s:2:spread3:soft404:budget12.5"); err != nil || !cs[0].Noisy || cs[0].LastModified || cs[0].Peers != 5 || cs[0].Soft404 || !cs[1].Soft404 || cs[1].RateSpread != 0 || !cs[2].Soft404 || cs[2].RateSpread != 3 || cs[1].Budget != 0 || cs[2].Budget != 12.5 {
		t.Errorf("a noisy cell, a soft-404 cell and a spread one parsed as %+v, %v", cs, err)
	}
	for _, bad := range []string{"5:20:lm:20ms", "0:20:lm:1s:2", "5:20:maybe:1s:2", "5:20:lm:1s:1", "5:20:lm:1s:2:maybe", "5:20:lm:1s:2:soft404:soft404", "5:20:lm:1s:2:spread0", "5:20:lm:1s:2:spread9", "5:20:lm:1s:2:spreadx", "5:20:lm:1s:2:spread2:spread3", "5:20:lm:1s:2:budget0", "5:20:lm:1s:2:budget-1", "5:20:lm:1s:2:budget5:budget6"} {
		if _, err := ParseRegimeCells(bad); err == nil {
			t.Errorf("cell %q parsed", bad)
		}
	}
}

// The optimum of a spread cell is Cho and Garcia-Molina's split of each
// host's budget: uniform revisits where the rates are alike, better where
// they spread; and a spread keeps the cell's mean rate.
func TestSpreadOptimum(t *testing.T) {
	alike := map[string]float64{"http://a/": 9, "http://a/p/0.html": 0.1, "http://a/p/1.html": 0.1, "http://b/p/0.html": 0.1}
	if o, u := spreadOptimum(alike, 0.05); math.Abs(o-u) > 1e-6 || math.Abs(u-revisit.Freshness(0.1, 0.05)) > 1e-12 {
		t.Errorf("rates alike: optimum %g, uniform %g, want both %g", o, u, revisit.Freshness(0.1, 0.05))
	}
	spread := map[string]float64{"http://a/p/0.html": 0.01, "http://a/p/1.html": 0.1, "http://a/p/2.html": 10, "http://b/p/0.html": 1}
	o, u := spreadOptimum(spread, 0.2)
	if !(o > u*1.02) || o > 1 {
		t.Errorf("rates spread: optimum %g against uniform %g", o, u)
	}
	c := RegimeCell{CycleRatio: 5, Pages: 50, Delay: 200 * time.Millisecond, RateSpread: 3}
	sum, n := 0.0, 100000
	for i := range n {
		sum += c.centreRate() * math.Pow(10, c.RateSpread*((float64(i)+0.5)/float64(n)-0.5))
	}
	if got := sum / float64(n); math.Abs(got/c.meanRate()-1) > 1e-3 {
		t.Errorf("spread 3 around %g: mean rate %g, want %g", c.centreRate(), got, c.meanRate())
	}
}

// The truth a peer's self-measurement is held against counts what its
// samples are drawn from: live pages and home pages, not deleted ones.
func TestSelfFrameCountsHomePages(t *testing.T) {
	truth := map[string]testweb.PageState{"http://h/": {Live: true}, "http://h/x": {Live: false}}
	for i := range 6 {
		truth[fmt.Sprintf("http://h/p/%d.html", i)] = testweb.PageState{Live: true}
	}
	f := selfFrameOf(truth)
	if f.pages != 6 || len(f.homes) != 1 || f.homes[0] != "http://h/" {
		t.Fatalf("frame %+v: want 6 pages and the home page", f)
	}
	if got, want := f.share(0.326, 1), (6*0.326+1)/7; math.Abs(got-want) > 1e-12 {
		t.Errorf("share %.4f, want %.4f", got, want)
	}
	if got := (selfFrame{}).share(0.5, 0.5); got != 0 {
		t.Errorf("an empty frame's share %g, want 0", got)
	}
}
