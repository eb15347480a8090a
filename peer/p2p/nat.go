package p2p

import (
	"context"
	"log/slog"
	"net"
	"slices"
	"sync"
	"time"

	"github.com/libp2p/go-libp2p"
	dht "github.com/libp2p/go-libp2p-kad-dht"
	"github.com/libp2p/go-libp2p/core/event"
	"github.com/libp2p/go-libp2p/core/host"
	"github.com/libp2p/go-libp2p/core/network"
	"github.com/libp2p/go-libp2p/core/peer"
	"github.com/libp2p/go-libp2p/p2p/host/autorelay"
	"github.com/libp2p/go-libp2p/p2p/net/swarm"
	relayv2 "github.com/libp2p/go-libp2p/p2p/protocol/circuitv2/relay"
	"github.com/libp2p/go-libp2p/p2p/protocol/holepunch"
	ma "github.com/multiformats/go-multiaddr"
	manet "github.com/multiformats/go-multiaddr/net"
)

// Reachability settings of Config.Reachability.
const (
	// ReachabilityAuto lets AutoNAT (v1 and v2) find out; the DHT serves
	// until it says private.
	ReachabilityAuto = "auto"
	// ReachabilityPublic: the peer is reachable from outside (a public
	// address, a forwarded port). The DHT serves.
	ReachabilityPublic = "public"
	// ReachabilityPrivate: the peer is behind NAT. The DHT is a client
	// only, AutoRelay reserves slots on relays at once, and peers reach
	// it through them, then directly by hole punching.
	ReachabilityPrivate = "private"
)

// RelayHop is circuit relay v2's hop protocol: the peers that offer it
// are relays.
const RelayHop = "/libp2p/circuit/relay/0.2.0/hop"

// RelayLimits bound what a peer offering itself as a relay
// (Config.RelayService) spends on others: relayed connections carry
// little and last briefly, enough to coordinate a hole punch or carry a
// merge in pieces (spec 7.6).
type RelayLimits struct {
	Reservations int           // peers holding a slot at once; default 128
	Circuits     int           // relayed connections at once per peer; default 16
	Duration     time.Duration // of one relayed connection; default 2 min
	Data         int64         // bytes per direction of one relayed connection; default 128 KiB
}

func (l *RelayLimits) defaults() {
	if l.Reservations <= 0 {
		l.Reservations = 128
	}
	if l.Circuits <= 0 {
		l.Circuits = 16
	}
	if l.Duration <= 0 {
		l.Duration = 2 * time.Minute
	}
	if l.Data <= 0 {
		l.Data = 128 << 10
	}
}

// natOptions are the libp2p options of reachability, relays and hole
// punching; community is where AutoRelay finds relays when no static ones
// are given.
func natOptions(cfg *Config, tr *natTracker, community func(ctx context.Context, num int) <-chan peer.AddrInfo) ([]libp2p.Option, error) {
	var opts []libp2p.Option
	switch cfg.Reachability {
	case ReachabilityPublic:
		opts = append(opts, libp2p.ForceReachabilityPublic())
	case ReachabilityPrivate:
		opts = append(opts, libp2p.ForceReachabilityPrivate())
	case ReachabilityAuto:
		// v2 tests each address; v1, which the DHT's mode follows, asks
		// peers to dial back. Every peer answers both, so a community
		// tells its members whether they are reachable.
		opts = append(opts, libp2p.EnableAutoNATv2(), libp2p.EnableNATService())
	default:
		return nil, configErrorf("p2p: reachability %q: use auto, public or private", cfg.Reachability)
	}
	if cfg.RelayService {
		l := cfg.RelayLimits
		l.defaults()
		res := relayv2.DefaultResources()
		res.MaxReservations = l.Reservations
		res.MaxCircuits = l.Circuits
		res.Limit = &relayv2.RelayLimit{Duration: l.Duration, Data: l.Data}
		opts = append(opts, libp2p.EnableRelayService(relayv2.WithResources(res)))
	}
	var static []peer.AddrInfo
	for _, s := range cfg.Relays {
		ai, err := peer.AddrInfoFromString(s)
		if err != nil {
			return nil, configErrorf("p2p: relay %q: %w (want a multiaddr ending in /p2p/<peer-id>)", s, err)
		}
		static = append(static, *ai)
	}
	arOpts := []autorelay.Option{autorelay.WithBootDelay(0), autorelay.WithMinInterval(10 * time.Second)}
	if len(static) > 0 {
		opts = append(opts, libp2p.EnableAutoRelayWithStaticRelays(static, arOpts...))
	} else if !cfg.NoDHT {
		opts = append(opts, libp2p.EnableAutoRelayWithPeerSource(community, arOpts...))
	}
	if !cfg.NoHolePunching {
		opts = append(opts, libp2p.EnableHolePunching(holepunch.WithTracer(tr)))
	}
	return opts, nil
}

