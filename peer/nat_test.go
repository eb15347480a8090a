package peer

import (
	"crypto/sha256"
	"fmt"
	"net"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/libp2p/go-libp2p"
	"github.com/libp2p/go-libp2p/core/event"
	"github.com/libp2p/go-libp2p/core/network"
	"github.com/libp2p/go-libp2p/p2p/host/eventbus"
	"github.com/libp2p/go-libp2p/p2p/protocol/holepunch"
	"github.com/libp2p/go-libp2p/p2p/transport/quicreuse"
	"github.com/marcopolo/simnet"

	"github.com/cocrawl/cocrawl/peer/p2p"
	"github.com/cocrawl/cocrawl/webevents"
)

// simulatedQUIC puts a host's QUIC on a simulated UDP network (the
// pattern of go-libp2p's own hole-punching tests): packets go through
// router, which drops those sent to a node that is not public unless that
// node sent to their source first, as a NAT's mapping does. Nothing goes
// on a real network.
func simulatedQUIC(public bool, router *simnet.SimpleFirewallRouter) libp2p.Option {
	src := &fixedSource{}
	return libp2p.QUICReuse(quicreuse.NewConnManager,
		quicreuse.OverrideSourceIPSelector(func() (quicreuse.SourceIPSelector, error) { return src, nil }),
		quicreuse.OverrideListenUDP(func(_ string, addr *net.UDPAddr) (net.PacketConn, error) {
			src.ip = addr.IP
			if public {
				router.SetAddrPubliclyReachable(addr)
			}
			c := simnet.NewSimConn(addr)
			c.SetUpPacketReceiver(router) // the conn's packets go out through the router
			router.AddNode(addr, c)       // and the router's come in to it
			return c, nil
		}))
}

// fixedSource answers the QUIC transport's question of which local IP to
// send from: the one simulated address.
type fixedSource struct{ ip net.IP }

func (s *fixedSource) PreferredSourceIPForDestination(*net.UDPAddr) (net.IP, error) { return s.ip, nil }

// Two peers behind NAT, given only a public peer that is bootstrap and
// relay, find each other in the community DHT, connect through the relay,
// punch a hole to a direct connection, and merge each other's day files
// over it. The DHT serves on the public peer only.
func TestNATedPeersPunchAHoleAndMerge(t *testing.T) {
	router := &simnet.SimpleFirewallRouter{}
	relay := startMemPeer(t, testConfig(nil, "mirror"), p2p.Config{Community: "home", Reachability: p2p.ReachabilityPublic, RelayService: true,
		ListenAddrs: []string{"/ip4/1.2.0.1/udp/8000/quic-v1"}, Extra: []libp2p.Option{simulatedQUIC(true, router)}})
	relayAddr := relay.P2PAddrs()[0]
	home := func(ip string) *memPeer {
		// A punch that fails on a busy machine is tried again soon, not
		// after the default 10 minutes.
		return startMemPeer(t, testConfig(nil, "mirror"), p2p.Config{Community: "home", Reachability: p2p.ReachabilityPrivate,
			Bootstrap: []string{relayAddr}, Relays: []string{relayAddr}, NoPunchFor: 3 * time.Second,
			ListenAddrs: []string{"/ip4/" + ip + "/udp/8000/quic-v1"}, Extra: []libp2p.Option{simulatedQUIC(false, router)}})
	}
	a, b := home("2.2.0.1"), home("2.2.0.2")
	t.Cleanup(func() { stopAll([]*memPeer{a, b, relay}) })
	// Each punches holes once it knows an address of its own to offer
	// (the relay tells it the one it sees).
	waitFor(t, 30*time.Second, "the hole-punching services", func() bool {
		return slices.Contains(nodeOf(a).Host().Mux().Protocols(), holepunch.Protocol) && slices.Contains(nodeOf(b).Host().Mux().Protocols(), holepunch.Protocol)
	})
	record := func(p *memPeer, from, n int) {
		now := time.Now().Unix()
		var evs []webevents.Event
		for j := from; j < from+n; j++ {
			evs = append(evs, webevents.Event{URL: fmt.Sprintf("http://site.example/%s/%d", p.PeerID(), j), Stat: webevents.Create, LMD: now - 60, LPD: now, CID: p.CID(), Size: 10})
		}
		if err := p.store.Record(evs); err != nil {
			t.Fatal(err)
		}
	}
	record(a, 0, 20)
	record(b, 0, 20)
	start := time.Now()
	direct := func(p, other *memPeer) bool {
		return strings.HasPrefix(p.node.ConnectionOf(mustDecode(t, other.PeerID())), "direct")
	}
	waitFor(t, 60*time.Second, "each NATed peer holds the other's events, and a direct connection", func() bool {
		return cids(t, a.store)[b.CID()] == 20 && cids(t, b.store)[a.CID()] == 20 && direct(a, b) && direct(b, a)
	})
	took := time.Since(start)
	// A day file goes over the direct connection: new records arrive with
	// no merge through the relay.
	relayedBefore := b.Status(false).NAT.RelayedMerges
	record(a, 20, 20)
	waitFor(t, 30*time.Second, "the new records over the direct connection", func() bool { return cids(t, b.store)[a.CID()] == 40 })
	if st := b.Status(false).NAT; st.RelayedMerges != relayedBefore || !direct(b, a) {
		t.Errorf("b merged through the relay after the hole punch: %+v", st)
	}
	for _, p := range []*memPeer{a, b} {
		st := p.Status(false).NAT
		if st == nil || st.Reachability != "private" || st.DHTMode != "client" || len(st.Relays) != 1 || st.Relays[0] != relay.PeerID() {
			t.Errorf("a home peer's NAT status %+v", st)
		}
	}
	punches := a.Status(false).NAT.HolePunches.Successes + b.Status(false).NAT.HolePunches.Successes
	if punches == 0 {
		t.Errorf("no hole punch succeeded: %+v, %+v", a.Status(false).NAT.HolePunches, b.Status(false).NAT.HolePunches)
	}
	if st := relay.Status(false).NAT; st.DHTMode != "server" || st.Reachability != "public" || !st.RelayService {
		t.Errorf("the relay's NAT status %+v", st)
	}
	for _, r := range b.Peers() {
		if r.PeerID == a.PeerID() && !strings.HasPrefix(r.Connection, "direct") {
			t.Errorf("b's table shows its connection to a as %q", r.Connection)
		}
	}
	t.Logf("merged both ways, with a direct connection, in %v; %d hole punches succeeded", took.Round(time.Millisecond), punches)
}

