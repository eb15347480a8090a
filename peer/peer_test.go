package peer

import (
	"context"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/cocrawl/cocrawl/crawl"
	"github.com/cocrawl/cocrawl/internal/testweb"
	"github.com/cocrawl/cocrawl/peer/rho"
	"github.com/cocrawl/cocrawl/webevents"
)

// testPeer is one peer started in-process with its own Badger store and
// its own HTTP listener on loopback.
type testPeer struct {
	*Peer
	url   string // its robots.shr
	base  string // http://addr
	store *webevents.BadgerStore
	stop  func()
}

// listen reserves a loopback listener, so peers can name each other before
// they start.
func listen(t *testing.T) net.Listener {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	return ln
}

func testConfig(seeds []string, mode string, peers ...string) Config {
	m, ok := LookupMode(mode)
	if !ok {
		panic("no mode " + mode)
	}
	ctl, err := rho.Parse(m.Controller)
	if err != nil {
		panic(err)
	}
	return Config{
		Crawl: crawl.Config{
			Seeds: seeds, Workers: 4,
			MinDelay: 20 * time.Millisecond, DelaySet: true, DelayFactor: 1,
			RevisitMin: 200 * time.Millisecond, RevisitMax: time.Second,
			BackoffBase: 200 * time.Millisecond, BackoffMax: time.Second,
			Fetch: crawl.FetchConfig{AllowPrivate: true, Timeout: 5 * time.Second},
		},
		Controller: ctl, Mode: m.Name, Share: m.Share, Peers: peers, Slots: 4,
		Schedule:     MergeSchedule{MergeMin: 150 * time.Millisecond, MergeMax: time.Second, BackoffBase: 100 * time.Millisecond, BackoffMax: time.Second},
		AllowPrivate: true, Grace: 2 * time.Second,
		Logger: slog.New(slog.NewTextHandler(io.Discard, nil)),
	}
}

// startPeer runs a peer on ln with a store in dir until the test ends or
// stop is called.
func startPeer(t *testing.T, ln net.Listener, dir string, cfg Config) *testPeer {
	t.Helper()
	st, err := webevents.OpenBadger(dir, webevents.BadgerOptions{MemTableSize: 8 << 20})
	if err != nil {
		t.Fatal(err)
	}
	cfg.Addr = ln.Addr().String()
	p, err := New(cfg, StoresIn(st))
	if err != nil {
		st.Close()
		t.Fatal(err)
	}
	srv := &http.Server{Handler: p.Handler(), ReadHeaderTimeout: 5 * time.Second}
	go func() { _ = srv.Serve(ln) }()
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- p.Run(ctx) }()
	tp := &testPeer{Peer: p, base: "http://" + cfg.Addr, url: "http://" + cfg.Addr + "/robots.shr", store: st}
	stopped := false
	tp.stop = func() {
		if stopped {
			return
		}
		stopped = true
		cancel()
		if err := <-done; err != nil {
			t.Errorf("peer %s: %v", cfg.Addr, err)
		}
		_ = srv.Close()
		if err := st.Close(); err != nil {
			t.Errorf("close store: %v", err)
		}
	}
	t.Cleanup(tp.stop)
	return tp
}

func waitFor(t *testing.T, d time.Duration, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(d)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("after %v: %s", d, what)
		}
		time.Sleep(50 * time.Millisecond)
	}
}

// cids counts the events a store holds by observer.
func cids(t *testing.T, st webevents.Store) map[string]int {
	t.Helper()
	out := map[string]int{}
	today := webevents.Today(time.Now())
	for day := today - 1; day <= today; day++ {
		err := st.ReadDay(day, 0, func(_ int64, e webevents.Event) error {
			out[e.CID]++
			return nil
		})
		if err != nil {
			t.Fatal(err)
		}
	}
	return out
}

func startWeb(t *testing.T, hosts int) *testweb.Web {
	t.Helper()
	w, err := testweb.Start(testweb.Config{Hosts: hosts, PagesPerHost: 15, UpdateRate: 0.2, Seed: 11})
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	go w.Run(ctx)
	t.Cleanup(func() { cancel(); w.Close() })
	return w
}

