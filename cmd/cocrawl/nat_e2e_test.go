//go:build e2enat

package main

import (
	"bufio"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/cocrawl/cocrawl/peer"
	"github.com/cocrawl/cocrawl/webevents"
)

// The done-when of the NAT issue with real processes and a real NAT: Linux
// network namespaces that this test creates and removes. An "internet"
// namespace holds the bootstrap peer, which is also the relay, on a bridge;
// two home networks sit behind router namespaces that masquerade with
// nftables. The addresses are the namespaces' own: nothing leaves the
// machine (the namespaces have no route out). Run as root: make e2e-nat.
//
// COCRAWL_NAT_TRIALS sets how many times the two home peers are started
// afresh (new identities) and must end up merging each other's events over
// a direct connection; each trial's time to a direct connection and
// whether a hole punch made it are printed.

const (
	natInet    = "1.2.0.1" // the bootstrap peer and relay
	natRecords = 200       // events each home peer shares
)

type netns struct {
	t      *testing.T
	prefix string
}

func (n *netns) name(s string) string { return n.prefix + s }

func (n *netns) run(args ...string) {
	n.t.Helper()
	if out, err := exec.Command(args[0], args[1:]...).CombinedOutput(); err != nil {
		n.t.Fatalf("%s: %v\n%s", strings.Join(args, " "), err, out)
	}
}

func (n *netns) in(ns string, args ...string) {
	n.run(append([]string{"ip", "netns", "exec", n.name(ns)}, args...)...)
}

// build makes the namespaces: inet with a bridge at 1.2.0.1/24; for each
// home i, a router with 1.2.0.1i on the bridge and 192.168.i.1 on the LAN,
// masquerading what leaves by its WAN side, and a home host at 192.168.i.2.
func (n *netns) build() {
	for _, ns := range []string{"inet", "r1", "r2", "h1", "h2"} {
		n.run("ip", "netns", "add", n.name(ns))
		n.in(ns, "ip", "link", "set", "lo", "up")
	}
	n.in("inet", "ip", "link", "add", "br0", "type", "bridge")
	n.in("inet", "ip", "addr", "add", natInet+"/24", "dev", "br0")
	n.in("inet", "ip", "link", "set", "br0", "up")
	for _, i := range []string{"1", "2"} {
		r, h := "r"+i, "h"+i
		n.run("ip", "link", "add", "up"+i, "netns", n.name("inet"), "type", "veth", "peer", "name", "wan", "netns", n.name(r))
		n.in("inet", "ip", "link", "set", "up"+i, "master", "br0", "up")
		n.in(r, "ip", "addr", "add", "1.2.0.1"+i+"/24", "dev", "wan")
		n.in(r, "ip", "link", "set", "wan", "up")
		n.run("ip", "link", "add", "lan", "netns", n.name(r), "type", "veth", "peer", "name", "eth0", "netns", n.name(h))
		n.in(r, "ip", "addr", "add", "192.168."+i+".1/24", "dev", "lan")
		n.in(r, "ip", "link", "set", "lan", "up")
		n.in(h, "ip", "addr", "add", "192.168."+i+".2/24", "dev", "eth0")
		n.in(h, "ip", "link", "set", "eth0", "up")
		n.in(h, "ip", "route", "add", "default", "via", "192.168."+i+".1")
		n.in(r, "sysctl", "-q", "-w", "net.ipv4.ip_forward=1")
		// Masquerade what leaves by the WAN side; let nothing in that the
		// home did not start, and answer nothing unasked on the WAN side
		// (no reset, no ICMP error), as a home router does.
		rules := `table ip nat {
	chain postrouting {
		type nat hook postrouting priority 100;
		oifname "wan" masquerade
	}
}
table ip filter {
	chain forward {
		type filter hook forward priority 0; policy drop;
		ct state established,related accept
		iifname "lan" accept
	}
	chain input {
		type filter hook input priority 0; policy accept;
		iifname "wan" ct state established,related accept
		iifname "wan" drop
	}
}
`
		cmd := exec.Command("ip", "netns", "exec", n.name(r), "nft", "-f", "-")
		cmd.Stdin = strings.NewReader(rules)
		if out, err := cmd.CombinedOutput(); err != nil {
			n.t.Fatalf("nft in %s: %v\n%s", r, err, out)
		}
	}
}

