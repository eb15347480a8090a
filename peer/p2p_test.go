package peer

import (
	"context"
	"fmt"
	"net/http"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/libp2p/go-libp2p"
	lpeer "github.com/libp2p/go-libp2p/core/peer"
	libp2phttp "github.com/libp2p/go-libp2p/p2p/http"

	"github.com/cocrawl/cocrawl/crawl"
	"github.com/cocrawl/cocrawl/peer/p2p"
	"github.com/cocrawl/cocrawl/webevents"
)

// memPeer is a peer with in-memory stores, reachable only over libp2p
// (no HTTP listener): communities of many are cheap to start.
type memPeer struct {
	*Peer
	store *webevents.MemStore
	stop  func()
}

var memPeerSeq int

// nodeOf is a peer's libp2p node, for what the tests look at below the
// interface the peer uses.
func nodeOf(p *memPeer) *p2p.Node { return p.node.(*p2p.Node) }

func startMemPeer(t testing.TB, cfg Config, nc p2p.Config) *memPeer {
	t.Helper()
	if nc.KeyFile == "" {
		nc.KeyFile = filepath.Join(t.TempDir(), "identity.key")
	}
	nc.AllowPrivate = true
	if nc.FindEvery == 0 {
		nc.FindEvery, nc.FindMax = 100*time.Millisecond, time.Second
	}
	cfg.P2P = &nc
	if cfg.Addr == "" {
		memPeerSeq++
		cfg.Addr = fmt.Sprintf("p2p-only-%d.invalid:0", memPeerSeq)
	}
	st := webevents.NewMemStore()
	p, err := New(cfg, Stores{Events: st, Frontier: &crawl.MemFrontier{}, Peers: &MemPeers{}})
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- p.Run(ctx) }()
	var once sync.Once
	mp := &memPeer{Peer: p, store: st}
	mp.stop = func() {
		once.Do(func() {
			cancel()
			if err := <-done; err != nil {
				t.Errorf("peer: %v", err)
			}
		})
	}
	t.Cleanup(mp.stop)
	return mp
}

// knows counts how many of others are in p's peer table.
func knows(p *memPeer, others []*memPeer) int {
	ids := map[string]bool{}
	for _, r := range p.Peers() {
		ids[r.PeerID] = true
	}
	n := 0
	for _, o := range others {
		if o != p && ids[o.PeerID()] {
			n++
		}
	}
	return n
}

// stopAll stops peers at once: one by one, each would wait for merges
// from peers already gone.
func stopAll(ps []*memPeer) {
	var wg sync.WaitGroup
	for _, p := range ps {
		wg.Add(1)
		go func() { defer wg.Done(); p.stop() }()
	}
	wg.Wait()
}

// community starts n sharing peers in one community, all joined through
// the first.
func p2pCommunity(t testing.TB, n int, name string, mode string) []*memPeer {
	t.Helper()
	boot := startMemPeer(t, testConfig(nil, mode), p2p.Config{Community: name})
	ps := []*memPeer{boot}
	for range n - 1 {
		ps = append(ps, startMemPeer(t, testConfig(nil, mode), p2p.Config{Community: name, Bootstrap: boot.P2PAddrs()[:1]}))
	}
	t.Cleanup(func() { stopAll(ps) })
	return ps
}

func TestCommunityOfTwentyFindsItself(t *testing.T) {
	if testing.Short() {
		t.Skip("20 libp2p hosts")
	}
	ps := p2pCommunity(t, 20, "twenty", "sharing-hybrid")
	start := time.Now()
	waitFor(t, 60*time.Second, "every peer knows at least 90% of the others", func() bool {
		for _, p := range ps {
			if knows(p, ps) < 18 { // 90% of 19, rounded up
				return false
			}
		}
		return true
	})
	least := 19
	for _, p := range ps {
		least = min(least, knows(p, ps))
		if st := p.Status(false); st.PeersKnown < 18 {
			t.Fatalf("status says %d peers known", st.PeersKnown)
		}
	}
	t.Logf("20 peers: each knows at least %d of 19 after %v", least, time.Since(start).Round(time.Millisecond))
}

func TestCommunitiesNeverMix(t *testing.T) {
	a := p2pCommunity(t, 3, "alpha", "sharing-hybrid")
	// Beta's newcomer is even given alpha's bootstrap node besides its own.
	b := p2pCommunity(t, 2, "beta", "sharing-hybrid")
	b = append(b, startMemPeer(t, testConfig(nil, "sharing-hybrid"),
		p2p.Config{Community: "beta", Bootstrap: []string{b[0].P2PAddrs()[0], a[0].P2PAddrs()[0]}}))
	waitFor(t, 30*time.Second, "each community found itself", func() bool {
		for _, c := range [][]*memPeer{a, b} {
			for _, p := range c {
				if knows(p, c) < len(c)-1 {
					return false
				}
			}
		}
		return true
	})
	time.Sleep(2 * time.Second) // give a leak time to show
	for _, pair := range [][2][]*memPeer{{a, b}, {b, a}} {
		for _, p := range pair[0] {
			if n := knows(p, pair[1]); n != 0 {
				t.Fatalf("a peer of one community knows %d of the other", n)
			}
		}
	}
}