// community starts n peers in mode, peer i crawling host i only, each with
// every other as a static peer.
func community(t *testing.T, w *testweb.Web, n int, mode string) []*testPeer {
	t.Helper()
	lns := make([]net.Listener, n)
	for i := range lns {
		lns[i] = listen(t)
	}
	peers := make([]*testPeer, n)
	for i := range n {
		var others []string
		for j := range n {
			if j != i {
				others = append(others, "http://"+lns[j].Addr().String()+"/robots.shr")
			}
		}
		peers[i] = startPeer(t, lns[i], t.TempDir(), testConfig([]string{w.Seeds()[i]}, mode, others...))
	}
	return peers
}

func TestTwoPeersMergeEachOthersEvents(t *testing.T) {
	w := startWeb(t, 2)
	ps := community(t, w, 2, "sharing-hybrid")
	// A merge stores its events as they arrive and counts them when it
	// ends, so wait for the counts too, not only for the store.
	waitFor(t, 20*time.Second, "each peer holds events observed by the other, and counts them", func() bool {
		for i, p := range ps {
			if cids(t, p.store)[ps[1-i].CID()] == 0 || p.Status(false).MergeEvents == 0 {
				return false
			}
		}
		return true
	})
	for _, p := range ps {
		st := p.Status(false)
		if st.Merges == 0 || st.MergeEvents == 0 || st.Polls == 0 || st.PeersHealthy != 1 {
			t.Fatalf("%s: %+v", p.CID(), st)
		}
		t.Logf("%s: rho %.2f, %d polls (%.3f events each), %d merges (%.1f events each)",
			p.CID(), st.Rho, st.Polls, st.EventsPerPoll, st.Merges, st.EventsPerMerge)
	}
}

func TestFivePeersEachHoldEveryOthersEvents(t *testing.T) {
	w := startWeb(t, 5)
	ps := community(t, w, 5, "sharing-hybrid")
	waitFor(t, 30*time.Second, "every peer holds events observed by all four others", func() bool {
		for _, p := range ps {
			got := cids(t, p.store)
			for _, q := range ps {
				if got[q.CID()] == 0 {
					return false
				}
			}
		}
		return true
	})
}

func TestMirrorPollsNothingAndStillHoldsEvents(t *testing.T) {
	w := startWeb(t, 1)
	lnA, lnM := listen(t), listen(t)
	a := startPeer(t, lnA, t.TempDir(), testConfig(w.Seeds()[:1], "altruistic"))
	m := startPeer(t, lnM, t.TempDir(), testConfig(w.Seeds()[:1], "mirror", a.url))
	waitFor(t, 20*time.Second, "the mirror holds the altruist's events", func() bool {
		return cids(t, m.store)[a.CID()] >= 10
	})
	if st := m.Status(false); st.Polls != 0 || m.crawler.Stats().RobotsFetches != 0 {
		t.Fatalf("mirror polled: %d polls, %d robots.txt fetches", st.Polls, m.crawler.Stats().RobotsFetches)
	}
	// It shares what it merged: its day file holds the altruist's events.
	resp, err := http.Get(fmt.Sprintf("%s/share/%d.dat", m.base, webevents.Today(time.Now())))
	if err != nil {
		t.Fatal(err)
	}
	body, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if resp.StatusCode != 200 || !strings.Contains(string(body), a.CID()) {
		t.Fatalf("mirror's day file: %d, %d bytes", resp.StatusCode, len(body))
	}
	if st := a.Status(false); st.Merges != 0 {
		t.Fatalf("altruist merged %d times", st.Merges)
	}
}

