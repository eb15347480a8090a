package p2p

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"net/netip"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"sync"
	"sync/atomic"
	"time"

	"github.com/libp2p/go-libp2p"
	dht "github.com/libp2p/go-libp2p-kad-dht"
	"github.com/libp2p/go-libp2p/core/crypto"
	"github.com/libp2p/go-libp2p/core/event"
	"github.com/libp2p/go-libp2p/core/host"
	"github.com/libp2p/go-libp2p/core/metrics"
	"github.com/libp2p/go-libp2p/core/network"
	"github.com/libp2p/go-libp2p/core/peer"
	"github.com/libp2p/go-libp2p/core/peerstore"
	"github.com/libp2p/go-libp2p/core/protocol"
	"github.com/libp2p/go-libp2p/p2p/discovery/mdns"
	drouting "github.com/libp2p/go-libp2p/p2p/discovery/routing"
	rcmgr "github.com/libp2p/go-libp2p/p2p/host/resource-manager"
	libp2phttp "github.com/libp2p/go-libp2p/p2p/http"
	"github.com/libp2p/go-libp2p/p2p/net/connmgr"
	xrate "github.com/libp2p/go-libp2p/x/rate"
	ma "github.com/multiformats/go-multiaddr"
	manet "github.com/multiformats/go-multiaddr/net"

	cprotocol "github.com/cocrawl/cocrawl/protocol"
)

// ShareProtocol is the libp2p protocol the share repository is served
// under over HTTP on libp2p streams (spec section 7.5).
const ShareProtocol = protocol.ID("/cocrawl/share/" + cprotocol.Version11)

// Config configures the libp2p side of a peer. The zero value with a
// KeyFile runs a host on loopback ports chosen by the system, in the
// community "default", with the DHT on.
type Config struct {
	// KeyFile holds the peer's private identity key; it is created (0600)
	// when missing, so a restarted peer keeps its peer ID. Required.
	KeyFile string
	// Community names the DHT the peer joins (spec 7.5); default "default".
	Community string
	// ListenAddrs are libp2p multiaddrs; default TCP and QUIC on ListenIP
	// with system-chosen ports.
	ListenAddrs []string
	// ListenIP is the IP the default ListenAddrs bind to; default
	// 127.0.0.1. A peer passes its share server's IP.
	ListenIP net.IP
	// Bootstrap are full multiaddrs (ending in /p2p/<id>) of community
	// members to join through.
	Bootstrap []string
	NoDHT     bool // no DHT: the host still serves and merges over libp2p
	MDNS      bool // also find peers on the local network by mDNS
	// AllowPrivate keeps loopback and private addresses in the routing
	// table and in answers (LANs, tests); off, only public ones are used.
	AllowPrivate bool
	// ConnLow and ConnHigh are the connection manager's watermarks;
	// defaults 64 and 256.
	ConnLow, ConnHigh int
	// FindEvery is the first wait between two lookups of the community;
	// it doubles up to FindMax. Defaults 2 s and 1 min.
	FindEvery, FindMax time.Duration
	// Readvertise is how often a sharing peer renews its provider record;
	// default 1 h (records live 48 h).
	Readvertise time.Duration
	// RefreshEvery is the DHT routing table refresh period; default 5 min
	// (kad-dht's is 10 min; the community lookups find newcomers sooner).
	RefreshEvery time.Duration

	// Reachability is ReachabilityAuto (the default), ReachabilityPublic
	// or ReachabilityPrivate (nat.go); the DHT's mode follows it.
	Reachability string
	// RelayService offers this peer as a circuit relay v2 to others, within
	// RelayLimits, once it is publicly reachable.
	RelayService bool
	RelayLimits  RelayLimits
	// Relays are static relays (multiaddrs ending in /p2p/<id>) a private
	// peer holds slots on; without them AutoRelay takes relays from the
	// community's connected peers.
	Relays         []string
	NoHolePunching bool // no DCUtR
	// NoPunchFor is how long a peer whose hole punch failed is merged
	// through a relay without waiting for another punch; default 10 min.
	NoPunchFor time.Duration

	// Extra options go to libp2p after this package's: tests give a
	// simulated network.
	Extra []libp2p.Option
}

