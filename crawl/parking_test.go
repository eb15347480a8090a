package crawl

import (
	"context"
	"fmt"
	"math"
	"math/rand/v2"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/cocrawl/cocrawl/crawl/revisit"
	"github.com/cocrawl/cocrawl/internal/testweb"
	"github.com/cocrawl/cocrawl/webevents"
	"github.com/cocrawl/cocrawl/webevents/storetest"
)

func parkingFrontier(st *webevents.BadgerStore) StoredFrontier {
	sf := storedFrontier(st)
	sf.Revisits = st.Table(webevents.TableRevisits)
	return sf
}

func parked(host string, due uint32, path string, lambda float64) ParkedURL {
	u := host + path
	return ParkedURL{Host: host, Due: due, FP: urlFingerprint(u), Lambda: lambda, State: URLState{
		URL: u, Due: time.Unix(int64(due), 0).UTC(), Interval: time.Minute, Polls: 3, Seen: 1_790_000_000_000,
		Rate: revisit.Rate{Visits: 2, Changes: 1, Watched: 120}, ETag: `"e"`, hasOwnFP: true, ownFP: 42, ownAt: 7, ownMaskVer: 2,
	}}
}

func TestParkedStore(t *testing.T) {
	sf := parkingFrontier(storetest.OpenBadger(t))
	a, b := "http://a.test", "http://b.test"
	all := []ParkedURL{parked(a, 300, "/3", 0.5), parked(a, 100, "/1", -1), parked(b, 50, "/x", 1), parked(a, 200, "/2", 2)}
	// Each was a frontier state before it was parked.
	states := make([]URLState, len(all))
	for i, p := range all {
		states[i] = p.State
	}
	if err := sf.SaveFrontier(states); err != nil {
		t.Fatal(err)
	}
	if err := sf.WriteParked(all); err != nil {
		t.Fatal(err)
	}
	if err := sf.LoadFrontier(func(s URLState) error { t.Errorf("%s still a frontier state once parked", s.URL); return nil }); err != nil {
		t.Fatal(err)
	}
	var order []string
	for _, h := range []string{a, b} {
		if err := sf.EachParkedOf(h, func(p ParkedURL) error { order = append(order, p.State.URL); return nil }); err != nil {
			t.Fatal(err)
		}
	}
	keys := 0
	if err := sf.EachParkedKey(func(string, uint32, uint64) error { keys++; return nil }); err != nil || keys != 4 {
		t.Errorf("EachParkedKey found %d keys (%v), want 4", keys, err)
	}
	if got, want := strings.Join(order, ","), a+"/1,"+a+"/2,"+a+"/3,"+b+"/x"; got != want {
		t.Errorf("parked in order %s, want %s", got, want)
	}
	waitAll := func(uint32, uint64) bool { return true }
	if due, fp, ok, err := sf.NthParked(a, 0, 2, waitAll); err != nil || !ok || due != 300 || fp != urlFingerprint(a+"/3") {
		t.Errorf("NthParked(a, 0, 2) = %d, %x, %v, %v", due, fp, ok, err)
	}
	if due, fp, ok, err := sf.NthParked(a, 250, 0, waitAll); err != nil || !ok || due != 300 || fp != urlFingerprint(a+"/3") {
		t.Errorf("NthParked(a, from 250, 0) = %d, %x, %v, %v", due, fp, ok, err)
	}
	if _, _, ok, err := sf.NthParked(a, 301, 0, waitAll); err != nil || ok {
		t.Errorf("NthParked(a, from 301, 0) found one: %v, %v", ok, err)
	}
	got, next, err := sf.ReadParked(a, ParkedFrom{}, 5, 250, waitAll)
	if err != nil || len(got) != 2 || next != 300 {
		t.Fatalf("ReadParked(a, 5, due 250) took %d, next %d, %v; want 2 and 300", len(got), next, err)
	}
	if g := got[1]; g.State.URL != a+"/2" || g.Lambda != 2 || !g.State.hasOwnFP || g.State.ownFP != 42 || g.State.ownAt != 7 ||
		g.State.ownMaskVer != 2 || g.State.ETag != `"e"` || g.State.Rate != all[3].State.Rate || !g.State.Due.Equal(all[3].State.Due) {
		t.Errorf("took %+v, parked %+v", g, all[3])
	}
	if got[0].Lambda != -1 {
		t.Errorf("a URL parked without an estimate came back with %g", got[0].Lambda)
	}
	// The entries read stay, and count no more once in memory.
	waiting := func(due uint32, fp uint64) bool { return fp != got[0].FP && fp != got[1].FP }
	if got, next, err := sf.ReadParked(a, ParkedFrom{}, 5, 250, waiting); err != nil || len(got) != 0 || next != 300 {
		t.Errorf("ReadParked(a) of those not read: %d, next %d, %v; want none, next 300", len(got), next, err)
	}
	if due, fp, ok, err := sf.NthParked(a, 0, 0, waiting); err != nil || !ok || due != 300 || fp != urlFingerprint(a+"/3") {
		t.Errorf("NthParked(a, 0, 0) of those not read = %d, %x, %v, %v", due, fp, ok, err)
	}
	// Each URL's next write deletes the entry: /1 kept in memory (a frontier
	// state), /2 parked again at 400.
	one, two := got[0].State, got[1]
	one.left, one.leftAt, one.noTable = leftParked, 100, true
	two.State.left, two.State.leftAt, two.State.noTable = leftParked, 200, true
	two.Due = 400
	if err := sf.SaveFrontier([]URLState{one}); err != nil {
		t.Fatal(err)
	}
	if err := sf.WriteParked([]ParkedURL{two}); err != nil {
		t.Fatal(err)
	}
	var back []string
	if err := sf.LoadFrontier(func(s URLState) error { back = append(back, s.URL); return nil }); err != nil {
		t.Fatal(err)
	}
	if strings.Join(back, ",") != a+"/1" {
		t.Errorf("frontier states after the writes: %v, want /1's", back)
	}
	var where []string
	if err := sf.EachParkedKey(func(_ string, due uint32, fp uint64) error {
		where = append(where, fmt.Sprint(due, fp == urlFingerprint(a+"/2")))
		return nil
	}); err != nil {
		t.Fatal(err)
	}
	if got := strings.Join(where, ","); got != "300 false,400 true,50 false" {
		t.Errorf("parked after the writes: %s, want /3 at 300, /2 at 400 and b's", got)
	}
	p3, ok, err := sf.ParkedOne(a, 300, urlFingerprint(a+"/3"))
	if err != nil || !ok || p3.State.URL != a+"/3" {
		t.Errorf("ParkedOne = %+v, %v, %v", p3, ok, err)
	}
	if err := sf.DropParked([]ParkedURL{p3}); err != nil {
		t.Fatal(err)
	}
	if _, ok, err := sf.ParkedOne(a, 300, urlFingerprint(a+"/3")); err != nil || ok {
		t.Errorf("ParkedOne of a URL dropped: %v, %v", ok, err)
	}
	got, next, err = sf.ReadParked(a, ParkedFrom{}, 5, math.MaxUint32, waitAll)
	if err != nil || len(got) != 1 || got[0].State.URL != a+"/2" || next != 0 {
		t.Errorf("host a should have only /2 parked: %d, %d, %v", len(got), next, err)
	}
	if err := sf.DropParked(got); err != nil {
		t.Fatal(err)
	}
	if got, _, err := sf.ReadParked(a, ParkedFrom{}, 5, math.MaxUint32, waitAll); err != nil || len(got) != 0 {
		t.Errorf("host a has %d parked after DropParked (%v)", len(got), err)
	}
}

