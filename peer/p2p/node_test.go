package p2p

import (
	"context"
	"log/slog"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/libp2p/go-libp2p/core/network"
	"github.com/libp2p/go-libp2p/core/peer"
)

// Issue 18, item 7: without --allow-private the libp2p host refuses to
// dial loopback and private addresses, and publishes none of its own.
func TestP2PRefusesPrivateAddresses(t *testing.T) {
	node := func(allow bool) *Node {
		n, err := New(Config{KeyFile: filepath.Join(t.TempDir(), "k"), NoDHT: true, AllowPrivate: allow,
			ListenAddrs: []string{"/ip4/127.0.0.1/tcp/0"}}, http.NotFoundHandler(), slog.Default())
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { n.Close() })
		return n
	}
	guarded, open, target := node(false), node(true), node(true)
	info := peer.AddrInfo{ID: target.host.ID(), Addrs: target.host.Addrs()}
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	if err := guarded.host.Connect(ctx, info); err == nil {
		t.Error("a guarded host dialled a loopback address")
	} else {
		t.Logf("refused: %v", err)
	}
	if err := open.host.Connect(ctx, info); err != nil {
		t.Errorf("with private addresses allowed: %v", err)
	}
	if a := guarded.Addrs(); len(a) != 0 {
		t.Errorf("a guarded host publishes %v", a)
	}
	if a := open.Addrs(); len(a) == 0 {
		t.Error("a host allowed private addresses publishes none")
	}
}

// Issue 18, item 13: the identity key is written whole and durably: a
// leftover temporary file from a crash is replaced, the key reads back,
// and only the owner may read it.
func TestIdentityKeyWrittenDurably(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "identity.key")
	if err := os.WriteFile(path+".tmp", []byte("half a key"), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := writeFileSynced(path, []byte("key"), 0o600); err != nil {
		t.Fatal(err)
	}
	b, err := os.ReadFile(path)
	fi, _ := os.Stat(path)
	if err != nil || string(b) != "key" || fi.Mode().Perm() != 0o600 {
		t.Fatalf("read back %q, %v, mode %v", b, err, fi.Mode())
	}
	if _, err := os.Stat(path + ".tmp"); !os.IsNotExist(err) {
		t.Errorf("temporary file left behind: %v", err)
	}
}

// Issue 18, item 3: a libp2p stream that opens an HTTP request and sends
// nothing is cut off after the header timeout, as on TCP.
func TestP2PStreamHeaderTimeout(t *testing.T) {
	p2pHeaderTimeout = 300 * time.Millisecond
	defer func() { p2pHeaderTimeout = 10 * time.Second }()
	node := func() *Node {
		n, err := New(Config{KeyFile: filepath.Join(t.TempDir(), "k"), NoDHT: true, AllowPrivate: true,
			ListenAddrs: []string{"/ip4/127.0.0.1/tcp/0"}}, http.NotFoundHandler(), slog.Default())
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { n.Close() })
		return n
	}
	server, client := node(), node()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if err := client.host.Connect(ctx, peer.AddrInfo{ID: server.host.ID(), Addrs: server.host.Addrs()}); err != nil {
		t.Fatal(err)
	}
	// The server's HTTP handler is registered by its Serve, which runs on
	// its own goroutine: retry until it is.
	var s network.Stream
	var err error
	for s, err = client.host.NewStream(ctx, server.host.ID(), "/http/1.1"); err != nil && ctx.Err() == nil; s, err = client.host.NewStream(ctx, server.host.ID(), "/http/1.1") {
		time.Sleep(50 * time.Millisecond)
	}
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	if _, err := s.Write([]byte("GET / HTTP/1.1\r\n")); err != nil { // and never the rest
		t.Fatal(err)
	}
	_ = s.SetReadDeadline(time.Now().Add(3 * time.Second))
	start := time.Now()
	n, err := s.Read(make([]byte, 512)) // an error answer, or the stream's end
	if held := time.Since(start); held > 2*time.Second {
		t.Fatalf("a stream sending half a request was held %v (%d bytes, %v)", held, n, err)
	}
}

// On a machine behind NAT (no public address on its interfaces), auto
// reachability is private from the start, so the peer asks for a relay
// slot at once; a public interface, an explicit setting or a LAN
// community (AllowPrivate) leave it as it was.
func TestAutoReachabilityBehindNAT(t *testing.T) {
	lan := func() ([]net.Addr, error) {
		return []net.Addr{&net.IPNet{IP: net.ParseIP("127.0.0.1"), Mask: net.CIDRMask(8, 32)},
			&net.IPNet{IP: net.ParseIP("192.168.1.2"), Mask: net.CIDRMask(24, 32)}}, nil
	}
	public := func() ([]net.Addr, error) {
		return []net.Addr{&net.IPNet{IP: net.ParseIP("192.168.1.2"), Mask: net.CIDRMask(24, 32)},
			&net.IPNet{IP: net.ParseIP("1.2.0.11"), Mask: net.CIDRMask(24, 32)}}, nil
	}
	for _, c := range []struct {
		name   string
		cfg    Config
		ifaces func() ([]net.Addr, error)
		want   string
	}{
		{"a LAN address", Config{Reachability: ReachabilityAuto, ListenAddrs: []string{"/ip4/192.168.1.2/tcp/0"}}, lan, ReachabilityPrivate},
		{"all interfaces, none public", Config{Reachability: ReachabilityAuto, ListenAddrs: []string{"/ip4/0.0.0.0/udp/0/quic-v1"}}, lan, ReachabilityPrivate},
		{"all interfaces, one public", Config{Reachability: ReachabilityAuto, ListenAddrs: []string{"/ip4/0.0.0.0/udp/0/quic-v1"}}, public, ReachabilityAuto},
		{"a public address", Config{Reachability: ReachabilityAuto, ListenAddrs: []string{"/ip4/1.2.0.11/tcp/4001"}}, lan, ReachabilityAuto},
		{"set public", Config{Reachability: ReachabilityPublic, ListenAddrs: []string{"/ip4/192.168.1.2/tcp/0"}}, lan, ReachabilityPublic},
		{"a LAN community", Config{Reachability: ReachabilityAuto, AllowPrivate: true, ListenAddrs: []string{"/ip4/127.0.0.1/tcp/0"}}, lan, ReachabilityAuto},
	} {
		cfg := c.cfg
		why := resolveReachability(&cfg, c.ifaces)
		if cfg.Reachability != c.want || (why != "") != (c.want != c.cfg.Reachability) {
			t.Errorf("%s: %s (%q), want %s", c.name, cfg.Reachability, why, c.want)
		}
	}
}
