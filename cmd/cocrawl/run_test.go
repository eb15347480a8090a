package main

import (
	"bufio"
	"encoding/json"
	"io"
	"net"
	"net/http"
	"os"
	"os/exec"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/cocrawl/cocrawl/internal/testweb"
)

// freePorts reserves n loopback ports and frees them for the processes.
func freePorts(t *testing.T, n int) []string {
	t.Helper()
	var addrs []string
	var lns []net.Listener
	for range n {
		ln, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			t.Fatal(err)
		}
		lns = append(lns, ln)
		addrs = append(addrs, ln.Addr().String())
	}
	for _, ln := range lns {
		ln.Close()
	}
	return addrs
}

// runPeer starts `cocrawl run` and returns a function that stops it with
// SIGTERM and returns its output.
func runPeer(t *testing.T, args ...string) func() string {
	t.Helper()
	stop, _ := runPeerLines(t, args...)
	return stop
}

// runPeerLines is runPeer that also returns a function waiting for the
// first output line with a prefix (after trimming spaces).
func runPeerLines(t *testing.T, args ...string) (stop func() string, await func(prefix string) string) {
	t.Helper()
	cmd := exec.Command(binary, append([]string{"run"}, args...)...)
	pr, pw := io.Pipe()
	cmd.Stdout, cmd.Stderr = pw, os.Stderr
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	var mu sync.Mutex
	var seen []string
	changed := make(chan struct{}, 1)
	readDone := make(chan struct{})
	go func() {
		defer close(readDone)
		sc := bufio.NewScanner(pr)
		for sc.Scan() {
			mu.Lock()
			seen = append(seen, sc.Text())
			mu.Unlock()
			select {
			case changed <- struct{}{}:
			default:
			}
		}
	}()
	var once sync.Once
	var out string
	stop = func() string {
		once.Do(func() {
			cmd.Process.Signal(syscall.SIGTERM)
			err := cmd.Wait()
			pw.Close()
			<-readDone
			mu.Lock()
			out = strings.Join(seen, "\n") + "\n"
			mu.Unlock()
			if err != nil {
				t.Errorf("cocrawl run %v: %v\n%s", args, err, out)
			}
		})
		return out
	}
	await = func(prefix string) string {
		deadline := time.After(20 * time.Second)
		for {
			mu.Lock()
			for _, l := range seen {
				if strings.HasPrefix(strings.TrimSpace(l), prefix) {
					mu.Unlock()
					return strings.TrimSpace(l)
				}
			}
			mu.Unlock()
			select {
			case <-changed:
			case <-time.After(100 * time.Millisecond):
			case <-deadline:
				t.Fatalf("cocrawl run %v never printed a line starting %q", args, prefix)
			}
		}
	}
	t.Cleanup(func() { stop() })
	return stop, await
}

func getJSON(t *testing.T, u string, v any) bool {
	resp, err := http.Get(u)
	if err != nil {
		return false
	}
	defer resp.Body.Close()
	if resp.StatusCode != 200 {
		return false
	}
	return json.NewDecoder(resp.Body).Decode(v) == nil
}

type runStatus struct {
	Crawler        string             `json:"crawler"`
	Mode           string             `json:"mode"`
	Controller     string             `json:"controller"`
	Rho            float64            `json:"rho"`
	Polls          int64              `json:"polls"`
	Merges         int64              `json:"merges"`
	MergeEvents    int64              `json:"merge_events"`
	EventsPerPoll  float64            `json:"events_per_poll"`
	EventsPerMerge float64            `json:"events_per_merge"`
	PeersHealthy   int                `json:"peers_healthy"`
	TimeAtRho      map[string]float64 `json:"time_at_rho"`
}