func TestParkedValueDecoderRefusesGarbage(t *testing.T) {
	p := parked("http://a.test", 9, "/p", 0.25)
	key := parkedKey(p.Host, p.Due, p.FP)
	good := encodeParked(&p)
	if got, err := decodeParked(key, good); err != nil || got.State.URL != p.State.URL || got.Lambda != p.Lambda {
		t.Fatalf("round trip: %+v, %v", got, err)
	}
	other := parked("http://a.test", 9, "/q", 0.25)
	for name, v := range map[string][]byte{
		"empty": nil, "unknown flag": {0x80}, "short rate": {1, 0, 0}, "short own": {2, 1, 2},
		"no URL": {0}, "URL of another key": encodeParked(&other), "cut": good[:len(good)-1],
		"NaN rate": append([]byte{1, 0, 0, 0, 0, 0, 0, 0xf8, 0x7f}, good[1+8:]...),
	} {
		if s, err := decodeParked(key, v); err == nil {
			t.Errorf("%s: %x decoded to %+v", name, v, s)
		}
	}
	if _, err := decodeParked("short", good); err == nil {
		t.Error("a short key decoded")
	}
}

func FuzzParkedValue(f *testing.F) {
	p := parked("http://a.test", 9, "/p", 0.25)
	f.Add([]byte(parkedKey(p.Host, p.Due, p.FP)), encodeParked(&p))
	f.Fuzz(func(t *testing.T, key, v []byte) {
		s, err := decodeParked(string(key), v)
		if err != nil {
			return
		}
		again, err := decodeParked(parkedKey(s.Host, s.Due, s.FP), encodeParked(&s))
		if err != nil || again.State.URL != s.State.URL || again.Lambda != s.Lambda || again.State.Rate != s.State.Rate || again.State.ownFP != s.State.ownFP {
			t.Errorf("%+v encodes to what decodes as %+v, %v", s, again, err)
		}
	})
}