// dhtMode is the DHT mode a reachability setting asks for.
func dhtMode(reachability string) dht.ModeOpt {
	switch reachability {
	case ReachabilityPublic:
		return dht.ModeServer
	case ReachabilityPrivate:
		return dht.ModeClient
	}
	// Server while unknown: AutoNAT tests public addresses only, so on a
	// LAN or loopback it never decides, and a community of clients has no
	// routing tables (kad-dht #569).
	return dht.ModeAutoServer
}

// relaysFrom offers AutoRelay the connected peers that serve the relay
// hop protocol, the community's public peers with --relay-service.
func relaysFrom(h func() host.Host) func(ctx context.Context, num int) <-chan peer.AddrInfo {
	return func(ctx context.Context, num int) <-chan peer.AddrInfo {
		out := make(chan peer.AddrInfo, num)
		defer close(out)
		hh := h()
		if hh == nil {
			return out
		}
		for _, id := range hh.Network().Peers() {
			if len(out) == num {
				break
			}
			if ok, err := hh.Peerstore().SupportsProtocols(id, RelayHop); err == nil && len(ok) > 0 {
				out <- peer.AddrInfo{ID: id, Addrs: hh.Peerstore().Addrs(id)}
			}
		}
		return out
	}
}

// natTracker follows what the NAT machinery does: reachability verdicts,
// hole punches, the peers a hole punch connected.
type natTracker struct {
	log            *slog.Logger
	logVerdicts    bool // AutoNAT decides (not set by hand nor at start): its verdicts are logged
	mu             sync.Mutex
	reach          network.Reachability
	reachable      []string // addresses AutoNAT v2 found reachable
	unreachable    []string
	punches        HolePunchStats
	lastPunchError string
	punched        map[peer.ID]bool // peers whose direct connection a hole punch made
}

// HolePunchStats counts DCUtR hole punches (as the side that dials).
type HolePunchStats struct {
	Attempts    int64 `json:"attempts"`     // hole punches started
	Successes   int64 `json:"successes"`    // that ended with a direct connection
	Failures    int64 `json:"failures"`     // that ended without
	DirectDials int64 `json:"direct_dials"` // direct dials tried first, before punching
	// ProtocolErrors are coordinations that failed before a punch (the
	// other side gone, or no public address to offer).
	ProtocolErrors int64  `json:"protocol_errors"`
	LastError      string `json:"last_error,omitempty"`
}

func newNATTracker(lg *slog.Logger, logVerdicts bool) *natTracker {
	return &natTracker{log: lg, logVerdicts: logVerdicts, punched: map[peer.ID]bool{}}
}

// Trace is holepunch.EventTracer.
func (t *natTracker) Trace(evt *holepunch.Event) {
	t.mu.Lock()
	defer t.mu.Unlock()
	switch e := evt.Evt.(type) {
	case *holepunch.StartHolePunchEvt:
		t.punches.Attempts++
	case *holepunch.EndHolePunchEvt:
		if e.Success {
			t.punches.Successes++
			t.punched[evt.Remote] = true
		} else {
			t.punches.Failures++
		}
	case *holepunch.DirectDialEvt:
		t.punches.DirectDials++
	case *holepunch.ProtocolErrorEvt:
		t.punches.ProtocolErrors++
		t.lastPunchError = e.Error
	}
}