// defaultListenAddrs are TCP and QUIC on ip, ports chosen by the system.
func defaultListenAddrs(ip net.IP) []string {
	if ip == nil {
		ip = net.IPv4(127, 0, 0, 1)
	}
	fam := "ip4"
	if ip.To4() == nil {
		fam = "ip6"
	}
	return []string{fmt.Sprintf("/%s/%s/tcp/0", fam, ip), fmt.Sprintf("/%s/%s/udp/0/quic-v1", fam, ip)}
}

var communityName = regexp.MustCompile(`^[a-z0-9._-]{1,64}$`)

func (c *Config) defaults() error {
	if c.KeyFile == "" {
		return configErrorf("p2p: Config.KeyFile is required")
	}
	if c.Community == "" {
		c.Community = "default"
	}
	if !communityName.MatchString(c.Community) {
		return configErrorf("p2p: community %q: use 1 to 64 of a-z, 0-9, '.', '_' and '-'", c.Community)
	}
	if len(c.ListenAddrs) == 0 {
		c.ListenAddrs = defaultListenAddrs(c.ListenIP)
	}
	if c.ConnLow <= 0 {
		c.ConnLow = 64
	}
	if c.ConnHigh <= c.ConnLow {
		c.ConnHigh = max(256, 2*c.ConnLow)
	}
	if c.FindEvery <= 0 {
		c.FindEvery = 2 * time.Second
	}
	if c.FindMax < c.FindEvery {
		c.FindMax = max(time.Minute, c.FindEvery)
	}
	if c.Readvertise <= 0 {
		c.Readvertise = time.Hour
	}
	if c.RefreshEvery <= 0 {
		c.RefreshEvery = 5 * time.Minute
	}
	if c.Reachability == "" {
		c.Reachability = ReachabilityAuto
	}
	if c.NoPunchFor <= 0 {
		c.NoPunchFor = noPunchFor
	}
	return nil
}

// Namespace is the rendezvous string of a community (spec 7.5).
func Namespace(community string) string {
	return "/cocrawl/" + community + "/share/" + cprotocol.Version11
}

// Node is a peer's libp2p host, its community DHT and the share
// repository served over libp2p streams.
type Node struct {
	cfg   Config
	host  host.Host
	dht   *dht.IpfsDHT // nil with NoDHT
	http  *libp2phttp.Host
	mdns  mdns.Service
	log   *slog.Logger
	found func(peer.AddrInfo, string) // hands a community peer to the peer table
	bw    *metrics.BandwidthCounter
	nat   *natTracker
	stop  context.CancelFunc // of the NAT event watch
	// reachWhy says why auto reachability was taken as private at start
	// (resolveReachability); "" otherwise.
	reachWhy string

	mu      sync.Mutex
	clients map[peer.ID]*http.Client
	relayed map[peer.ID]int       // peers being merged through a relay now
	noPunch map[peer.ID]time.Time // peers whose hole punch failed: no wait for one until then
	// lastRelayed: when a peer was last merged through a relay.
	lastRelayed map[peer.ID]time.Time

	relayedMerges, relayedBytes atomic.Int64

	serveDone chan struct{}
	closing   atomic.Bool
}

// loadKey reads the identity key at path, creating one when there is none.
func loadKey(path string) (crypto.PrivKey, error) {
	b, err := os.ReadFile(path)
	if err == nil {
		k, err := crypto.UnmarshalPrivateKey(b)
		if err != nil {
			return nil, fmt.Errorf("p2p: identity key %s: %w", path, err)
		}
		return k, nil
	}
	if !errors.Is(err, os.ErrNotExist) {
		return nil, fmt.Errorf("p2p: identity key: %w", err)
	}
	k, _, err := crypto.GenerateEd25519Key(nil)
	if err != nil {
		return nil, err
	}
	b, err = crypto.MarshalPrivateKey(k)
	if err != nil {
		return nil, err
	}
	if err := os.MkdirAll(filepath.Dir(path), 0o700); err != nil {
		return nil, err
	}
	// Written to a temporary file, synced, renamed and the folder synced,
	// so neither a crash nor a power loss leaves a half key or none: the
	// peer's identity would change and its peers would know it no more.
	if err := writeFileSynced(path, b, 0o600); err != nil {
		return nil, fmt.Errorf("p2p: write identity key: %w", err)
	}
	return k, nil
}