func (n *netns) remove() {
	for _, ns := range []string{"h1", "h2", "r1", "r2", "inet"} {
		_ = exec.Command("ip", "netns", "del", n.name(ns)).Run()
	}
}

// natPeer is a `cocrawl run` in a namespace.
type natPeer struct {
	ns, data string
	api      string // the API's base URL inside the namespace
	cmd      *exec.Cmd
	mu       sync.Mutex
	out      []string
	done     chan struct{}
}

func startNATPeer(t *testing.T, n *netns, ns, data string, args ...string) *natPeer {
	t.Helper()
	full := append([]string{"netns", "exec", n.name(ns), binary, "run", "--data", data, "--listen", "127.0.0.1:8470",
		"--community", "nat", "--log-level", "warn", "--status-every", "0"}, args...)
	p := &natPeer{ns: ns, data: data, api: "http://127.0.0.1:8470", cmd: exec.Command("ip", full...), done: make(chan struct{})}
	for i, a := range args {
		if a == "--listen" && i+1 < len(args) && !strings.HasPrefix(args[i+1], "127.") {
			p.api = "http://127.0.0.1:8471" // the admin side of a LAN --listen
		}
	}
	pr, pw := io.Pipe()
	p.cmd.Stdout, p.cmd.Stderr = pw, pw
	if err := p.cmd.Start(); err != nil {
		t.Fatal(err)
	}
	go func() {
		defer close(p.done)
		sc := bufio.NewScanner(pr)
		for sc.Scan() {
			p.mu.Lock()
			p.out = append(p.out, sc.Text())
			p.mu.Unlock()
		}
	}()
	go func() { _ = p.cmd.Wait(); pw.Close() }()
	return p
}