// watch follows the host's reachability events until ctx ends.
func (t *natTracker) watch(ctx context.Context, h host.Host) error {
	sub, err := h.EventBus().Subscribe([]any{new(event.EvtLocalReachabilityChanged), new(event.EvtHostReachableAddrsChanged)})
	if err != nil {
		return err
	}
	go func() {
		defer sub.Close()
		for {
			select {
			case <-ctx.Done():
				return
			case e, ok := <-sub.Out():
				if !ok {
					return
				}
				t.mu.Lock()
				switch e := e.(type) {
				case event.EvtLocalReachabilityChanged:
					if e.Reachability != t.reach && t.logVerdicts {
						t.log.Info("reachability verdict", "reachability", reachabilityName(e.Reachability), "was", reachabilityName(t.reach))
					}
					t.reach = e.Reachability
				case event.EvtHostReachableAddrsChanged:
					t.reachable, t.unreachable = addrStrings(e.Reachable), addrStrings(e.Unreachable)
				}
				t.mu.Unlock()
			}
		}
	}()
	return nil
}

func addrStrings(as []ma.Multiaddr) []string {
	out := make([]string, 0, len(as))
	for _, a := range as {
		out = append(out, a.String())
	}
	slices.Sort(out)
	return out
}

// NATStatus is how the peer is reached, for /api/status, the dashboard,
// `cocrawl peers` and /metrics.
type NATStatus struct {
	// Reachability is "public", "private" or "unknown": what AutoNAT
	// found, or what --reachability forced (Forced).
	Reachability string `json:"reachability"`
	Forced       bool   `json:"forced,omitempty"`
	// Why says how the verdict was reached when AutoNAT did not reach it
	// ("no public address": auto on a machine behind NAT).
	Why         string   `json:"why,omitempty"`
	Reachable   []string `json:"reachable_addrs,omitempty"`   // AutoNAT v2's verdicts per address
	Unreachable []string `json:"unreachable_addrs,omitempty"` //
	DHTMode     string   `json:"dht_mode,omitempty"`          // "server" or "client"; empty without a DHT
	// Relays are the relays this peer holds a slot on (its /p2p-circuit
	// addresses), by peer ID.
	Relays       []string       `json:"relays,omitempty"`
	RelayService bool           `json:"relay_service,omitempty"`
	Direct       int            `json:"conns_direct"`  // open connections, direct
	Relayed      int            `json:"conns_relayed"` // and through a relay (limited)
	HolePunches  HolePunchStats `json:"hole_punches"`
	// Merges made through a relay (no direct connection), and the bytes
	// they brought.
	RelayedMerges int64 `json:"relayed_merges"`
	RelayedBytes  int64 `json:"relayed_bytes"`
}

// status sums up the NAT side of the host.
func (n *Node) natStatus() NATStatus {
	t := n.nat
	t.mu.Lock()
	st := NATStatus{Reachability: reachabilityName(t.reach), Reachable: t.reachable, Unreachable: t.unreachable, HolePunches: t.punches}
	st.HolePunches.LastError = t.lastPunchError
	t.mu.Unlock()
	switch {
	case n.reachWhy != "":
		st.Reachability, st.Why = n.cfg.Reachability, n.reachWhy
	case n.cfg.Reachability == ReachabilityPublic, n.cfg.Reachability == ReachabilityPrivate:
		st.Reachability, st.Forced = n.cfg.Reachability, true
	}
	st.RelayService = n.cfg.RelayService
	st.RelayedMerges, st.RelayedBytes = n.relayedMerges.Load(), n.relayedBytes.Load()
	if n.dht != nil {
		st.DHTMode = "client"
		if n.DHTServing() {
			st.DHTMode = "server"
		}
	}
	for _, a := range n.host.Addrs() {
		if relay, ok := relayOf(a); ok && !slices.Contains(st.Relays, relay) {
			st.Relays = append(st.Relays, relay)
		}
	}
	slices.Sort(st.Relays)
	for _, c := range n.host.Network().Conns() {
		if isRelayed(c) {
			st.Relayed++
		} else {
			st.Direct++
		}
	}
	return st
}

// DHTServing tells whether the DHT is in server mode now: the host then
// answers the community's DHT protocol (kad-dht tells only the mode it was
// configured with, which is "auto").
func (n *Node) DHTServing() bool {
	return slices.Contains(n.host.Mux().Protocols(), n.dhtProtocol())
}

func reachabilityName(r network.Reachability) string {
	switch r {
	case network.ReachabilityPublic:
		return "public"
	case network.ReachabilityPrivate:
		return "private"
	}
	return "unknown"
}