// writeFileSynced replaces path with b durably: a synced temporary file
// renamed over it, then the folder synced so the rename itself survives.
func writeFileSynced(path string, b []byte, perm os.FileMode) error {
	tmp := path + ".tmp"
	_ = os.Remove(tmp) // a crash's leftover keeps its own mode if reused
	f, err := os.OpenFile(tmp, os.O_WRONLY|os.O_CREATE|os.O_EXCL, perm)
	if err != nil {
		return err
	}
	_, err = f.Write(b)
	if err == nil {
		err = f.Sync()
	}
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err == nil {
		err = os.Rename(tmp, path)
	}
	if err != nil {
		os.Remove(tmp)
		return err
	}
	dir, err := os.Open(filepath.Dir(path))
	if err != nil {
		return err
	}
	defer dir.Close()
	return dir.Sync()
}

// New starts the host (listening) and, unless NoDHT, the DHT, serving
// share (the share repository) over libp2p streams at ShareProtocol; the
// search for peers starts with Run.
func New(cfg Config, share http.Handler, lg *slog.Logger) (*Node, error) {
	if err := cfg.defaults(); err != nil {
		return nil, err
	}
	var boot []peer.AddrInfo
	for _, s := range cfg.Bootstrap {
		ai, err := peer.AddrInfoFromString(s)
		if err != nil {
			return nil, configErrorf("p2p: bootstrap %q: %w (want a multiaddr ending in /p2p/<peer-id>)", s, err)
		}
		boot = append(boot, *ai)
	}
	key, err := loadKey(cfg.KeyFile)
	if err != nil {
		return nil, err
	}
	cm, err := connmgr.NewConnManager(cfg.ConnLow, cfg.ConnHigh, connmgr.WithGracePeriod(time.Minute))
	if err != nil {
		return nil, err
	}
	rm, err := rcmgr.NewResourceManager(rcmgr.NewFixedLimiter(rcmgr.DefaultLimits.AutoScale()),
		rcmgr.WithConnRateLimiters(connRateLimits(cfg.Relays)))
	if err != nil {
		return nil, err
	}
	bw := metrics.NewBandwidthCounter()
	opts := []libp2p.Option{
		libp2p.Identity(key), libp2p.ListenAddrStrings(cfg.ListenAddrs...),
		libp2p.ConnectionManager(cm), libp2p.ResourceManager(rm), libp2p.BandwidthReporter(bw),
	}
	if !cfg.AllowPrivate {
		opts = append(opts, libp2p.ConnectionGater(publicGater{}))
	}
	auto := cfg.Reachability == ReachabilityAuto
	reachWhy := resolveReachability(&cfg, net.InterfaceAddrs)
	if reachWhy != "" {
		lg.Debug("reachability: private", "why", reachWhy) // cocrawl run prints it
	}
	tr := newNATTracker(lg, auto && reachWhy == "")
	var built atomic.Pointer[host.Host] // for AutoRelay's peer source, which runs once the host does
	natOpts, err := natOptions(&cfg, tr, relaysFrom(func() host.Host {
		if h := built.Load(); h != nil {
			return *h
		}
		return nil
	}))
	if err != nil {
		return nil, err
	}
	opts = append(append(opts, natOpts...), cfg.Extra...)
	// The host keeps all its addresses (the HTTP-over-libp2p server needs
	// one to serve streams); what the DHT announces and keeps is filtered
	// below.
	h, err := libp2p.New(opts...)
	if err != nil {
		return nil, fmt.Errorf("p2p: libp2p host: %w", err)
	}
	built.Store(&h)
	watchCtx, stop := context.WithCancel(context.Background())
	if err := tr.watch(watchCtx, h); err != nil {
		stop()
		h.Close()
		return nil, fmt.Errorf("p2p: libp2p events: %w", err)
	}
	n := &Node{cfg: cfg, host: h, log: lg, bw: bw, nat: tr, stop: stop, reachWhy: reachWhy, clients: map[peer.ID]*http.Client{},
		relayed: map[peer.ID]int{}, noPunch: map[peer.ID]time.Time{}, lastRelayed: map[peer.ID]time.Time{}, serveDone: make(chan struct{})}
	n.http = &libp2phttp.Host{StreamHost: headerDeadlineHost{Host: h, limited: n.relayAllowed}}
	n.http.SetHTTPHandlerAtPath(ShareProtocol, "/", withDeadlines(share))
	go func() {
		defer close(n.serveDone)
		if err := n.http.Serve(); err != nil && !errors.Is(err, http.ErrServerClosed) && !n.closing.Load() {
			lg.Error("libp2p HTTP server stopped", "err", err)
		}
	}()
	if !cfg.NoDHT {
		dopts := []dht.Option{
			dht.ProtocolPrefix(protocol.ID("/cocrawl/" + cfg.Community)),
			dht.Mode(dhtMode(cfg.Reachability)), dht.DisableValues(),
			dht.BootstrapPeers(boot...), dht.RoutingTableRefreshPeriod(cfg.RefreshEvery),
		}
		if !cfg.AllowPrivate {
			dopts = append(dopts, dht.QueryFilter(dht.PublicQueryFilter), dht.RoutingTableFilter(dht.PublicRoutingTableFilter),
				dht.AddressFilter(publicOnly))
		}
		n.dht, err = dht.New(h, dopts...)
		if err != nil {
			n.closing.Store(true)
			n.http.Close()
			stop()
			h.Close()
			return nil, fmt.Errorf("p2p: community DHT: %w", err)
		}
	}
	return n, nil
}