func TestParasiteSharesNothing(t *testing.T) {
	w := startWeb(t, 1)
	lnA, lnP := listen(t), listen(t)
	a := startPeer(t, lnA, t.TempDir(), testConfig(w.Seeds()[:1], "sharing-hybrid", "http://"+lnP.Addr().String()+"/robots.shr"))
	p := startPeer(t, lnP, t.TempDir(), testConfig(w.Seeds()[:1], "parasite", a.url))
	waitFor(t, 20*time.Second, "the parasite holds merged events and the sharer merged from it", func() bool {
		return cids(t, p.store)[a.CID()] >= 10 && peerRow(a, p.url).Merges >= 2
	})
	if st := p.Status(false); st.Polls != 0 {
		t.Fatalf("parasite polled %d times", st.Polls)
	}
	resp, err := http.Get(fmt.Sprintf("%s/share/%d.dat", p.base, webevents.Today(time.Now())))
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusNotFound {
		t.Fatalf("parasite's day file: status %d, want 404 (empty repository)", resp.StatusCode)
	}
	if row := peerRow(a, p.url); row.Gained != 0 || !row.Healthy() {
		t.Fatalf("merging from the parasite: %+v", row)
	}
}

func peerRow(p *testPeer, shrURL string) Record {
	for _, r := range p.Peers() {
		if r.URL == shrURL {
			return r
		}
	}
	return Record{}
}

func TestBangBangMovesBetweenItsTwoValues(t *testing.T) {
	w := startWeb(t, 2)
	lns := []net.Listener{listen(t), listen(t)}
	var ps []*testPeer
	for i := range 2 {
		cfg := testConfig(w.Seeds()[i:i+1], "sharing-hybrid", "http://"+lns[1-i].Addr().String()+"/robots.shr")
		cfg.Controller = rho.NewBangBang()
		ps = append(ps, startPeer(t, lns[i], t.TempDir(), cfg))
	}
	waitFor(t, 30*time.Second, "bang-bang spent time at both 0.10 and 0.90", func() bool {
		for _, p := range ps {
			at := p.Status(false).TimeAtRho
			if at["0.10"] == 0 || at["0.90"] == 0 {
				return false
			}
		}
		return true
	})
	for _, p := range ps {
		st := p.Status(false)
		for k := range st.TimeAtRho {
			if k != "0.10" && k != "0.90" {
				t.Fatalf("bang-bang spent time at rho %s", k)
			}
		}
		lo, hi := st.TimeAtRho["0.10"], st.TimeAtRho["0.90"]
		t.Logf("%s: %.0f%% of the time at rho 0.10, %.0f%% at 0.90; %.3f events per poll, %.1f per merge",
			p.CID(), 100*lo/(lo+hi), 100*hi/(lo+hi), st.EventsPerPoll, st.EventsPerMerge)
	}
}

func TestRestartKeepsPeerTableAndCursors(t *testing.T) {
	w := startWeb(t, 1)
	lnA := listen(t)
	a := startPeer(t, lnA, t.TempDir(), testConfig(w.Seeds(), "altruistic"))
	dir := t.TempDir()
	lnB := listen(t)
	addrB := lnB.Addr().String()
	b := startPeer(t, lnB, dir, testConfig(nil, "mirror", a.url))
	waitFor(t, 20*time.Second, "the mirror merged twice", func() bool { return peerRow(b, a.url).Merges >= 2 })
	b.stop()
	before := peerRow(b, a.url)

	// Restarted with no static peer: the table and the cursor come back.
	lnB2, err := net.Listen("tcp", addrB)
	if err != nil {
		t.Fatal(err)
	}
	b2 := startPeer(t, lnB2, dir, testConfig(nil, "mirror"))
	row := peerRow(b2, a.url)
	if row.Merges < before.Merges || row.Gained != before.Gained || row.Repository == "" || row.Source != "static" {
		t.Fatalf("after restart the row is %+v, before %+v", row, before)
	}
	cur, ok, err := b2.store.Cursor(a.url)
	if err != nil || !ok || cur.LastDay != webevents.Today(time.Now()) {
		t.Fatalf("cursor after restart: %+v %v %v", cur, ok, err)
	}
	waitFor(t, 10*time.Second, "the restarted mirror merges again", func() bool { return peerRow(b2, a.url).Merges > before.Merges })
}