// A frontier that parks keeps a head of each host's revisits in memory
// and still hands out every revisit in due order, those parked too, and
// written or not.
func TestParkingHandsOutRevisitsInDueOrder(t *testing.T) {
	f := newFrontier()
	f.park = newParking(parkingFrontier(storetest.OpenBadger(t)), 3)
	f.parkError = func(err error) { t.Error(err) }
	saved := map[string]bool{}
	f.save = func(st *URLState) { saved[st.URL] = true }
	base := time.Now().Truncate(time.Second).Add(-time.Hour)
	rng := rand.New(rand.NewPCG(1, 2))
	var h *host
	for i, k := range rng.Perm(12) {
		st, _ := f.add(URLState{URL: fmt.Sprintf("http://a.test/%d", k), Due: base})
		h = f.hosts["http://a.test"]
		f.remove(h, st)
		st.Polls, st.Due = 1, base.Add(time.Duration(k)*time.Second)
		f.reschedule(h, st)
		if i == 7 {
			if err := f.park.flush(); err != nil { // some written, some still queued
				t.Fatal(err)
			}
		}
	}
	if h.queue.Len() != 3 || h.parkedRevisits() != 9 || f.parkedCount() != 9 || f.size() != 12 || h.known != 12 {
		t.Fatalf("in memory %d, parked %d (%d), size %d, known %d; want 3, 9, 12, 12", h.queue.Len(), h.parkedRevisits(), f.parkedCount(), f.size(), h.known)
	}
	var order []string
	for range 12 {
		h, _ := f.next(time.Now())
		if h == nil {
			t.Fatalf("the frontier ran dry after %v", order)
		}
		st := f.pop(h, time.Now())
		order = append(order, strings.TrimPrefix(st.URL, "http://a.test/"))
		st.Due = base.Add(100 * time.Hour) // polled: not due again in this test
		f.reschedule(h, st)
		f.release(h, time.Now())
	}
	if got := strings.Join(order, ","); got != "0,1,2,3,4,5,6,7,8,9,10,11" {
		t.Errorf("revisits handed out in the order %s", got)
	}
	if f.size() != 12 || h.known != 12 || f.parkedCount() != h.parkedRevisits() || h.queue.Len()+h.parkedRevisits() != 12 {
		t.Errorf("after: size %d, known %d, parked %d (%d), in memory %d", f.size(), h.known, f.parkedCount(), h.parkedRevisits(), h.queue.Len())
	}
	// A parked URL comes back for a hint, as a state saved.
	u := ""
	for k := range 12 {
		if x := fmt.Sprintf("http://a.test/%d", k); f.get(x) == nil {
			u = x
			break
		}
	}
	if st := f.resident(u); st == nil || st.URL != u || st.Polls != 1 {
		t.Errorf("resident(%s) = %+v", u, st)
	}
	if f.size() != 12 || h.known != 12 {
		t.Errorf("after a hint: size %d, known %d", f.size(), h.known)
	}
}