// connRateLimits are the resource manager's limits on new connections per
// remote IP. go-libp2p's default, one every 5 s after a burst of 16, counts
// every relayed connection, in and out, against the relay's IP: a NATed
// peer whose community holds gone peers' records spent it on dials to them
// and could then reach no one (seen in make e2e-nat). Static relays are
// exempt (they limit circuits themselves); other IPs get one a second after
// a burst of 64.
func connRateLimits(relays []string) *xrate.Limiter {
	lim := &xrate.Limiter{
		NetworkPrefixLimits: []xrate.PrefixLimit{
			{Prefix: netip.MustParsePrefix("127.0.0.0/8")}, {Prefix: netip.MustParsePrefix("::1/128")},
		},
		SubnetRateLimiter: xrate.SubnetLimiter{
			IPv4SubnetLimits: []xrate.SubnetLimit{{PrefixLength: 32, Limit: xrate.Limit{RPS: 1, Burst: 64}}},
			IPv6SubnetLimits: []xrate.SubnetLimit{{PrefixLength: 56, Limit: xrate.Limit{RPS: 1, Burst: 64}}},
			GracePeriod:      time.Minute,
		},
	}
	for _, r := range relays {
		ai, err := peer.AddrInfoFromString(r)
		if err != nil {
			continue
		}
		for _, a := range ai.Addrs {
			if ip, err := manet.ToIP(a); err == nil {
				if addr, ok := netip.AddrFromSlice(ip); ok {
					lim.NetworkPrefixLimits = append(lim.NetworkPrefixLimits, xrate.PrefixLimit{Prefix: netip.PrefixFrom(addr.Unmap(), addr.Unmap().BitLen())})
				}
			}
		}
	}
	return lim
}

func publicOnly(addrs []ma.Multiaddr) []ma.Multiaddr {
	return ma.FilterAddrs(addrs, manet.IsPublicAddr)
}

// ID is the peer's libp2p identity.
func (n *Node) ID() peer.ID { return n.host.ID() }

// Addrs are the host's listen addresses as full multiaddrs ending in
// /p2p/<id>, sorted: public ones only, unless AllowPrivate, so robots.shr
// does not publish a LAN's addresses.
func (n *Node) Addrs() []string {
	var out []string
	addrs := n.host.Addrs()
	if !n.cfg.AllowPrivate {
		addrs = publicOnly(addrs)
	}
	for _, a := range addrs {
		out = append(out, a.String()+"/p2p/"+n.host.ID().String())
	}
	slices.Sort(out)
	return out
}