// URLs inside a peer's special set are merged from it, not polled.
func TestSpecialPrefixesAreMergedNotPolled(t *testing.T) {
	w := startWeb(t, 2)
	host0 := w.Seeds()[0]
	lnA, lnB := listen(t), listen(t)
	cfgA := testConfig([]string{host0}, "altruistic")
	cfgA.Special = []string{host0}
	a := startPeer(t, lnA, t.TempDir(), cfgA)
	waitFor(t, 10*time.Second, "the owner polled its pages", func() bool { return a.Status(false).PollEvents >= 10 })
	cfgB := testConfig(w.Seeds(), "sharing-hybrid", a.url)
	cfgB.Crawl.Fetch.UserAgent = "other/1.0"
	b := startPeer(t, lnB, t.TempDir(), cfgB)
	waitFor(t, 20*time.Second, "the peer left the special prefix to its owner", func() bool {
		return b.crawler.Stats().Delegated > 0 && b.Status(false).Delegated == 1
	})
	byB := func() int {
		n := 0
		for _, r := range w.Hosts()[0].Log() {
			if r.UserAgent == "other/1.0" && r.Path != "/robots.txt" {
				n++
			}
		}
		return n
	}
	// Only spot-checks of the owner's records are polled there: those
	// waiting and those asked meanwhile.
	// Samples of its own freshness are polled wherever they fall.
	before, checks, samples := byB(), b.Status(false).Checks, b.crawler.SelfMeasure().Drawn
	time.Sleep(time.Second)
	later, drawn := b.Status(false).Checks, b.crawler.SelfMeasure().Drawn-samples
	if after, allowed := byB(), later.Asked-checks.Asked+int64(checks.Pending)+drawn+1; int64(after-before) > allowed {
		t.Fatalf("the peer polled %d pages of a delegated host, but only %d spot-checks and samples were due", after-before, allowed)
	}
	if got := cids(t, b.store)[a.CID()]; got == 0 {
		t.Fatal("the peer holds no event of the special set's owner")
	}
	if row := peerRow(b, a.url); len(row.Special) != 1 || row.Special[0] != host0 {
		t.Fatalf("peer row %+v", row)
	}
}

// reportRecorder is a Seek that keeps the probe reports its merges bring.
type reportRecorder struct {
	*rho.Seek
	mu      sync.Mutex
	reports map[string]rho.Report // by Outcome.From
}

func (r *reportRecorder) Observe(o rho.Outcome) {
	r.mu.Lock()
	if o.Report.Period != 0 {
		r.reports[o.From] = o.Report
	}
	r.mu.Unlock()
	r.Seek.Observe(o)
}

// Two seek peers publish their probe counts in robots.shr, and each merge
// hands the other's to its controller, named by the peer's robots.shr.
func TestSeekPeersExchangeProbeReports(t *testing.T) {
	w := startWeb(t, 2)
	lns := []net.Listener{listen(t), listen(t)}
	recs := make([]*reportRecorder, 2)
	var ps []*testPeer
	for i := range 2 {
		cfg := testConfig(w.Seeds()[i:i+1], "sharing-hybrid", "http://"+lns[1-i].Addr().String()+"/robots.shr")
		recs[i] = &reportRecorder{Seek: &rho.Seek{Period: 2 * time.Second, Start: 0.6}, reports: map[string]rho.Report{}}
		cfg.Controller = recs[i]
		ps = append(ps, startPeer(t, lns[i], t.TempDir(), cfg))
	}
	waitFor(t, 30*time.Second, "each peer holds a report of counted polls from the other", func() bool {
		for i, r := range recs {
			r.mu.Lock()
			got := r.reports[ps[1-i].url]
			r.mu.Unlock()
			if got.Polls == 0 && got.PrevPolls == 0 {
				return false
			}
		}
		return true
	})
	for i, r := range recs {
		r.mu.Lock()
		got := r.reports[ps[1-i].url]
		r.mu.Unlock()
		if got.Period != 2*time.Second || got.Fresh > got.Polls || len(r.reports) != 1 {
			t.Fatalf("peer %d got %+v (from %d peers)", i, got, len(r.reports))
		}
		t.Logf("peer %d heard: %s", i, got)
	}
	resp, err := http.Get(ps[0].url)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	body, _ := io.ReadAll(resp.Body)
	if !strings.Contains(string(body), "\nprobe: period=2 ") {
		t.Fatalf("robots.shr has no probe report:\n%s", body)
	}
}