// A host's revisit fit gives the same μ with half its URLs parked as with
// all of them in memory, when each has the interval the fit gave it: the
// parked ones count by their sums, and spend what their intervals say.
func TestRefitCountsParkedRevisits(t *testing.T) {
	c, err := New(Config{Seeds: []string{"http://a.test/"}, CID: "me.test:1 cocrawl/1.1",
		MinDelay: 100 * time.Millisecond, DelaySet: true, RevisitMin: time.Millisecond, RevisitMax: 1e6 * time.Second}, nil, &MemFrontier{})
	if err != nil {
		t.Fatal(err)
	}
	c.f.park = newParking(parkingFrontier(storetest.OpenBadger(t)), 1000)
	rng := rand.New(rand.NewPCG(5, 6))
	now := time.Now()
	for i := range 300 {
		s := URLState{URL: fmt.Sprintf("http://a.test/%d", i), Polls: 10, Due: now.Add(time.Hour), Interval: time.Hour}
		if i%10 != 0 {
			s.Rate = rateOf(math.Pow(10, -3+3*rng.Float64()))
		}
		c.f.add(s)
	}
	h := c.f.hosts["http://a.test"]
	c.refit(h, now)
	for _, st := range slices.Clone(h.queue.items) {
		if lambda, ok := h.fit.prior.Estimate(st.Rate); ok {
			// As a look would set them: the interval and the due time.
			st.Interval = c.optimalInterval(h, lambda, revisit.Rate{}, 0)
			c.f.setDue(st, now.Add(st.Interval))
		}
	}
	mu, prior := h.fit.mu, h.fit.prior
	before := c.RateStats()
	var park []*URLState
	for i, st := range h.queue.items {
		if i%2 == 0 {
			park = append(park, st)
		}
	}
	for _, st := range park {
		c.f.remove(h, st)
		c.f.parkState(h, st)
	}
	if h.parkedRevisits() != 150 || h.queue.Len() != 150 {
		t.Fatalf("parked %d, in memory %d", h.parkedRevisits(), h.queue.Len())
	}
	after := c.RateStats()
	if after.Unknown != before.Unknown {
		t.Errorf("URLs without an estimate: %d with half parked, %d before", after.Unknown, before.Unknown)
	}
	for band, n := range before.PerDay {
		if d := after.PerDay[band] - n; d < -2 || d > 2 {
			t.Errorf("band %s: %d with half parked, %d before", band, after.PerDay[band], n)
		}
	}
	h.fit.at = time.Time{}
	c.refit(h, now)
	// μ to the bins' resolution: the intervals are of each URL's own
	// rate, the bins' sums of their bin's mean.
	if math.Abs(h.fit.mu-mu) > 1e-3*mu || math.Abs(h.fit.prior.Mean-prior.Mean) > 1e-9 || math.Abs(h.fit.prior.Var-prior.Var) > 1e-9 {
		t.Errorf("with half parked: μ %g, prior %+v; all in memory: μ %g, prior %+v", h.fit.mu, h.fit.prior, mu, prior)
	}
}