// With reachability auto, the DHT serves while AutoNAT has no verdict and
// follows it once it has one.
func TestDHTModeFollowsReachability(t *testing.T) {
	p := startMemPeer(t, testConfig(nil, "mirror"), p2p.Config{Community: "auto"})
	if !nodeOf(p).DHTServing() {
		t.Fatal("before any verdict the DHT is a client, want server")
	}
	em, err := nodeOf(p).Host().EventBus().Emitter(new(event.EvtLocalReachabilityChanged), eventbus.Stateful)
	if err != nil {
		t.Fatal(err)
	}
	defer em.Close()
	for _, step := range []struct {
		reach  network.Reachability
		server bool
		name   string
	}{{network.ReachabilityPrivate, false, "private"}, {network.ReachabilityPublic, true, "public"}} {
		if err := em.Emit(event.EvtLocalReachabilityChanged{Reachability: step.reach}); err != nil {
			t.Fatal(err)
		}
		waitFor(t, 10*time.Second, "the DHT mode to follow "+step.name, func() bool {
			return nodeOf(p).DHTServing() == step.server && p.Status(false).NAT.Reachability == step.name
		})
	}
}

// When no hole can be punched, a NATed peer's day file still travels
// through the relay, in pieces: each relayed connection carries what the
// relay allows (here 64 KiB a direction, of which the new connection's
// handshakes, identify and the robots.shr take their share), the cursor
// keeps what arrived, and the next merge asks for the rest with Range.
func TestMergeThroughARelayInPieces(t *testing.T) {
	router := &simnet.SimpleFirewallRouter{}
	relay := startMemPeer(t, testConfig(nil, "mirror"), p2p.Config{Community: "far", Reachability: p2p.ReachabilityPublic, RelayService: true,
		RelayLimits: p2p.RelayLimits{Data: 64 << 10}, ListenAddrs: []string{"/ip4/1.2.0.1/udp/8000/quic-v1"}, Extra: []libp2p.Option{simulatedQUIC(true, router)}})
	relayAddr := relay.P2PAddrs()[0]
	// Merges a second apart: go-libp2p opens at most one new connection
	// from an IP (the relay's, for every relayed one) each 5 s after a
	// burst, and faster attempts only use the budget up.
	home := func(ip, mode string) *memPeer {
		cfg := testConfig(nil, mode)
		cfg.Schedule = MergeSchedule{MergeMin: time.Second, MergeMax: 2 * time.Second, BackoffBase: time.Second, BackoffMax: 2 * time.Second}
		return startMemPeer(t, cfg, p2p.Config{Community: "far", Reachability: p2p.ReachabilityPrivate, NoHolePunching: true,
			Bootstrap: []string{relayAddr}, Relays: []string{relayAddr},
			ListenAddrs: []string{"/ip4/" + ip + "/udp/8000/quic-v1"}, Extra: []libp2p.Option{simulatedQUIC(false, router)}})
	}
	a, b := home("2.2.0.1", "altruistic"), home("2.2.0.2", "mirror")
	t.Cleanup(func() { stopAll([]*memPeer{a, b, relay}) })
	const n = 3000
	now := time.Now().Unix()
	var evs []webevents.Event
	for j := range n {
		evs = append(evs, webevents.Event{URL: fmt.Sprintf("http://site.example/%d/%x", j, j*7919), Stat: webevents.Create,
			LMD: now - int64(j%3600), LPD: now, CID: a.CID(), Size: int64(j), Digest: fmt.Sprintf("sha256:%x", sha256.Sum256([]byte{byte(j), byte(j >> 8)}))})
	}
	if err := a.store.Record(evs); err != nil {
		t.Fatal(err)
	}
	start := time.Now()
	waitFor(t, 60*time.Second, "b holds a's records, through the relay", func() bool { return cids(t, b.store)[a.CID()] == n })
	took := time.Since(start)
	st := b.Status(false).NAT
	conn := b.node.ConnectionOf(mustDecode(t, a.PeerID()))
	t.Logf("%d records through a relay of 64 KiB a connection in %v: %d merges, %d bytes; connection %q", n, took.Round(time.Millisecond), st.RelayedMerges, st.RelayedBytes, conn)
	if st.RelayedMerges < 2 || st.HolePunches.Attempts != 0 {
		t.Errorf("NAT status %+v: want the file in several relayed merges, no hole punch", st)
	}
	if !strings.HasPrefix(conn, "relayed via "+relay.PeerID()) && conn != "" {
		t.Errorf("b's connection to a is %q", conn)
	}
}
