package main

import (
	"bufio"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"
)

// countingSite serves a folder as a web server does (Last-Modified from the
// files' times) on loopback and counts the requests of pages, apart from
// robots.txt and IndexNow key files.
type countingSite struct {
	mu    sync.Mutex
	pages int
	paths []string
}

func (c *countingSite) ServeHTTP(w http.ResponseWriter, r *http.Request, next http.Handler) {
	if r.URL.Path != "/robots.txt" && !strings.HasSuffix(r.URL.Path, ".txt") {
		c.mu.Lock()
		c.pages++
		c.paths = append(c.paths, r.URL.Path)
		c.mu.Unlock()
	}
	next.ServeHTTP(w, r)
}

func (c *countingSite) count() int {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.pages
}

// The done-when of the publisher: a site running `cocrawl publish` is
// merged and not polled. A peer given the publisher merges its records,
// leaves the site's polls to it (its robots.shr names the site as special
// and its records are its own observations), and after that polls only
// spot-checks; a changed file reaches the peer by merge.
func TestPublishIsMergedNotPolled(t *testing.T) {
	root := t.TempDir()
	const files = 40
	old := time.Now().Add(-2 * time.Hour).Truncate(time.Second)
	for i := range files {
		body := fmt.Sprintf("<html><body><p>page %d</p><a href=\"/p%d.html\">next</a></body></html>", i, (i+1)%files)
		name := fmt.Sprintf("p%d.html", i)
		if i == 0 {
			name = "index.html"
		}
		p := filepath.Join(root, name)
		if err := os.WriteFile(p, []byte(body), 0o644); err != nil {
			t.Fatal(err)
		}
		os.Chtimes(p, old, old)
	}
	site := &countingSite{}
	fileServer := http.FileServer(http.Dir(root))
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	srv := &http.Server{Handler: http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { site.ServeHTTP(w, r, fileServer) })}
	go srv.Serve(ln)
	defer srv.Close()
	siteURL := "http://" + ln.Addr().String() + "/"

	ports := freePorts(t, 2)
	pubAddr, peerAddr := ports[0], ports[1]
	pub := exec.Command(binary, "publish", "--root", root, "--base", siteURL, "--data", t.TempDir(), "--listen", pubAddr,
		"--settle", "50ms", "--indexnow", "http://"+peerAddr+"/indexnow")
	pubOut, _ := pub.StdoutPipe()
	pub.Stderr = os.Stderr
	if err := pub.Start(); err != nil {
		t.Fatal(err)
	}
	defer func() {
		pub.Process.Signal(syscall.SIGTERM)
		pub.Wait()
	}()
	sc := bufio.NewScanner(pubOut)
	if !sc.Scan() || !strings.HasPrefix(sc.Text(), "publishing "+root+" as "+siteURL) {
		t.Fatalf("publish said %q", sc.Text())
	}
	go io.Copy(io.Discard, pubOut)
	for path, want := range map[string]string{"/robots.shr": "special: " + siteURL, "/.well-known/resourcesync": `capability="description"`} {
		if body := httpGet(t, "http://"+pubAddr+path); !strings.Contains(body, want) {
			t.Fatalf("%s lacks %q:\n%s", path, want, body)
		}
	}

	stopPeer := runPeer(t, "--data", t.TempDir(), "--listen", peerAddr, "--seed", siteURL, "--allow-private",
		"--peer", "http://"+pubAddr+"/robots.shr", "--delay", "50ms", "--revisit-min", "1s", "--revisit-max", "5s",
		"--merge-min", "300ms", "--merge-max", "2s", "--status-every", "0", "--log-level", "warn")
	defer stopPeer()
	type status struct {
		Polls       int64 `json:"polls"`
		MergeEvents int64 `json:"merge_events"`
		Delegated   int   `json:"delegated_prefixes"`
		Checks      struct {
			Asked     int64 `json:"asked"`
			Pending   int   `json:"pending"`
			Confirmed int64 `json:"confirmed"`
			Refuted   int64 `json:"refuted"`
		} `json:"checks"`
	}
	var st status
	waitUntil := func(what string, cond func() bool) {
		t.Helper()
		deadline := time.Now().Add(30 * time.Second)
		for {
			st = status{}
			if getJSON(t, "http://"+peerAddr+"/api/status?history=0", &st) && cond() {
				return
			}
			if time.Now().After(deadline) {
				t.Fatalf("after 30 s, waiting for %s: %+v, %d page requests", what, st, site.count())
			}
			time.Sleep(100 * time.Millisecond)
		}
	}
	// The first merge's spot-checks done too: one polled after the change
	// below would find it first, and the merge would then bring nothing new.
	waitUntil("the site's records merged, its polls left to the publisher, and the spot-checks done", func() bool {
		return st.MergeEvents >= files && st.Delegated == 1 && st.Checks.Asked >= 4 && st.Checks.Pending == 0
	})
	before := site.count()

	// A changed file reaches the peer by merge.
	changed := time.Now().Truncate(time.Second)
	p := filepath.Join(root, "p7.html")
	if err := os.WriteFile(p, []byte("<p>changed</p>"), 0o644); err != nil {
		t.Fatal(err)
	}
	os.Chtimes(p, changed, changed)
	merged, asked := st.MergeEvents, st.Checks.Asked
	// Merged; or a spot-check of records merged just before polled it
	// first (each merge asks for a few), and the merge then brings
	// nothing new: either way not a poll of the peer's own.
	waitUntil("the change merged", func() bool { return st.MergeEvents > merged || st.Checks.Asked > asked })
	// Five more seconds: with --revisit-max 5s every page would be polled
	// again, were it not left to the publisher.
	time.Sleep(5 * time.Second)
	st = status{}
	getJSON(t, "http://"+peerAddr+"/api/status?history=0", &st)
	// Spot-checks are asked as records are merged and polled soon after;
	// only a poll of the seed may come before the first merge.
	polled := site.count()
	t.Logf("%d page requests before the site was left to the publisher, %d in all, %d spot-checks asked (%+v), %d polls", before, polled, st.Checks.Asked, st.Checks, st.Polls)
	if int64(polled) > st.Checks.Asked+1 {
		t.Errorf("the peer requested %d pages, but asked only %d spot-checks: %v", polled, st.Checks.Asked, site.paths)
	}
	if st.Checks.Refuted != 0 || st.Checks.Confirmed == 0 {
		t.Errorf("checks %+v: the publisher's claims are true and must be confirmed", st.Checks)
	}
}

func httpGet(t *testing.T, u string) string {
	t.Helper()
	resp, err := http.Get(u)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return string(b)
}
