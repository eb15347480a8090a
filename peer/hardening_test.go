package peer

import (
	"context"
	"errors"
	"fmt"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/cocrawl/cocrawl/crawl"
	"github.com/cocrawl/cocrawl/protocol"
	"github.com/cocrawl/cocrawl/webevents"
)

// Issue 18, item 6: a peer's repository is kept away from polling only on
// the peer's own host, and a new one replaces the old.
func TestRepositoryExclusion(t *testing.T) {
	cfg := Config{Addr: "self.invalid:8470"}
	cfg.Crawl.Seeds = []string{"http://victim.example/", "http://p.example/"}
	p, err := New(cfg, Stores{Events: webevents.NewMemStore(), Frontier: &crawl.MemFrontier{}, Peers: &MemPeers{}})
	if err != nil {
		t.Fatal(err)
	}
	defer p.Close()
	polled := func(u string) bool { return p.crawler.Recheck(u) }

	p.excludeRepository("http://evil.example/robots.shr", "http://evil.example/robots.shr", "http://victim.example/")
	if !polled("http://victim.example/page") {
		t.Error("a peer took another site out of polling by naming it as its repository")
	}
	const row = "http://p.example/robots.shr"
	p.excludeRepository(row, row, "http://p.example/share/")
	if polled("http://p.example/share/20000.dat") {
		t.Error("a peer's own repository is polled")
	}
	p.excludeRepository(row, row, "http://p.example/share2/")
	if !polled("http://p.example/share/x.html") || polled("http://p.example/share2/20000.dat") {
		t.Error("a peer's new repository did not replace its old one")
	}
	p.excludedMu.Lock()
	n := len(p.excluded)
	p.excludedMu.Unlock()
	if n != 2 { // this peer's own, and p.example's
		t.Errorf("%d exclusions kept, want 2", n)
	}
}

// Issue 18, item 2: at most half the slots merge at once, so slow peers
// cannot take every slot from polling.
func TestMergesTakeHalfTheSlots(t *testing.T) {
	cfg := Config{Addr: "self.invalid:8470", Slots: 4}
	cfg.Crawl.Seeds = []string{"http://a.example/"}
	p, err := New(cfg, Stores{Events: webevents.NewMemStore(), Frontier: &crawl.MemFrontier{}, Peers: &MemPeers{}})
	if err != nil {
		t.Fatal(err)
	}
	defer p.Close()
	if !p.mergeSlot() || !p.mergeSlot() {
		t.Fatal("two of four slots could not merge")
	}
	if p.mergeSlot() {
		t.Fatal("a third of four slots merged")
	}
	p.merging.Add(-1)
	if !p.mergeSlot() {
		t.Fatal("a merge place given back was not taken again")
	}
}

// Issue 18, item 4: a lifecycle violation in a merged batch is polled,
// not only counted (the crawler is asked to look at the URL now).
func TestViolationsArePolled(t *testing.T) {
	cfg := Config{Addr: "self.invalid:8470"}
	cfg.Crawl.Seeds = []string{"http://a.example/"}
	p, err := New(cfg, Stores{Events: webevents.NewMemStore(), Frontier: &crawl.MemFrontier{}, Peers: &MemPeers{}})
	if err != nil {
		t.Fatal(err)
	}
	defer p.Close()
	if _, err := p.crawler.Load(); err != nil {
		t.Fatal(err)
	}
	before := p.crawler.Stats().Known
	p.onMerged("http://b.example/robots.shr", nil, webevents.MergeResult{Polls: []string{"http://a.example/violated"}})
	if got := p.crawler.Stats().Known; got != before+1 {
		t.Fatalf("frontier %d URLs after a violation, %d before: the URL was not asked for", got, before)
	}
}

// Issue 18, item 5: identities that fill the peer table make room for a
// newcomer once they have had their chance and given nothing; static
// peers and peers that gave events stay.
func TestSybilsCannotLockOutNewcomers(t *testing.T) {
	s := newPeerSet(MergeSchedule{MergeMin: time.Second, MergeMax: time.Minute})
	t0 := time.Unix(1_700_000_000, 0)
	s.add("http://static.example/robots.shr", "static", t0)
	s.next(t0)
	s.done("http://static.example/robots.shr", mergeOutcome{err: errors.New("down")}, t0)
	useful := sybilRow("useful")
	s.addP2P(useful, "useful", nil, "dht", t0)
	s.next(t0)
	s.done(useful, mergeOutcome{gained: 7}, t0)
	for i := 0; len(s.rows) < maxPeers; i++ {
		id := fmt.Sprint("sybil-", i)
		if _, ok := s.addP2P(sybilRow(id), id, nil, "dht", t0.Add(time.Duration(i)*time.Millisecond)); !ok {
			t.Fatalf("table refused row %d of %d", len(s.rows), maxPeers)
		}
	}
	if _, ok := s.addP2P(sybilRow("early"), "early", nil, "dht", t0.Add(time.Minute)); ok {
		t.Fatal("a full table took a newcomer before anyone's grace ran out")
	}
	_, ok := s.addP2P(sybilRow("newcomer"), "newcomer", nil, "dht", t0.Add(evictGrace+time.Minute))
	if !ok || len(s.rows) != maxPeers {
		t.Fatalf("newcomer admitted %v, %d rows", ok, len(s.rows))
	}
	if gone := s.takeEvicted(); len(gone) != 1 || gone[0] != sybilRow("sybil-0") {
		t.Fatalf("evicted %v, want the oldest useless row", gone)
	}
	for _, keep := range []string{"http://static.example/robots.shr", useful} {
		if s.rows[keep] == nil {
			t.Errorf("%s was evicted", keep)
		}
	}
}