// The done-when of the peer issue, as processes: three `cocrawl run`
// against a synthetic web poll, merge each other's events and serve their
// dashboards; a restarted peer keeps its peer table.
func TestRunThreePeers(t *testing.T) {
	w, err := testweb.Start(testweb.Config{Hosts: 3, PagesPerHost: 20, UpdateRate: 0.2, Seed: 3})
	if err != nil {
		t.Fatal(err)
	}
	defer w.Close()
	stopWeb := make(chan struct{})
	go w.Run(contextUntil(stopWeb))
	defer close(stopWeb)

	addrs := freePorts(t, 3)
	modes := [][]string{{"--mode", "sharing-hybrid"}, {"--rho", "bangbang"}, {"--mode", "mirror"}}
	var stops []func() string
	datas := make([]string, 3)
	for i, addr := range addrs {
		datas[i] = t.TempDir()
		args := []string{"--data", datas[i], "--listen", addr, "--seed", w.Seeds()[i], "--allow-private",
			"--delay", "50ms", "--revisit-min", "1s", "--revisit-max", "5s", "--merge-min", "300ms", "--merge-max", "2s",
			"--status-every", "1s", "--log-level", "warn"}
		args = append(args, modes[i]...)
		for j, other := range addrs {
			if j != i {
				args = append(args, "--peer", "http://"+other+"/robots.shr")
			}
		}
		stops = append(stops, runPeer(t, args...))
	}
	deadline := time.Now().Add(30 * time.Second)
	sts := make([]runStatus, 3)
	for {
		ready := true
		for i, addr := range addrs {
			sts[i] = runStatus{}
			ok := getJSON(t, "http://"+addr+"/api/status?history=0", &sts[i])
			if !ok || sts[i].Merges == 0 || sts[i].MergeEvents == 0 || sts[i].PeersHealthy != 2 {
				ready = false
			}
		}
		if ready {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("after 30 s the peers are %+v", sts)
		}
		time.Sleep(200 * time.Millisecond)
	}
	if sts[2].Polls != 0 || sts[2].Mode != "mirror" || sts[1].Controller != "bangbang" || sts[0].Polls == 0 {
		t.Fatalf("statuses %+v", sts)
	}
	for _, addr := range addrs {
		for path, want := range map[string]string{"/": "cocrawl peer", "/metrics": "cocrawl_sitemap_reads_total{outcome=", "/robots.shr": "rho: ",
			"/api/status": `"sitemap_reads"`, "/.well-known/resourcesync": `capability="description"`} {
			resp, err := http.Get("http://" + addr + path)
			if err != nil {
				t.Fatal(err)
			}
			body, _ := io.ReadAll(resp.Body)
			resp.Body.Close()
			if !strings.Contains(string(body), want) {
				t.Fatalf("%s%s lacks %q", addr, path, want)
			}
			// Measured freshness beside the model's (issue 28); hosts
			// distrusted for their validators, revisits brought forward.
			for _, also := range map[string][]string{
				"/metrics":    {`cocrawl_freshness_samples_total{outcome="verdict"}`, "cocrawl_known_gone_share", `cocrawl_hosts_distrusted{validator="last_modified"}`, "cocrawl_revisits_advanced_total"},
				"/api/status": {`"freshness": {`, `"hosts_distrusted": {`, `"revisits_advanced"`},
			}[path] {
				if !strings.Contains(string(body), also) {
					t.Fatalf("%s%s lacks %q", addr, path, also)
				}
			}
		}
	}
	out := stops[0]()
	if !strings.Contains(out, "dashboard http://"+addrs[0]+"/") || !strings.Contains(out, "stopped: events per poll") || !strings.Contains(out, "ev/merge") {
		t.Fatalf("output of the first peer:\n%s", out)
	}
	for i, st := range sts {
		t.Logf("peer %d (%s, %s): rho %.2f, %d polls at %.3f events each, %d merges at %.2f events each",
			i, st.Mode, st.Controller, st.Rho, st.Polls, st.EventsPerPoll, st.Merges, st.EventsPerMerge)
	}

	// Restarted without --peer, the first keeps its table.
	stopAgain := runPeer(t, "--data", datas[0], "--listen", addrs[0], "--allow-private", "--delay", "50ms", "--status-every", "0", "--log-level", "warn")
	var peers struct {
		Peers []struct {
			URL    string `json:"url"`
			Merges int64  `json:"merges"`
		} `json:"peers"`
	}
	deadline = time.Now().Add(10 * time.Second)
	for !getJSON(t, "http://"+addrs[0]+"/api/peers", &peers) && time.Now().Before(deadline) {
		time.Sleep(100 * time.Millisecond)
	}
	if len(peers.Peers) != 2 || peers.Peers[0].Merges == 0 {
		t.Fatalf("after restart the peer table is %+v", peers)
	}
	if out := stopAgain(); !strings.Contains(out, "2 peers resumed") {
		t.Fatalf("restart said:\n%s", out)
	}
}

// Peers found through a bootstrap node and the community DHT, with no
// --peer: a mirror merges over libp2p from the two others, and `cocrawl
// peers` shows how each was found.
func TestRunFindsPeersThroughTheDHT(t *testing.T) {
	w, err := testweb.Start(testweb.Config{Hosts: 2, PagesPerHost: 10, Seed: 4})
	if err != nil {
		t.Fatal(err)
	}
	defer w.Close()
	addrs := freePorts(t, 3)
	common := []string{"--allow-private", "--delay", "50ms", "--merge-min", "300ms", "--merge-max", "2s",
		"--status-every", "0", "--log-level", "warn", "--community", "e2e-test"}
	_, awaitA := runPeerLines(t, append([]string{"--data", t.TempDir(), "--listen", addrs[0], "--seed", w.Seeds()[0]}, common...)...)
	boot := awaitA("/ip4/127.0.0.1/tcp/")
	runPeerLines(t, append([]string{"--data", t.TempDir(), "--listen", addrs[1], "--seed", w.Seeds()[1], "--bootstrap", boot}, common...)...)
	runPeerLines(t, append([]string{"--data", t.TempDir(), "--listen", addrs[2], "--mode", "mirror", "--bootstrap", boot}, common...)...)

	var st struct {
		PeerID      string   `json:"peer_id"`
		P2PAddrs    []string `json:"p2p_addrs"`
		PeersKnown  int      `json:"peers_known"`
		MergeEvents int64    `json:"merge_events"`
	}
	deadline := time.Now().Add(30 * time.Second)
	for !(getJSON(t, "http://"+addrs[2]+"/api/status?history=0", &st) && st.PeersKnown == 2 && st.MergeEvents > 0) {
		if time.Now().After(deadline) {
			t.Fatalf("the mirror's status: %+v", st)
		}
		time.Sleep(200 * time.Millisecond)
	}
	if st.PeerID == "" || len(st.P2PAddrs) == 0 || !strings.HasSuffix(st.P2PAddrs[0], "/p2p/"+st.PeerID) {
		t.Fatalf("status without libp2p identity: %+v", st)
	}
	out := mustRun(t, "peers", "--api", "http://"+addrs[2])
	if strings.Count(out, " dht ") != 2 || !strings.Contains(out, "healthy") || !strings.Contains(out, "community e2e-test") || !strings.Contains(out, "freshness") {
		t.Fatalf("cocrawl peers says:\n%s", out)
	}
}