// Run joins the community and looks for its members until ctx ends:
// bootstrap, wait for a routing table, advertise (when sharing) and look
// up the namespace again and again.
func (n *Node) Run(ctx context.Context, share bool) {
	if n.cfg.MDNS {
		n.mdns = mdns.NewMdnsService(n.host, "cocrawl-"+n.cfg.Community, mdnsNotifee{n})
		if err := n.mdns.Start(); err != nil {
			n.log.Warn("mDNS discovery not started", "err", err)
		}
	}
	if n.dht == nil {
		<-ctx.Done()
		return
	}
	for _, s := range n.cfg.Bootstrap {
		if ai, err := peer.AddrInfoFromString(s); err == nil {
			cctx, cancel := context.WithTimeout(ctx, 10*time.Second)
			if err := n.host.Connect(cctx, *ai); err != nil {
				n.log.Warn("bootstrap peer unreachable", "addr", s, "err", err)
			}
			cancel()
		}
	}
	if err := n.dht.Bootstrap(ctx); err != nil {
		n.log.Warn("DHT bootstrap", "err", err)
	}
	// Advertising into an empty routing table fails: wait for a neighbour
	// (a peer with no bootstrap waits for others to join through it).
	for n.dht.RoutingTable().Size() == 0 {
		select {
		case <-ctx.Done():
			return
		case <-time.After(100 * time.Millisecond):
		}
	}
	ns := Namespace(n.cfg.Community)
	disc := drouting.NewRoutingDiscovery(n.dht)
	if share {
		go n.advertise(ctx, disc, ns)
	}
	wait := n.cfg.FindEvery
	for {
		ch, err := disc.FindPeers(ctx, ns)
		if err == nil {
			for ai := range ch {
				if ai.ID != n.host.ID() && ai.ID != "" {
					n.Learn(ai, "dht")
				}
			}
		} else if ctx.Err() == nil {
			n.log.Debug("community lookup", "err", err)
		}
		select {
		case <-ctx.Done():
			return
		case <-time.After(wait):
		}
		wait = min(2*wait, n.cfg.FindMax)
	}
}

// advertise keeps this peer's provider record alive, and renews it when
// the host's addresses change: the record carries them, and a peer behind
// NAT has its relayed addresses only once a relay gave it a slot.
func (n *Node) advertise(ctx context.Context, disc *drouting.RoutingDiscovery, ns string) {
	sub, err := n.host.EventBus().Subscribe(new(event.EvtLocalAddressesUpdated))
	var changed <-chan any
	if err == nil {
		defer sub.Close()
		changed = sub.Out()
	}
	for {
		next := n.cfg.Readvertise
		if _, err := disc.Advertise(ctx, ns); err != nil {
			if ctx.Err() != nil {
				return
			}
			n.log.Warn("advertising in the community failed; retrying", "err", err)
			next = 5 * time.Second
		}
		select {
		case <-ctx.Done():
			return
		case <-time.After(next):
		case <-changed:
			// Addresses come in bursts: advertise once they settle.
			select {
			case <-ctx.Done():
				return
			case <-time.After(2 * time.Second):
			}
			for len(changed) > 0 {
				<-changed // the burst is covered by one advertisement
			}
		}
	}
}

// OnFound sets what a community member found is handed to, with how it
// was found ("dht", "mdns"). Set it before Run.
func (n *Node) OnFound(found func(ai peer.AddrInfo, source string)) { n.found = found }

// Learn records a community member's addresses and hands it to OnFound's
// function.
func (n *Node) Learn(ai peer.AddrInfo, source string) {
	if len(ai.Addrs) > 0 {
		n.host.Peerstore().AddAddrs(ai.ID, ai.Addrs, peerstore.RecentlyConnectedAddrTTL)
	}
	if n.found != nil {
		n.found(ai, source)
	}
}

type mdnsNotifee struct{ n *Node }

func (m mdnsNotifee) HandlePeerFound(ai peer.AddrInfo) {
	if ai.ID != m.n.host.ID() {
		m.n.Learn(ai, "mdns")
	}
}

// client returns an HTTP client whose requests go to id over libp2p
// streams, whatever host their URL names; the connection authenticates id.
func (n *Node) client(id peer.ID) (*http.Client, error) {
	n.mu.Lock()
	defer n.mu.Unlock()
	if c := n.clients[id]; c != nil {
		return c, nil
	}
	rt, err := n.http.NewConstrainedRoundTripper(peer.AddrInfo{ID: id, Addrs: n.host.Peerstore().Addrs(id)},
		libp2phttp.ServerMustAuthenticatePeerID)
	if err != nil {
		return nil, err
	}
	c := &http.Client{Transport: rt, Timeout: 2 * time.Minute}
	n.clients[id] = c
	return c, nil
}