func sybilRow(id string) string { return "libp2p://" + id + "/robots.shr" }

// failingStore is a store whose merges fail: a full disk.
type failingStore struct{ *webevents.MemStore }

func (failingStore) Merge([]webevents.Event, *webevents.Cursor) (webevents.MergeResult, error) {
	return webevents.MergeResult{}, errors.New("no space left on device")
}

// Issue 18, item 10 (in part): when this peer's store fails during a
// merge, the peer merged from is not blamed (not backed off), and the
// failure shows as the store's own state.
func TestStoreFailureIsNotThePeers(t *testing.T) {
	sharer := webevents.NewMemStore()
	now := time.Now()
	sharer.Record([]webevents.Event{{URL: "http://a.example/x", CID: "s:1 S", Stat: webevents.Create, LMD: now.Unix() - 60, LPD: now.Unix() - 30, Size: 1}})
	srv, err := protocol.NewServer(sharer, protocol.ServerOptions{Control: protocol.ShareControl{Crawler: "s:1 S"}})
	if err != nil {
		t.Fatal(err)
	}
	ts := httptest.NewServer(srv)
	defer ts.Close()
	shr := ts.URL + "/robots.shr"
	cfg := Config{Addr: "self.invalid:8470", Peers: []string{shr}, AllowPrivate: true}
	cfg.Crawl.Seeds = []string{"http://a.example/"}
	p, err := New(cfg, Stores{Events: failingStore{webevents.NewMemStore()}, Frontier: &crawl.MemFrontier{}, Peers: &MemPeers{}})
	if err != nil {
		t.Fatal(err)
	}
	defer p.Close()
	if did, _ := p.tryMerge(context.Background(), "merge"); !did {
		t.Fatal("no merge was tried")
	}
	for _, r := range p.Peers() {
		if r.URL == shr && (r.Consecutive != 0 || r.Failures != 0) {
			t.Errorf("the peer was blamed for this peer's store: %+v", r)
		}
	}
	if st := p.Status(false); st.StoreFailures != 1 || !strings.Contains(st.StoreError, "no space") {
		t.Errorf("store failure not shown: %d, %q", st.StoreFailures, st.StoreError)
	}
}

// Issue 18, item 11 (in part): a running peer drops event logs older than
// KeepDays and the states of URLs deleted before them.
func TestRetention(t *testing.T) {
	st := webevents.NewMemStore()
	today := webevents.Today(time.Now())
	old, recent := today-40, today-2
	ev := func(u string, s webevents.Stat, day int64) webevents.Event {
		lpd := webevents.DayStart(day) + 60
		return webevents.Event{URL: u, CID: "c", Stat: s, LMD: lpd - 60, LPD: lpd}
	}
	if err := st.Record([]webevents.Event{ev("http://a.example/old", webevents.Delete, old), ev("http://a.example/kept", webevents.Create, old),
		ev("http://a.example/new", webevents.Create, recent)}); err != nil {
		t.Fatal(err)
	}
	cfg := Config{Addr: "self.invalid:8470", KeepDays: 30}
	cfg.Crawl.Seeds = []string{"http://a.example/"}
	p, err := New(cfg, Stores{Events: st, Frontier: &crawl.MemFrontier{}, Peers: &MemPeers{}})
	if err != nil {
		t.Fatal(err)
	}
	defer p.Close()
	ctx, cancel := context.WithCancel(context.Background())
	cancel() // one pass
	p.retain(ctx)
	if _, ok, _ := st.DayInfo(old); ok {
		t.Error("a day older than KeepDays was kept")
	}
	if _, ok, _ := st.DayInfo(recent); !ok {
		t.Error("a recent day was dropped")
	}
	if _, ok, _ := st.Get("http://a.example/old"); ok {
		t.Error("a URL deleted 40 days ago is still held")
	}
	if _, ok, _ := st.Get("http://a.example/kept"); !ok {
		t.Error("a live URL polled 40 days ago was dropped")
	}
}