// relayOf is the relay's peer ID in a /p2p-circuit address.
func relayOf(a ma.Multiaddr) (string, bool) {
	relay, circuit := "", false
	for _, c := range a {
		switch c.Protocol().Code {
		case ma.P_P2P:
			if !circuit {
				relay = c.Value()
			}
		case ma.P_CIRCUIT:
			circuit = true
		}
	}
	return relay, circuit && relay != ""
}

func isRelayed(c network.Conn) bool {
	_, err := c.RemoteMultiaddr().ValueForProtocol(ma.P_CIRCUIT)
	return err == nil || c.Stat().Limited
}

// ConnectionOf says how this peer is connected to id now: "direct",
// "direct (hole punched)", "relayed via <relay>", or "" when not at all.
func (n *Node) ConnectionOf(id peer.ID) string {
	conns := n.host.Network().ConnsToPeer(id)
	relayed := ""
	for _, c := range conns {
		if !isRelayed(c) {
			n.nat.mu.Lock()
			punched := n.nat.punched[id]
			n.nat.mu.Unlock()
			if punched {
				return "direct (hole punched)"
			}
			return "direct"
		}
		if r, ok := relayOf(c.RemoteMultiaddr()); ok {
			relayed = "relayed via " + r
		} else {
			relayed = "relayed"
		}
	}
	return relayed
}

// dropRelayed closes the relayed connections to id when there is no direct
// one. The other side's hole punch starts on a new inbound relayed
// connection (DCUtR), and one made before its service had an address to
// offer never punches: a fresh connection gets another chance.
func (n *Node) dropRelayed(id peer.ID) {
	var relayed []network.Conn
	for _, c := range n.host.Network().ConnsToPeer(id) {
		if !isRelayed(c) {
			return
		}
		relayed = append(relayed, c)
	}
	for _, c := range relayed {
		_ = c.Close()
	}
}

// RelayPieceGap is the wait before the next piece of a merge through a
// relay: every relayed connection counts against the relay's IP in the
// resource manager's limit on new connections (connRateLimits: one a
// second after a burst, on both ends).
const RelayPieceGap = 2 * time.Second

// noPunchFor is Config.NoPunchFor's default.
const noPunchFor = 10 * time.Minute

// relayAllowed says whether streams to id may use a relayed connection:
// while it is merged through a relay (DialMerge).
func (n *Node) relayAllowed(id peer.ID) bool {
	n.mu.Lock()
	defer n.mu.Unlock()
	return n.relayed[id] > 0
}

// throughRelay lets the streams to id use relayed connections until the
// returned function is called.
func (n *Node) throughRelay(id peer.ID) (done func()) {
	n.mu.Lock()
	n.relayed[id]++
	n.lastRelayed[id] = time.Now()
	n.mu.Unlock()
	return func() {
		n.mu.Lock()
		if n.relayed[id]--; n.relayed[id] <= 0 {
			delete(n.relayed, id)
		}
		n.mu.Unlock()
	}
}

// punchWait is how long a merge waits for a hole punch to turn a relayed
// connection into a direct one before it tries a fresh relayed connection.
var punchWait = 5 * time.Second