// line waits for an output line with prefix (spaces trimmed).
func (p *natPeer) line(t *testing.T, prefix string) string {
	t.Helper()
	deadline := time.Now().Add(20 * time.Second)
	for time.Now().Before(deadline) {
		p.mu.Lock()
		for _, l := range p.out {
			if strings.HasPrefix(strings.TrimSpace(l), prefix) {
				p.mu.Unlock()
				return strings.TrimSpace(l)
			}
		}
		p.mu.Unlock()
		time.Sleep(50 * time.Millisecond)
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	t.Fatalf("peer in %s never printed %q:\n%s", p.ns, prefix, strings.Join(p.out, "\n"))
	return ""
}

func (p *natPeer) stop() {
	_ = p.cmd.Process.Signal(syscall.SIGTERM)
	select {
	case <-p.done:
	case <-time.After(15 * time.Second):
		_ = p.cmd.Process.Kill()
		<-p.done
	}
}

// table asks the peer's API (inside its namespace) for its peer table.
func (p *natPeer) table(n *netns) []peer.Record {
	out, err := exec.Command("ip", "netns", "exec", n.name(p.ns), binary, "peers", "--api", p.api, "--json").Output()
	if err != nil {
		return nil
	}
	var tbl struct {
		Peers []peer.Record `json:"peers"`
	}
	if json.Unmarshal(out, &tbl) != nil {
		return nil
	}
	return tbl.Peers
}

// homeData is a data folder holding n events observed by cid.
func homeData(t *testing.T, cid string, n int) string {
	t.Helper()
	dir := t.TempDir()
	day := webevents.Today(time.Now())
	evs := make([]webevents.Event, n)
	now := time.Now().Unix()
	for i := range evs {
		// A digest each, as a crawler's records have: what a merge
		// carries compresses as real day files do, not to nothing.
		sum := sha256.Sum256([]byte(fmt.Sprint(cid, i)))
		evs[i] = webevents.Event{URL: fmt.Sprintf("http://%s.example/%d", strings.Fields(cid)[1], i), Size: int64(i),
			LMD: now - 120, LPD: max(now-60, webevents.DayStart(day)), CID: cid, Stat: webevents.Create, Digest: "sha256:" + hex.EncodeToString(sum[:])}
	}
	dat := filepath.Join(t.TempDir(), "seed.dat")
	writeDat(t, dat, evs, "")
	mustRun(t, "events", "import", dat, "--data", dir)
	return dir
}

// natWorld builds the namespaces and starts the bootstrap peer and relay;
// it returns the relay's peer ID and multiaddr.
func natWorld(t *testing.T) (*netns, string, string) {
	t.Helper()
	if os.Geteuid() != 0 {
		t.Skip("network namespaces need root")
	}
	if _, err := exec.LookPath("nft"); err != nil {
		t.Skip("nft not installed (apt-get install nftables)")
	}
	n := &netns{t: t, prefix: fmt.Sprintf("cc%d-", os.Getpid()%100000)}
	t.Cleanup(n.remove)
	n.build()
	relay := startNATPeer(t, n, "inet", t.TempDir(), "--mode", "mirror", "--reachability", "public", "--relay-service",
		"--p2p-listen", "/ip4/"+natInet+"/udp/4001/quic-v1", "--p2p-listen", "/ip4/"+natInet+"/tcp/4001")
	t.Cleanup(relay.stop)
	id := strings.Fields(relay.line(t, "libp2p peer ID"))[3]
	return n, id, "/ip4/" + natInet + "/udp/4001/quic-v1/p2p/" + id
}

// startHome starts a mirror peer behind the NAT of namespace ns, sharing
// what data holds, given only the public peer as bootstrap: it finds the
// relay in the community (AutoRelay's peer source), unless extra names
// one with --relay.
func startHome(t *testing.T, n *netns, ns, data, bootstrap string, extra ...string) *natPeer {
	return startNATPeer(t, n, ns, data, append([]string{"--mode", "mirror", "--reachability", "private",
		"--bootstrap", bootstrap, "--merge-min", "2s", "--merge-max", "10s",
		"--p2p-listen", "/ip4/0.0.0.0/udp/4001/quic-v1", "--p2p-listen", "/ip4/0.0.0.0/tcp/4001"}, extra...)...)
}

func TestNATHomePeersMergeEachOther(t *testing.T) {
	trials := 3
	if s := os.Getenv("COCRAWL_NAT_TRIALS"); s != "" {
		trials, _ = strconv.Atoi(s)
	}
	n, id, relayAddr := natWorld(t)
	var toDirect []time.Duration
	punched, merged := 0, 0
	for trial := range trials {
		home := func(ns, cid string) *natPeer { return startHome(t, n, ns, homeData(t, cid, natRecords), relayAddr) }
		start := time.Now()
		h1, h2 := home("h1", "home1:1 h1"), home("h2", "home2:1 h2")
		var direct time.Duration
		how := ""
		ok := false
		for time.Since(start) < 90*time.Second {
			g1, c1 := otherHome(h1.table(n), id)
			g2, c2 := otherHome(h2.table(n), id)
			if direct == 0 && strings.HasPrefix(c1, "direct") && strings.HasPrefix(c2, "direct") {
				direct, how = time.Since(start), c1
			}
			if g1 >= natRecords && g2 >= natRecords && direct > 0 {
				ok = true
				break
			}
			time.Sleep(250 * time.Millisecond)
		}
		if !ok {
			// What the home peers saw, for the log.
			for _, h := range []*natPeer{h1, h2} {
				out, _ := exec.Command("ip", "netns", "exec", n.name(h.ns), binary, "peers", "--api", h.api).CombinedOutput()
				h.mu.Lock()
				t.Logf("%s:\n%s\n%s", h.ns, out, strings.Join(h.out, "\n"))
				h.mu.Unlock()
			}
		}
		h1.stop()
		h2.stop()
		t.Logf("trial %d: merged both ways %v, direct connection after %v (%s)", trial+1, ok, direct.Round(time.Millisecond), how)
		if ok {
			merged++
			toDirect = append(toDirect, direct)
			if how == "direct (hole punched)" {
				punched++
			}
		}
	}
	slices.Sort(toDirect)
	med := time.Duration(0)
	if len(toDirect) > 0 {
		med = toDirect[len(toDirect)/2]
	}
	t.Logf("%d trials: %d merged both ways over a direct connection, %d made by a hole punch; median time to the direct connection %v",
		trials, merged, punched, med.Round(time.Millisecond))
	if merged == 0 {
		t.Fatal("the home peers never merged each other's events over a direct connection")
	}
}

// otherHome is what a home peer's table says of the other home peer: the
// row, not the relay's, with the most events gained (a trial's peers also
// find the earlier trials' in the DHT, gone since), or else one connected.
func otherHome(rows []peer.Record, relayID string) (int64, string) {
	var best *peer.Record
	for i := range rows {
		r := &rows[i]
		if r.PeerID == "" || r.PeerID == relayID {
			continue
		}
		if best == nil || r.Gained > best.Gained || r.Gained == best.Gained && r.Connection != "" && best.Connection == "" {
			best = r
		}
	}
	if best == nil {
		return 0, ""
	}
	return best.Gained, best.Connection
}

// Merge throughput between the two home peers, over the hole-punched
// direct connection and, with hole punching off, through the relay in
// pieces. One home shares natBulk events; the figure is the other's bytes
// received over the time from its first merge to its last.
func TestNATMergeThroughput(t *testing.T) {
	n, id, relayAddr := natWorld(t)
	const natBulk = 50000
	for _, arm := range []struct {
		name  string
		extra []string
	}{{"direct", nil}, {"relayed", []string{"--no-hole-punching"}}} {
		src := startHome(t, n, "h1", homeData(t, "bulk:1 h1", natBulk), relayAddr, arm.extra...)
		dst := startHome(t, n, "h2", t.TempDir(), relayAddr, arm.extra...)
		var first, last time.Time
		var row peer.Record
		start := time.Now()
		for time.Since(start) < 5*time.Minute {
			for _, r := range dst.table(n) {
				if r.PeerID != "" && r.PeerID != id && r.Gained >= row.Gained {
					row = r
				}
			}
			if row.Gained > 0 && first.IsZero() {
				first = time.Now()
			}
			if row.Gained >= natBulk {
				last = time.Now()
				break
			}
			time.Sleep(100 * time.Millisecond)
		}
		src.stop()
		dst.stop()
		if last.IsZero() {
			t.Errorf("%s: %d of %d events after 5 minutes (%+v)", arm.name, row.Gained, natBulk, row)
			continue
		}
		span := last.Sub(first).Seconds() + 0.1 // the first piece landed within one look
		t.Logf("%s: %d events, %d bytes in %d merges; %.1f s from the first piece to the last; %.0f KB/s, %.0f events/s; connection %q",
			arm.name, row.Gained, row.Bytes, row.Merges, span, float64(row.Bytes)/span/1000, float64(row.Gained)/span, row.Connection)
	}
}

// Issue 32, item 1: two home peers on the defaults, as a user starts them
// (--listen on the LAN address, the public peer as bootstrap, and mirror
// mode, as these homes crawl no site of their own; reachability and
// libp2p addresses left to the defaults): the one public peer of the
// community is its relay. Each must
// reach a verdict on its reachability, find the relay and merge the
// other's events.
func TestNATHomePeersOnDefaults(t *testing.T) {
	n, id, relayAddr := natWorld(t)
	home := func(ns, lan, cid string) *natPeer {
		return startNATPeer(t, n, ns, homeData(t, cid, natRecords), "--listen", lan+":8470", "--bootstrap", relayAddr, "--mode", "mirror")
	}
	start := time.Now()
	h1, h2 := home("h1", "192.168.1.2", "home1:1 h1"), home("h2", "192.168.2.2", "home2:1 h2")
	defer h1.stop()
	defer h2.stop()
	for _, h := range []*natPeer{h1, h2} {
		if l := h.line(t, "reachability:"); !strings.Contains(l, "private") {
			t.Errorf("%s: %s", h.ns, l)
		}
	}
	ok := false
	var g1, g2 int64
	var c1, c2 string
	for time.Since(start) < 4*time.Minute {
		g1, c1 = otherHome(h1.table(n), id)
		g2, c2 = otherHome(h2.table(n), id)
		if g1 >= natRecords && g2 >= natRecords {
			ok = true
			break
		}
		time.Sleep(time.Second)
	}
	for _, h := range []*natPeer{h1, h2} {
		out, _ := exec.Command("ip", "netns", "exec", n.name(h.ns), binary, "peers", "--api", h.api).CombinedOutput()
		h.mu.Lock()
		t.Logf("%s:\n%s\n%s", h.ns, out, strings.Join(h.out, "\n"))
		h.mu.Unlock()
	}
	if !ok {
		t.Fatalf("after %v: home 1 gained %d of the other's events (%s), home 2 %d (%s)", time.Since(start).Round(time.Second), g1, c1, g2, c2)
	}
	t.Logf("both homes merged each other's %d events in %v (connections %q, %q)", natRecords, time.Since(start).Round(time.Second), c1, c2)
}