// forget drops the cached client of a peer, so the next merge dials anew.
func (n *Node) forget(id peer.ID) {
	n.mu.Lock()
	delete(n.clients, id)
	n.mu.Unlock()
}

// Status is the node's side of a peer's status.
type Status struct {
	Community     string
	DHTPeers      int   // community peers in the DHT's routing table
	DHTIn, DHTOut int64 // bytes of the DHT protocol
	NAT           NATStatus
}

// Status sums up the node.
func (n *Node) Status() Status {
	in, out := n.dhtBytes()
	return Status{Community: n.cfg.Community, DHTPeers: n.routingTableSize(), DHTIn: in, DHTOut: out, NAT: n.natStatus()}
}

// Host is the libp2p host, for what this package does not wrap (tests).
func (n *Node) Host() host.Host { return n.host }

// ListenAddrs are the addresses the host listens on, sorted.
func (n *Node) ListenAddrs() []string { return addrStrings(n.host.Network().ListenAddresses()) }

// dhtProtocol is the community DHT's protocol ID.
func (n *Node) dhtProtocol() protocol.ID {
	return protocol.ID("/cocrawl/" + n.cfg.Community + "/kad/1.0.0")
}

// dhtBytes returns the bytes this peer's DHT protocol sent and received.
func (n *Node) dhtBytes() (in, out int64) {
	st := n.bw.GetBandwidthForProtocol(n.dhtProtocol())
	return st.TotalIn, st.TotalOut
}

// routingTableSize is the number of community peers in the DHT's table.
func (n *Node) routingTableSize() int {
	if n.dht == nil {
		return 0
	}
	return n.dht.RoutingTable().Size()
}

// Close stops the node: discovery, the DHT, the server and the host.
func (n *Node) Close() error {
	n.closing.Store(true)
	n.stop()
	if n.mdns != nil {
		n.mdns.Close()
	}
	n.http.Close()
	var errs []error
	if n.dht != nil {
		errs = append(errs, n.dht.Close())
	}
	errs = append(errs, n.host.Close())
	<-n.serveDone
	return errors.Join(errs...)
}

// ClientOf is who a share request comes from, for the share server's
// streams per client: the peer ID over libp2p, else the IP address.
func ClientOf(r *http.Request) string {
	if id := libp2phttp.ClientPeerID(r); id != "" {
		return "p2p:" + id.String()
	}
	return cprotocol.ClientIP(r)
}

// withDeadlines gives each request over libp2p the read and write time
// limits the TCP server has (libp2phttp's server has none): a stream that
// trickles its request or does not read the answer is cut off.
func withDeadlines(h http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		rc := http.NewResponseController(w)
		now := time.Now()
		_ = rc.SetReadDeadline(now.Add(cprotocol.DefaultTimeouts.Read))
		_ = rc.SetWriteDeadline(now.Add(cprotocol.DefaultTimeouts.Write))
		h.ServeHTTP(w, r)
	})
}

// p2pHeaderTimeout bounds how long a libp2p stream may take to send its
// request's headers (libp2phttp's server sets no such limit).
var p2pHeaderTimeout = 10 * time.Second

// headerDeadlineHost gives every incoming stream a read deadline before
// the HTTP server reads the request from it, as ReadHeaderTimeout does on
// TCP: a stream that trickles or sends nothing is cut off. withDeadlines
// sets the request's own limits once its headers are in. Outgoing streams
// to a peer being merged through a relay may use a relayed (limited)
// connection: libp2phttp opens them with a context of its own, so the
// permission is given here.
type headerDeadlineHost struct {
	host.Host
	limited func(peer.ID) bool
}

func (d headerDeadlineHost) NewStream(ctx context.Context, p peer.ID, pids ...protocol.ID) (network.Stream, error) {
	if d.limited != nil && d.limited(p) {
		ctx = network.WithAllowLimitedConn(ctx, "merge through a relay")
	}
	return d.Host.NewStream(ctx, p, pids...)
}

func (d headerDeadlineHost) SetStreamHandler(pid protocol.ID, h network.StreamHandler) {
	d.Host.SetStreamHandler(pid, func(s network.Stream) {
		_ = s.SetReadDeadline(time.Now().Add(p2pHeaderTimeout))
		h(s)
	})
}