// A peer with no HTTP listener shares over libp2p: a mirror that found it
// in the DHT holds its events.
func TestMergeOverLibp2pWithoutHTTP(t *testing.T) {
	w := startWeb(t, 1)
	src := startMemPeer(t, testConfig(w.Seeds(), "altruistic"), p2p.Config{Community: "nat"})
	mirror := startMemPeer(t, testConfig(nil, "mirror"), p2p.Config{Community: "nat", Bootstrap: src.P2PAddrs()[:1]})
	waitFor(t, 30*time.Second, "the mirror holds the sharer's events, merged over libp2p", func() bool {
		return cids(t, mirror.store)[src.CID()] >= 10
	})
	row := peerRow(&testPeer{Peer: mirror.Peer}, p2pURL(lpeer.ID(mustDecode(t, src.PeerID()))))
	if row.Source != "dht" || row.Merges == 0 || !row.Healthy() || row.PeerID != src.PeerID() {
		t.Fatalf("the mirror's row for the sharer: %+v", row)
	}
	st := mirror.Status(false)
	if st.Polls != 0 || st.PeerID == "" || len(st.P2PAddrs) == 0 || !strings.HasSuffix(st.P2PAddrs[0], "/p2p/"+st.PeerID) || st.PeersKnown != 1 {
		t.Fatalf("mirror status %+v", st)
	}
}

func mustDecode(t *testing.T, s string) lpeer.ID {
	id, err := lpeer.Decode(s)
	if err != nil {
		t.Fatal(err)
	}
	return id
}

func TestRestartKeepsIdentity(t *testing.T) {
	key := filepath.Join(t.TempDir(), "identity.key")
	p := startMemPeer(t, testConfig(nil, "mirror"), p2p.Config{KeyFile: key, NoDHT: true})
	id := p.PeerID()
	p.stop()
	again := startMemPeer(t, testConfig(nil, "mirror"), p2p.Config{KeyFile: key, NoDHT: true})
	if again.PeerID() != id || id == "" {
		t.Fatalf("peer ID %q after restart, was %q", again.PeerID(), id)
	}
}

// A robots.shr served over libp2p that names another peer's ID is refused
// before anything is merged.
func TestPeerIDFromTheConnectionNotTheFile(t *testing.T) {
	liar, err := libp2p.New(libp2p.ListenAddrStrings("/ip4/127.0.0.1/tcp/0"))
	if err != nil {
		t.Fatal(err)
	}
	defer liar.Close()
	victim, err := libp2p.New(libp2p.ListenAddrStrings("/ip4/127.0.0.1/tcp/0"))
	if err != nil {
		t.Fatal(err)
	}
	defer victim.Close()
	lh := &libp2phttp.Host{StreamHost: liar}
	lh.SetHTTPHandlerAtPath(p2p.ShareProtocol, "/", http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path == "/robots.shr" {
			fmt.Fprintf(w, "version: 1.1\ncrawler: liar.example:80 x/1\nrepository: /share/\npeer-id: %s\n", victim.ID())
			return
		}
		fmt.Fprintf(w, "url: http://stolen.example/\nsize: 1\nlmd: 1700000000\nlpd: 1700000000\ncid: x:1 y\nstat: C\n\n")
	}))
	go lh.Serve()
	defer lh.Close()

	m := startMemPeer(t, testConfig(nil, "mirror"), p2p.Config{NoDHT: true})
	nodeOf(m).Learn(lpeer.AddrInfo{ID: liar.ID(), Addrs: liar.Addrs()}, "dht")
	waitFor(t, 10*time.Second, "the merge from the liar failed", func() bool {
		return peerRow(&testPeer{Peer: m.Peer}, p2pURL(liar.ID())).Failures > 0
	})
	row := peerRow(&testPeer{Peer: m.Peer}, p2pURL(liar.ID()))
	if !strings.Contains(row.LastError, "another peer's ID") {
		t.Fatalf("row %+v", row)
	}
	if _, ok, _ := m.store.Get("http://stolen.example/"); ok {
		t.Fatal("an event from the liar was merged")
	}
}

// A community peer that goes away is noticed by failed merges and backed
// off, and stays in the table.
func TestVanishedPeerIsBackedOff(t *testing.T) {
	w := startWeb(t, 1)
	src := startMemPeer(t, testConfig(w.Seeds(), "altruistic"), p2p.Config{Community: "gone"})
	mirror := startMemPeer(t, testConfig(nil, "mirror"), p2p.Config{Community: "gone", Bootstrap: src.P2PAddrs()[:1]})
	key := p2pURL(mustDecode(t, src.PeerID()))
	row := func() Record { return peerRow(&testPeer{Peer: mirror.Peer}, key) }
	waitFor(t, 20*time.Second, "the mirror merged from the sharer", func() bool { return row().Merges > 0 })
	src.stop()
	waitFor(t, 20*time.Second, "the mirror noticed the sharer is gone", func() bool { return row().Consecutive >= 2 })
	r := row()
	if r.Healthy() || !r.NextDue.After(r.LastAttempt) || r.LastError == "" {
		t.Fatalf("row after the peer left: %+v", r)
	}
	if st := mirror.Status(false); st.PeersKnown != 1 || st.PeersHealthy != 0 {
		t.Fatalf("status: %d known, %d healthy", st.PeersKnown, st.PeersHealthy)
	}
}