// A crawl whose revisits mostly wait on disk polls every page again and
// again, keeps the heads near their size, and resumes after a restart
// with what it had parked.
func TestCrawlWithParkingRevisitsEveryPageAcrossARestart(t *testing.T) {
	w, err := testweb.Start(testweb.Config{Hosts: 2, PagesPerHost: 60, LinksPerPage: 6, Seed: 5})
	if err != nil {
		t.Fatal(err)
	}
	defer w.Close()
	st := storetest.OpenBadger(t)
	const head = 4
	cfg := testConfig(w)
	cfg.MinDelay, cfg.RevisitMin, cfg.RevisitMax = 2*time.Millisecond, 300*time.Millisecond, 600*time.Millisecond
	cfg.RevisitsInMemory = head

	c, err := New(cfg, st, parkingFrontier(st))
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- c.Run(ctx) }()
	maxHead, maxParked := 0, 0
	polledTwice := func(c *Crawler) bool {
		c.mu.Lock()
		for h := range c.f.allHosts() {
			polled := 0 // a link due later than now waits with them, never polled
			for st := range h.revisits() {
				if st.Polls > 0 {
					polled++
				}
			}
			maxHead = max(maxHead, polled)
		}
		maxParked = max(maxParked, c.f.parkedCount())
		c.mu.Unlock()
		return c.Stats().Polls > 400
	}
	waitFor(t, 30*time.Second, "no 400 polls", func() bool { return polledTwice(c) })
	cancel()
	if err := <-done; err != nil {
		t.Fatal(err)
	}
	known := c.Stats().Known
	onDisk := 0
	if err := parkingFrontier(st).EachParkedKey(func(string, uint32, uint64) error { onDisk++; return nil }); err != nil {
		t.Fatal(err)
	}
	c.mu.Lock()
	resident, parkedNow, weighed := len(c.f.all), c.f.parkedCount(), c.f.park.weights.total
	c.mu.Unlock()
	if weighed != parkedNow {
		t.Errorf("the hosts' weights sum to %d, %d parked", weighed, parkedNow)
	}
	t.Logf("stopped with %d URLs known, %d in memory, %d parked (at most %d); polled revisits in a head at most %d", known, resident, parkedNow, maxParked, maxHead)
	if maxParked == 0 || onDisk != parkedNow || resident+parkedNow != known {
		t.Errorf("%d in memory and %d parked (%d on disk), %d known", resident, parkedNow, onDisk, known)
	}
	if maxHead > 2*head {
		t.Errorf("a revisit head held %d URLs polled, more than twice %d", maxHead, head)
	}
	// A parked URL's change rate is read from the store, and it stays
	// parked.
	lookedAt := 0
	for _, u := range w.LiveURLs() {
		c.mu.Lock()
		_, parked := c.f.parkedSeen(u)
		c.mu.Unlock()
		if !parked {
			continue
		}
		if _, visits, _ := c.ChangeRate(u); visits == 0 {
			t.Errorf("ChangeRate(%s) of a parked URL: no visits", u)
		}
		lookedAt++
	}
	if c.Stats().Parked != parkedNow || lookedAt == 0 {
		t.Errorf("looked at %d parked URLs' rates; %d parked after, %d before", lookedAt, c.Stats().Parked, parkedNow)
	}

	// A restart reads the parked keys only; each host's fit, counted from
	// the values when the host is first served (countParked), is the fit
	// the crawler had.
	// The sums are floats added in another order after the load, so they
	// are compared to 1e-9 (relative, or absolute near 0), the counts exactly.
	type fit struct {
		n, unestimated int
		prior          revisit.Prior
		intervalHz     float64
		plannedHz      float64
		bins           []float64
	}
	fits := func(c *Crawler) map[string]fit {
		c.mu.Lock()
		defer c.mu.Unlock()
		out := map[string]fit{}
		for h := range c.f.allHosts() {
			c.f.countParked(h)
			pk := h.parkFit
			if pk == nil || pk.n == 0 {
				continue
			}
			var bins []float64
			if pk.bins != nil {
				pk.bins.Each(func(n, _ float64) { bins = append(bins, n) })
			}
			out[h.key] = fit{pk.n, pk.unestimated, pk.prior.Prior(), pk.intervalHz, pk.plannedHz, bins}
		}
		return out
	}
	before := fits(c)
	if len(before) == 0 {
		t.Fatal("nothing parked at the stop")
	}
	loaded, err := New(cfg, st, parkingFrontier(st))
	if err != nil {
		t.Fatal(err)
	}
	if _, err := loaded.Load(); err != nil {
		t.Fatal(err)
	}
	loaded.mu.Lock()
	if loaded.f.park.weights.total != loaded.f.parkedCount() {
		t.Errorf("loaded: the hosts' weights sum to %d, %d parked", loaded.f.park.weights.total, loaded.f.parkedCount())
	}
	for h := range loaded.f.allHosts() {
		if pk := h.parkFit; pk != nil && pk.uncounted != pk.n {
			t.Errorf("%s: %d of %d parked URLs counted at the load; want none (keys only)", h.key, pk.n-pk.uncounted, pk.n)
		}
	}
	loaded.mu.Unlock()
	near := func(a, b float64) bool { return math.Abs(a-b) <= 1e-9*(1+max(math.Abs(a), math.Abs(b))) }
	after := fits(loaded)
	for key, b := range before {
		a, ok := after[key]
		if !ok || a.n != b.n || a.unestimated != b.unestimated || a.prior.Fitted != b.prior.Fitted ||
			!near(a.prior.Mean, b.prior.Mean) || !near(a.prior.Var, b.prior.Var) || !near(a.intervalHz, b.intervalHz) || !near(a.plannedHz, b.plannedHz) ||
			!slices.Equal(a.bins, b.bins) {
			t.Errorf("%s: parked fit before the restart %+v, after %+v", key, b, a)
		}
	}
	if len(after) != len(before) {
		t.Errorf("%d hosts with parked fits after the restart, %d before", len(after), len(before))
	}

	// After a restart every page is polled again, parked ones too.
	c2 := startCrawler(t, cfg, st, parkingFrontier(st))
	if got, err := c2.Load(); err != nil || got != known {
		t.Errorf("restarted with %d URLs known (%v), stopped with %d", got, err, known)
	}
	restart := time.Now()
	waitFor(t, 60*time.Second, "not every page was polled again after the restart", func() bool {
		for _, u := range w.LiveURLs() {
			if strings.Contains(u, "/private/") {
				continue
			}
			seen := int64(0)
			c2.mu.Lock()
			if s := c2.f.get(u); s != nil {
				seen = s.Seen
			} else if at, ok := c2.f.parkedSeen(u); ok {
				seen = at.UnixMilli() + 999
			}
			c2.mu.Unlock()
			if seen < restart.UnixMilli() {
				return false
			}
		}
		return true
	})
	if s := c2.Stats(); s.Parked == 0 || s.Known != known {
		t.Errorf("second run: %d parked, %d known (%d before)", s.Parked, s.Known, known)
	}
}