// ensureDirect connects to id and, when the connection is relayed, waits
// for the hole punch (which the other side starts) to make a direct one,
// then once more through a fresh relayed connection. It reports whether a
// direct connection exists; without one a merge gets a relayed connection
// only if it allows limited ones.
func (n *Node) ensureDirect(ctx context.Context, id peer.ID, addrs []ma.Multiaddr) bool {
	if hasDirect(n.host, id) {
		return true
	}
	// A relay ends its connections at its quota; the swarm's dial backoff
	// would then hold back the next piece, which the merge schedule paces.
	// Other peers keep their backoff: a gone peer's dials fail at once.
	n.mu.Lock()
	last, relayedLately := n.lastRelayed[id]
	n.mu.Unlock()
	if relayedLately && time.Since(last) < n.cfg.NoPunchFor {
		if sw, ok := n.host.Network().(interface{ Backoff() *swarm.DialBackoff }); ok {
			sw.Backoff().Clear(id)
		}
	}
	connect := func() error {
		cctx, cancel := context.WithTimeout(network.WithAllowLimitedConn(ctx, "merge"), punchWait)
		defer cancel()
		return n.host.Connect(cctx, peer.AddrInfo{ID: id, Addrs: addrs})
	}
	n.mu.Lock()
	until, failed := n.noPunch[id]
	n.mu.Unlock()
	if failed && time.Now().Before(until) {
		// A hole punch to it failed lately: direct or relayed, without
		// waiting for another.
		if err := connect(); err != nil {
			n.log.Debug("no connection for a merge", "peer", id, "err", err)
		}
		return hasDirect(n.host, id)
	}
	for try := range 2 {
		if err := connect(); err != nil {
			n.log.Debug("no connection for a merge", "peer", id, "err", err)
			return false
		}
		if hasDirect(n.host, id) {
			return true
		}
		if !n.canPunch(id) {
			return false // through the relay this time; a punch is tried when it can be
		}
		deadline := time.Now().Add(punchWait)
		for !hasDirect(n.host, id) && time.Now().Before(deadline) && ctx.Err() == nil {
			time.Sleep(50 * time.Millisecond)
		}
		if hasDirect(n.host, id) {
			return true
		}
		if try == 0 {
			n.dropRelayed(id) // the punch starts on a new inbound relayed connection
		}
	}
	if ctx.Err() == nil {
		n.mu.Lock()
		n.noPunch[id] = time.Now().Add(n.cfg.NoPunchFor)
		n.mu.Unlock()
	}
	return false
}

func hasDirect(h host.Host, id peer.ID) bool {
	for _, c := range h.Network().ConnsToPeer(id) {
		if !isRelayed(c) {
			return true
		}
	}
	return false
}

// countRelayed counts a merge made through a relay.
func (n *Node) countRelayed(bytes int64) {
	n.relayedMerges.Add(1)
	n.relayedBytes.Add(bytes)
}

// canPunch tells whether a hole punch with id can happen: both sides run
// DCUtR (the other side's protocols are known once identify has run on
// the relayed connection).
func (n *Node) canPunch(id peer.ID) bool {
	if n.cfg.NoHolePunching {
		return false
	}
	// Identify runs on a new connection before its protocols are known.
	deadline := time.Now().Add(2 * time.Second)
	for {
		protos, err := n.host.Peerstore().GetProtocols(id)
		if err == nil && len(protos) > 0 || time.Now().After(deadline) {
			return slices.Contains(protos, holepunch.Protocol)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// connected tells whether the host has any connection to id.
func (n *Node) connected(id peer.ID) bool { return len(n.host.Network().ConnsToPeer(id)) > 0 }

// noPublicAddress is the reason auto reachability is taken as private
// from the start (Config.Reachability).
const noPublicAddress = "no public address on this machine: behind NAT (forward a port and use --reachability public)"

// resolveReachability turns auto into private when no listen address is
// public: AutoNAT tests only addresses a peer has, and the address a NAT
// maps becomes one only after several peers have seen it (go-libp2p's
// observed-address threshold), which a small community whose one public
// peer is its relay never gives. Left unknown, the peer would never ask
// a relay for a slot, and no one could reach it. A loopback or LAN
// community (AllowPrivate) keeps auto. It returns why, or "".
func resolveReachability(cfg *Config, ifaceAddrs func() ([]net.Addr, error)) string {
	if cfg.Reachability != ReachabilityAuto || cfg.AllowPrivate {
		return ""
	}
	for _, s := range cfg.ListenAddrs {
		a, err := ma.NewMultiaddr(s)
		if err != nil {
			return ""
		}
		ip, err := manet.ToIP(a)
		if err != nil {
			return "" // a name or a transport without an IP: let AutoNAT tell
		}
		if !ip.IsUnspecified() {
			if manet.IsPublicAddr(a) {
				return ""
			}
			continue
		}
		addrs, err := ifaceAddrs()
		if err != nil {
			return ""
		}
		for _, ia := range addrs {
			if n, ok := ia.(*net.IPNet); ok && (ip.To4() == nil) == (n.IP.To4() == nil) {
				if m, err := manet.FromIP(n.IP); err == nil && manet.IsPublicAddr(m) {
					return ""
				}
			}
		}
	}
	cfg.Reachability = ReachabilityPrivate
	return noPublicAddress
}