// TestParkedDrawCountsEveryParkedURLOnce checks that the place a draw of
// a parked URL takes (parking.nth) maps the host's parked count one to
// one onto its parked URLs, queued or written, across buckets of due
// times, and after some are taken: each is drawn with the same chance.
func TestParkedDrawCountsEveryParkedURLOnce(t *testing.T) {
	f := newFrontier()
	f.park = newParking(parkingFrontier(storetest.OpenBadger(t)), 2)
	f.parkError = func(err error) { t.Error(err) }
	f.save = func(*URLState) {}
	base := time.Now().Truncate(time.Second).Add(-time.Hour)
	rng := rand.New(rand.NewPCG(3, 4))
	var h *host
	const urls = 60
	for i := range urls {
		st, _ := f.add(URLState{URL: fmt.Sprintf("http://a.test/%d", i), Due: base})
		h = f.hosts["http://a.test"]
		f.remove(h, st)
		// Due over some ten minutes: buckets of several each.
		st.Polls, st.Due = 1, base.Add(time.Duration(rng.IntN(640))*time.Second)
		f.reschedule(h, st)
		if i == urls/2 {
			if err := f.park.flush(); err != nil { // some written, some still queued
				t.Fatal(err)
			}
		}
	}
	check := func(when string) {
		t.Helper()
		n := h.parkedRevisits()
		if len(h.parkFit.byDue) < 5 {
			t.Fatalf("%s: %d buckets of due times; the test wants several", when, len(h.parkFit.byDue))
		}
		seen := map[uint64]int{}
		for i := range n {
			fp, ok, err := f.park.nth(h.key, h.parkFit, i)
			if err != nil || !ok {
				t.Fatalf("%s: nth(%d) of %d: %v, %v", when, i, n, ok, err)
			}
			seen[fp]++
		}
		if _, ok, _ := f.park.nth(h.key, h.parkFit, n); ok {
			t.Errorf("%s: nth(%d) found one past the %d parked", when, n, n)
		}
		for fp, k := range seen {
			if k != 1 || !f.park.has(fp) {
				t.Errorf("%s: %x drawn at %d places, parked %v", when, fp, k, f.park.has(fp))
			}
		}
		if len(seen) != n {
			t.Errorf("%s: %d URLs drawn of %d parked", when, len(seen), n)
		}
	}
	check("parked")
	for range 8 { // drawn and brought back, from the queue or the store
		if st := f.drawParked(rng); st == nil {
			t.Fatal("no parked URL drawn")
		}
	}
	check("after eight draws")
	if err := f.park.flush(); err != nil {
		t.Fatal(err)
	}
	check("all written")
}

// TestParkedDueBucketsFollowTheCrowd checks that a host's buckets of due
// times stay few for its parked count, narrow where URLs crowd in a
// second (a crawl without delays) and wide where they spread (a polite
// one), and that widening them keeps every URL counted.
func TestParkedDueBucketsFollowTheCrowd(t *testing.T) {
	const base = 1_800_000_000
	for _, tc := range []struct {
		name     string
		due      func(i int) uint32
		maxShift uint8
	}{
		{"a hundred a second", func(i int) uint32 { return base + uint32(i/100) }, 0},
		{"one a second", func(i int) uint32 { return base + uint32(i) }, 5},
		{"spread over a month", func(i int) uint32 { return base + uint32(i)*997%(30*86400) }, 16},
	} {
		var p parkedFit
		const n = 5000
		for i := range n {
			p.add(&ParkedURL{Due: tc.due(i), Lambda: -1})
		}
		if len(p.byDue) > maxDueBuckets(p.n) {
			t.Errorf("%s: %d buckets for %d URLs", tc.name, len(p.byDue), p.n)
		}
		if p.shift > tc.maxShift {
			t.Errorf("%s: buckets of 2^%d s, want at most 2^%d", tc.name, p.shift, tc.maxShift)
		}
		total := 0
		for i, c := range p.byDue {
			total += int(c.n)
			if i > 0 && c.bucket <= p.byDue[i-1].bucket {
				t.Fatalf("%s: buckets out of order at %d", tc.name, i)
			}
		}
		if total != n {
			t.Errorf("%s: buckets count %d URLs of %d", tc.name, total, n)
		}
		for i := range n {
			b, _, ok := p.locate(i)
			if !ok {
				t.Fatalf("%s: locate(%d) of %d found none", tc.name, i, n)
			}
			if i == n-1 && b != tc.due(n-1)>>p.shift && tc.name != "spread over a month" {
				t.Errorf("%s: the last URL's bucket %d, want %d", tc.name, b, tc.due(n-1)>>p.shift)
			}
		}
		for i := range n {
			p.remove(&ParkedURL{Due: tc.due(i), Lambda: -1})
		}
		if p.n != 0 || len(p.byDue) != 0 || p.shift != 0 {
			t.Errorf("%s: all removed, left %d URLs in %d buckets of 2^%d s", tc.name, p.n, len(p.byDue), p.shift)
		}
	}
}

// A polled URL that goes to disk at once is written there only: its
// parked entry holds its state, so no frontier state of it waits to be
// written (the parking's write would delete it again).
func TestParkedAtOnceWaitsAsNoFrontierState(t *testing.T) {
	w, err := testweb.Start(testweb.Config{Hosts: 1, PagesPerHost: 40, LinksPerPage: 6, Seed: 3})
	if err != nil {
		t.Fatal(err)
	}
	defer w.Close()
	st := storetest.OpenBadger(t)
	cfg := testConfig(w)
	cfg.MinDelay, cfg.RevisitMin, cfg.RevisitMax = time.Millisecond, time.Hour, 2*time.Hour
	cfg.RevisitsInMemory = 1
	c, err := New(cfg, st, parkingFrontier(st))
	if err != nil {
		t.Fatal(err)
	}
	if err := c.Start(); err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	parkedAfter, waiting := 0, 0
	for ctx.Err() == nil && c.Stats().Polls < 30 {
		r, ok, wait := c.Poll(ctx)
		if !ok {
			time.Sleep(max(wait, time.Millisecond))
			continue
		}
		if r.Robots {
			continue
		}
		c.mu.Lock()
		if c.f.park.has(urlFingerprint(r.URL)) {
			parkedAfter++
			c.queue.mu.Lock()
			if _, ok := c.queue.states[r.URL]; ok {
				waiting++
			}
			c.queue.mu.Unlock()
		}
		c.mu.Unlock()
	}
	if err := c.Stop(); err != nil {
		t.Fatal(err)
	}
	if parkedAfter < 10 || waiting > 0 {
		t.Errorf("%d polls parked their URL at once; after %d of them a frontier state of it waited to be written", parkedAfter, waiting)
	}
}

// Takes of due revisits start where the last take of the host left off
// (parking.from), not at its first key, and a URL parked, or queued to
// be written, below that start is still taken in its turn: each take
// brings the earliest due, every URL parked comes back once, and none is
// left behind.
func TestParkedTakesFromWhereItLeftOff(t *testing.T) {
	f := newFrontier()
	f.park = newParking(parkingFrontier(storetest.OpenBadger(t)), 2)
	f.parkError = func(err error) { t.Error(err) }
	f.save = func(*URLState) {}
	rng := rand.New(rand.NewPCG(5, 6))
	now := time.Unix(1_800_000_000, 0)
	var h *host
	type parkedAt struct {
		fp  uint64
		due time.Time
	}
	parked := map[string]parkedAt{} // parked and not taken
	taken := map[string]int{}
	next, fromTheMiddle := 0, 0
	take := func() {
		if f.park.from[h.key] != (ParkedFrom{}) {
			fromTheMiddle++
		}
		f.unparkDue(h, now)
		var last time.Time // the latest due taken
		for u, p := range parked {
			if !f.park.has(p.fp) {
				taken[u]++
				delete(parked, u)
				if p.due.After(last) {
					last = p.due
				}
			}
		}
		for u, p := range parked {
			if p.due.Before(last) {
				t.Fatalf("%s, due %v, left parked by a take of one due %v", u, p.due.Sub(now), last.Sub(now))
			}
		}
	}
	for range 3000 {
		switch op := rng.IntN(10); {
		case op < 5: // parked, due from a few seconds ago to a few on: many in a second
			u := fmt.Sprintf("http://a.test/%d", next)
			next++
			st, _ := f.add(URLState{URL: u, Due: now})
			h = f.hosts["http://a.test"]
			f.remove(h, st)
			st.Polls, st.Due = 1, now.Add(time.Duration(rng.IntN(8)-3)*time.Second)
			f.reschedule(h, st)
			if fp := urlFingerprint(u); f.park.has(fp) {
				parked[u] = parkedAt{fp, st.Due.Truncate(time.Second)}
			}
		case op < 6:
			if err := f.park.flush(); err != nil {
				t.Fatal(err)
			}
		case op < 9 && h != nil:
			now = now.Add(time.Duration(rng.IntN(3)) * time.Second)
			take()
		}
	}
	if err := f.park.flush(); err != nil {
		t.Fatal(err)
	}
	now = now.Add(time.Hour)
	for i := 0; len(parked) > 0 && i < 1000; i++ {
		take()
	}
	for u := range parked {
		t.Errorf("%s was parked and never taken", u)
	}
	for u, n := range taken {
		if n != 1 {
			t.Errorf("%s taken %d times", u, n)
		}
	}
	if len(taken) < 1000 || fromTheMiddle == 0 {
		t.Errorf("%d URLs parked and taken; %d takes started past the host's first key", len(taken), fromTheMiddle)
	}
}

// A URL queued to be written when a take passes it by (due the same
// second as the one taken, and kept back because the take had its
// number) is below where the take leaves the host's next take to start:
// that start is lowered to it, so the next take finds it once written.
func TestParkedTakeStartsAtAQueuedURLBelowIt(t *testing.T) {
	p := newParking(parkingFrontier(storetest.OpenBadger(t)), 2)
	const host, due = "http://a.test", 1_800_000_000
	park := func(u string, due uint32) ParkedURL {
		s := ParkedURL{Host: host, Due: due, FP: urlFingerprint(host + u), Lambda: -1, State: URLState{URL: host + u, Polls: 1}}
		p.at.Set(s.FP, parkedAt(due, 0))
		p.lower(host, ParkedFrom{s.Due, s.FP})
		p.queue.push(s)
		return s
	}
	// Stored: a, and c due later. Queued: b, due the second a is, with a
	// lower fingerprint, so its key is below a's.
	a := park("/a", due)
	park("/c", due+100)
	if err := p.flush(); err != nil {
		t.Fatal(err)
	}
	var b ParkedURL
	for i := 0; i < 1000 && b.FP == 0; i++ {
		if u := fmt.Sprint("/b", i); urlFingerprint(host+u) < a.FP {
			b = park(u, due)
		}
	}
	stored, queued, _, err := p.takeDue(host, 1, due)
	if err != nil || len(stored) != 1 || stored[0].FP != a.FP || len(queued) != 0 {
		t.Fatalf("the first take: %d stored, %d queued, %v; want the stored one only", len(stored), len(queued), err)
	}
	if err := p.flush(); err != nil {
		t.Fatal(err)
	}
	stored, queued, next, err := p.takeDue(host, 1, due)
	if err != nil || len(stored)+len(queued) != 1 || len(stored) == 1 && stored[0].FP != b.FP {
		t.Fatalf("the second take: %d stored, %d queued (next %d), %v; want the one written since", len(stored), len(queued), next, err)
	}
}

// TestParkedDrawLeavesItsEntryForTheNextWrite checks that a parked URL
// drawn for a sampled poll is read, not moved: its entry stays in the
// store (the crawler's lock waits for no write) until the URL's next
// write deletes it, and meanwhile takes and draws step over it.
func TestParkedDrawLeavesItsEntryForTheNextWrite(t *testing.T) {
	sf := parkingFrontier(storetest.OpenBadger(t))
	f := newFrontier()
	f.park = newParking(sf, 1)
	f.parkError = func(err error) { t.Error(err) }
	f.save = func(*URLState) {}
	base := time.Now().Truncate(time.Second).Add(time.Hour)
	var h *host
	for i := range 6 {
		st, _ := f.add(URLState{URL: fmt.Sprintf("http://a.test/%d", i), Due: base})
		h = f.hosts["http://a.test"]
		f.remove(h, st)
		st.Polls, st.Due = 1, base.Add(time.Duration(i)*time.Second)
		f.reschedule(h, st)
	}
	if err := f.park.flush(); err != nil {
		t.Fatal(err)
	}
	parkedBefore := h.parkedRevisits()
	st := f.drawParked(rand.New(rand.NewPCG(1, 2)))
	if st == nil {
		t.Fatal("no parked URL drawn")
	}
	in, _, at, fp := st.leftEntry()
	if in != leftParked || at != dueSecond(st.Due) {
		t.Fatalf("drawn %s: left %v at %d, want its parked entry at %d", st.URL, in, at, dueSecond(st.Due))
	}
	if _, ok, err := sf.ParkedOne(h.key, at, fp); err != nil || !ok {
		t.Fatalf("the drawn URL's entry is gone from the store (%v): the draw wrote", err)
	}
	if got := h.parkedRevisits(); got != parkedBefore-1 {
		t.Errorf("%d parked after the draw, want %d", got, parkedBefore-1)
	}
	for i := range h.parkedRevisits() {
		if other, ok, err := f.park.nth(h.key, h.parkFit, i); err != nil || !ok || other == fp {
			t.Errorf("nth(%d) = %x, %v, %v: a draw counts the drawn URL's entry", i, other, ok, err)
		}
	}
	if err := sf.SaveFrontier([]URLState{*st}); err != nil { // its next write
		t.Fatal(err)
	}
	if _, ok, err := sf.ParkedOne(h.key, at, fp); err != nil || ok {
		t.Errorf("the drawn URL's entry outlived its next write (%v, %v)", ok, err)
	}
}
