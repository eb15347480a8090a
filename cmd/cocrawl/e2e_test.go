package main

import (
	"bufio"
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"math/rand/v2"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/cocrawl/cocrawl/internal/testweb"
	"github.com/cocrawl/cocrawl/protocol"
	"github.com/cocrawl/cocrawl/webevents"
)

var binary string

func TestMain(m *testing.M) {
	dir, err := os.MkdirTemp("", "cocrawl-e2e")
	if err != nil {
		panic(err)
	}
	binary = filepath.Join(dir, "cocrawl")
	if out, err := exec.Command("go", "build", "-o", binary, ".").CombinedOutput(); err != nil {
		fmt.Fprintf(os.Stderr, "build: %v\n%s", err, out)
		os.Exit(1)
	}
	code := m.Run()
	os.RemoveAll(dir)
	os.Exit(code)
}

// cocrawl runs the binary and returns its output and exit code.
func cocrawl(t *testing.T, args ...string) (string, int) {
	t.Helper()
	cmd := exec.Command(binary, args...)
	var out bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &out
	err := cmd.Run()
	code := 0
	if ee, ok := err.(*exec.ExitError); ok {
		code = ee.ExitCode()
	} else if err != nil {
		t.Fatal(err)
	}
	return out.String(), code
}

func mustRun(t *testing.T, args ...string) string {
	t.Helper()
	out, code := cocrawl(t, args...)
	if code != 0 {
		t.Fatalf("cocrawl %s: exit %d\n%s", strings.Join(args, " "), code, out)
	}
	return out
}

// startShare starts `cocrawl share` on a free loopback port and returns
// its robots.shr URL and a function that stops it with SIGTERM.
func startShare(t *testing.T, data, listen string) (string, func()) {
	t.Helper()
	cmd := exec.Command(binary, "share", "--data", data, "--listen", listen, "--contact", "ops@example.org")
	stdout, _ := cmd.StdoutPipe()
	cmd.Stderr = os.Stderr
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	sc := bufio.NewScanner(stdout)
	if !sc.Scan() {
		t.Fatal("share printed nothing")
	}
	f := strings.Fields(sc.Text()) // "sharing DIR at URL ..."
	if len(f) < 4 {
		t.Fatalf("share said %q", sc.Text())
	}
	stopped := false
	stop := func() {
		if stopped {
			return
		}
		stopped = true
		cmd.Process.Signal(syscall.SIGTERM)
		done := make(chan error, 1)
		go func() { done <- cmd.Wait() }()
		select {
		case err := <-done:
			if err != nil {
				t.Errorf("share did not stop cleanly: %v", err)
			}
		case <-time.After(15 * time.Second):
			cmd.Process.Kill()
			t.Error("share ignored SIGTERM")
		}
	}
	t.Cleanup(stop)
	return f[3], stop
}

func genEvents(day int64, n, from int, cid string) []webevents.Event {
	evs := make([]webevents.Event, n)
	// lpds stay in the past: a merge clamps a future lpd to now, which
	// would fail the comparison in the first hours of a UTC day.
	span := min(int64(80000), time.Now().Unix()-webevents.DayStart(day))
	span = max(span, 1)
	for i := range evs {
		lpd := webevents.DayStart(day) + int64(from+i)%span
		evs[i] = webevents.Event{URL: fmt.Sprintf("http://s%d.example/%d", (from+i)%7, from+i), Size: int64(from + i),
			LMD: lpd - 100, LPD: lpd, CID: cid, Stat: webevents.Stat("CUD"[(from+i)%3])}
	}
	return evs
}

func writeDat(t *testing.T, path string, evs []webevents.Event, extra string) {
	t.Helper()
	var b []byte
	for i := range evs {
		b = webevents.AppendRecord(b, &evs[i])
	}
	if err := os.WriteFile(path, append(b, extra...), 0o600); err != nil {
		t.Fatal(err)
	}
}

func readState(t *testing.T, data string) map[string]webevents.Event {
	t.Helper()
	out := mustRun(t, "events", "--data", data)
	m := map[string]webevents.Event{}
	for _, line := range strings.Split(strings.TrimSpace(out), "\n") {
		if line == "" {
			continue
		}
		var e webevents.Event
		if err := json.Unmarshal([]byte(line), &e); err != nil {
			t.Fatalf("events printed %q: %v", line, err)
		}
		m[e.URL] = e
	}
	return m
}

// expected folds batches of events with webevents.Resolve, as a merge must.
func expected(batches ...[]webevents.Event) map[string]webevents.Event {
	cur := map[string]webevents.Event{}
	for _, b := range batches {
		for _, in := range b {
			c, ok := cur[in.URL]
			var d webevents.Decision
			if ok {
				d = webevents.Resolve(&c, in)
			} else {
				d = webevents.Resolve(nil, in)
			}
			if d.Action != webevents.Ignore {
				cur[in.URL] = d.Result
			}
		}
	}
	m := map[string]webevents.Event{}
	for u, e := range cur {
		m[u] = e
	}
	return m
}

func TestShareAndMergeEndToEnd(t *testing.T) {
	dir := t.TempDir()
	a, b := filepath.Join(dir, "A"), filepath.Join(dir, "B")
	today := webevents.Today(time.Now())
	sharer := append(genEvents(today-1, 300, 0, "a.example:8470 A/1"), genEvents(today, 200, 300, "a.example:8470 A/1")...)
	writeDat(t, filepath.Join(dir, "a.dat"), sharer, "url: http://bad.example/\nstat: X\n\n")
	out := mustRun(t, "events", "import", filepath.Join(dir, "a.dat"), "--data", a)
	if !strings.Contains(out, "500 records, 1 skipped") {
		t.Fatalf("import: %s", out)
	}
	// B already knows some of the same URLs, with other dates.
	mine := genEvents(today-1, 40, 0, "b.example:8470 B/1")
	for i := range mine {
		mine[i].LMD += int64(i%3-1) * 50
	}
	writeDat(t, filepath.Join(dir, "b.dat"), mine, "")
	mustRun(t, "events", "import", filepath.Join(dir, "b.dat"), "--data", b)

	shr, stop := startShare(t, a, "127.0.0.1:0")
	out = mustRun(t, "merge", shr, "--data", b, "--allow-private")
	if !strings.Contains(out, "500 records") {
		t.Fatalf("first merge: %s", out)
	}
	out = mustRun(t, "shr", "lint", shr, "--allow-private")
	if !strings.Contains(out, "no violations") {
		t.Fatalf("lint of our own server: %s", out)
	}
	stop()
	got, want := readState(t, b), expected(mine, sharer)
	if len(got) != len(want) {
		t.Fatalf("B holds %d URLs, the rules say %d", len(got), len(want))
	}
	for u, w := range want {
		g := got[u]
		g.From = "" // attribution is not the rules' business
		if g != w {
			t.Fatalf("%s: B holds %+v, the rules say %+v", u, got[u], w)
		}
	}

	// New records on the current day; a second merge moves only those.
	more := genEvents(today, 25, 5000, "a.example:8470 A/1")
	writeDat(t, filepath.Join(dir, "more.dat"), more, "")
	mustRun(t, "events", "import", filepath.Join(dir, "more.dat"), "--data", a)
	// Restart on the same address: the peer keeps its URL, so the cursor applies.
	shr, _ = startShare(t, a, strings.TrimSuffix(strings.TrimPrefix(shr, "http://"), "/robots.shr"))
	out = mustRun(t, "merge", shr, "--data", b, "--allow-private")
	if !strings.Contains(out, fmt.Sprintf("day %d: status 304, 0 records", today-1)) ||
		!strings.Contains(out, fmt.Sprintf("day %d: status 206, 25 records", today)) {
		t.Fatalf("second merge should fetch only the 25 new records of today:\n%s", out)
	}
	if got := readState(t, b); len(got) != len(want)+25 {
		t.Fatalf("after second merge B holds %d URLs", len(got))
	}

	// The same day logs as ResourceSync (spec section 13): today's change
	// list holds today's 225 records.
	base := strings.TrimSuffix(shr, "/robots.shr")
	for _, p := range []string{"/.well-known/resourcesync", "/resourcesync/changelist.xml", fmt.Sprintf("/resourcesync/changelist/%d-0.xml", today)} {
		resp, err := http.Get(base + p)
		if err != nil {
			t.Fatal(err)
		}
		body, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		if resp.StatusCode != http.StatusOK {
			t.Fatalf("%s: %d", p, resp.StatusCode)
		}
		if n := strings.Count(string(body), "<url>"); strings.HasSuffix(p, "-0.xml") && n != 225 {
			t.Fatalf("today's change list has %d entries, want 225", n)
		}
	}
}

// A peer of 2002 with plain files: no gzip, no Range, no validators.
func TestMergeFromPlainFilePeer(t *testing.T) {
	dir := t.TempDir()
	today := webevents.Today(time.Now())
	files := http.NewServeMux()
	evs := genEvents(today, 50, 0, "old.example:33433 OldCrawler/1.0")
	writeDat(t, filepath.Join(dir, fmt.Sprintf("%d.dat", today)), evs, "")
	os.WriteFile(filepath.Join(dir, "robots.shr"), []byte("version: 1.0\ncrawler: old.example:33433 OldCrawler/1.0\nrepository: /\n"), 0o600)
	files.HandleFunc("/", func(w http.ResponseWriter, r *http.Request) {
		b, err := os.ReadFile(filepath.Join(dir, filepath.Base(r.URL.Path)))
		if err != nil {
			http.NotFound(w, r)
			return
		}
		w.Write(b) // no Range, no ETag, no gzip
	})
	ts := httptest.NewServer(files)
	defer ts.Close()
	data := filepath.Join(dir, "store")
	for range 2 {
		mustRun(t, "merge", ts.URL+"/robots.shr", "--data", data, "--allow-private")
	}
	if got := readState(t, data); len(got) != 50 || got[evs[7].URL].CID != "old.example:33433 OldCrawler/1.0" {
		t.Fatalf("got %d URLs: %+v", len(got), got[evs[7].URL])
	}
	out, code := cocrawl(t, "shr", "lint", ts.URL+"/robots.shr", "--allow-private")
	if code != 1 || !strings.Contains(out, "no ETag") {
		t.Fatalf("lint of a plain peer: exit %d\n%s", code, out)
	}
}

func TestCommandLineErrors(t *testing.T) {
	dir := t.TempDir()
	for _, tt := range []struct {
		args []string
		code int
		says string
	}{
		{nil, 2, "usage"},
		{[]string{"frob"}, 2, "unknown command"},
		{[]string{"merge"}, 2, "robots.shr"},
		{[]string{"merge", "--nope"}, 2, "not defined"},
		{[]string{"events", "--data", dir, "--format", "xml"}, 2, "--format"},
		{[]string{"events", "import", "/no/such.dat", "--data", dir}, 1, "cannot read"},
		{[]string{"merge", "http://127.0.0.1:9/robots.shr", "--data", dir}, 1, "--allow-private"},
		{[]string{"shr", "lint"}, 2, "robots.shr"},
		{[]string{"demo", "--peers", "1"}, 2, "--peers"},
		{[]string{"peers", "--api", "http://127.0.0.1:9"}, 1, "cannot ask"},
		{[]string{"run", "--data", dir, "--listen", "127.0.0.1:0", "--seed", "http://a.example/", "--community", "Bad Name"}, 2, "community"},
		{[]string{"run", "--data", dir, "--listen", "127.0.0.1:0", "--seed", "http://a.example/", "--bootstrap", "/ip4/1.2.3.4"}, 2, "bootstrap"},
		{[]string{"robots", "x"}, 2, "robots.txt file"},
		{[]string{"robots", "/no/such", "bot", "http://a.example/"}, 1, "cannot read"},
		{[]string{"crawl", "--data", dir}, 2, "--seed"},
		{[]string{"crawl", "--data", dir, "--seed", "http://a.example/", "--workers", "0"}, 2, "--workers"},
		{[]string{"crawl", "--data", dir, "--seed", "http://a.example/", "--config", "/no/such.toml"}, 2, "config"},
		{[]string{"events", "--data", dir, "--url", "http://none.example/"}, 1, "no event"},
		{[]string{"run", "--data", dir, "--listen", "127.0.0.1:0"}, 2, "--seed"},
		{[]string{"run", "--data", dir, "--listen", "127.0.0.1:0", "--mode", "lazy"}, 2, "--mode"},
		{[]string{"run", "--data", dir, "--listen", "127.0.0.1:0", "--mode", "mirror", "--rho", "0.5"}, 2, "contradicts"},
		{[]string{"run", "--data", dir, "--listen", "127.0.0.1:0", "--rho", "fixed:2"}, 2, "--rho"},
		{[]string{"run", "--data", dir, "--listen", "127.0.0.1:0", "--seed", "http://a.example/", "--peer", "ftp://x/"}, 2, "robots.shr"},
	} {
		out, code := cocrawl(t, tt.args...)
		if code != tt.code || !strings.Contains(out, tt.says) {
			t.Errorf("cocrawl %v: exit %d, %q; want exit %d saying %q", tt.args, code, out, tt.code, tt.says)
		}
		if tt.code != 0 && tt.args != nil && strings.Count(strings.TrimSpace(out), "\n") > 0 {
			t.Errorf("cocrawl %v: error is more than one line:\n%s", tt.args, out)
		}
	}
}

// A peer that cannot start (a libp2p address this machine does not have:
// binding fails, nothing is sent) exits 1 with the cause, not 2 as if the
// command line were wrong; a wrong setting is still 2.
func TestRunStartFailureIsNotAUsageError(t *testing.T) {
	dir := t.TempDir()
	out, code := cocrawl(t, "run", "--data", dir, "--listen", "127.0.0.1:0", "--seed", "http://a.example/",
		"--p2p-listen", "/ip4/192.0.2.7/tcp/4001")
	if code != 1 || !strings.Contains(out, "libp2p host") || !strings.Contains(out, "cannot assign requested address") {
		t.Errorf("a libp2p listen failure: exit %d, %q; want exit 1 naming the cause", code, out)
	}
	out, code = cocrawl(t, "crawl", "--data", dir, "--seed", "http://a.example/", "--include", "(")
	if code != 2 || !strings.Contains(out, "include") {
		t.Errorf("a bad --include: exit %d, %q; want exit 2", code, out)
	}
}

// A crawl killed with SIGKILL resumes with its frontier, and polls on
// without recording any event twice.
func TestCrawlKillAndResume(t *testing.T) {
	w, err := testweb.Start(testweb.Config{Hosts: 4, PagesPerHost: 30, Seed: 7})
	if err != nil {
		t.Fatal(err)
	}
	defer w.Close()
	data := filepath.Join(t.TempDir(), "crawl")
	args := []string{"crawl", "--data", data, "--allow-private", "--delay", "30ms", "--progress", "50ms", "--revisit-min", "1h"}
	for _, s := range w.Seeds() {
		args = append(args, "--seed", s)
	}
	cmd := exec.Command(binary, args...)
	stdout, _ := cmd.StdoutPipe()
	cmd.Stderr = os.Stderr
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	sc := bufio.NewScanner(stdout)
	var polls int
	for sc.Scan() {
		var secs float64
		var known int
		if n, _ := fmt.Sscanf(sc.Text(), "%fs %d URLs known, %d polls", &secs, &known, &polls); n == 3 && polls >= 40 {
			break
		}
	}
	cmd.Process.Signal(syscall.SIGKILL)
	cmd.Wait()
	if polls < 40 {
		t.Fatal("the crawler never reported 40 polls")
	}

	out := mustRun(t, append(args[:len(args):len(args)], "--duration", "6s")...)
	var resumed int
	if i := strings.Index(out, "seeds, "); i >= 0 {
		fmt.Sscanf(out[i+len("seeds, "):], "%d URLs resumed", &resumed)
	}
	// Discovery is fast: nearly every page was known before the kill, and
	// what was known is what the restart loads.
	if resumed < 100 {
		t.Fatalf("resumed with %d URLs after %d polls:\n%s", resumed, polls, out)
	}
	// Every live page ends up created exactly once in the log.
	day := webevents.Today(time.Now())
	log := mustRun(t, "events", "--data", data, "--day", fmt.Sprint(day))
	creates := map[string]int{}
	for _, line := range strings.Split(strings.TrimSpace(log), "\n") {
		var e webevents.Event
		if json.Unmarshal([]byte(line), &e) == nil && e.Stat == webevents.Create {
			creates[e.URL]++
		}
	}
	for _, u := range w.LiveURLs() {
		if creates[u] != 1 {
			t.Errorf("%s created %d times", u, creates[u])
		}
	}
	t.Logf("killed after %d polls, resumed with %d URLs; %d pages created once each", polls, resumed, len(creates))
}

// `cocrawl subscribe` of one site runs a command per event of that site,
// keeps its place in its state file, and a second run from that file
// delivers nothing twice.
func TestSubscribeEndToEnd(t *testing.T) {
	dir := t.TempDir()
	data := filepath.Join(dir, "A")
	today := webevents.Today(time.Now())
	evs := genEvents(today, 40, 0, "a.example:8470 A/1")
	for i := range evs {
		if i%4 == 0 {
			evs[i].URL = strings.Replace(evs[i].URL, "://", "://other-", 1)
		}
	}
	writeDat(t, filepath.Join(dir, "a.dat"), evs, "")
	mustRun(t, "events", "import", filepath.Join(dir, "a.dat"), "--data", data)
	shr, _ := startShare(t, data, "127.0.0.1:0")
	base := strings.TrimSuffix(shr, "/robots.shr")
	prefix := webevents.Origin(evs[1].URL) + "/"
	want := 0
	for _, e := range evs {
		if strings.HasPrefix(e.URL, prefix) {
			want++
		}
	}
	state, out := filepath.Join(dir, "sub.json"), filepath.Join(dir, "events.jsonl")
	subscribe := func() {
		cmd := exec.Command(binary, "subscribe", base, "--prefix", prefix, "--state", state, "--allow-private",
			"--exec", `cat >> `+out+` && echo "$COCRAWL_STAT $COCRAWL_URL" >> `+out+`.env`)
		cmd.Stderr = os.Stderr
		if err := cmd.Start(); err != nil {
			t.Fatal(err)
		}
		deadline := time.Now().Add(20 * time.Second)
		for {
			b, _ := os.ReadFile(out)
			if strings.Count(string(b), "\n") >= want || time.Now().After(deadline) {
				break
			}
			time.Sleep(50 * time.Millisecond)
		}
		time.Sleep(500 * time.Millisecond) // more would come now, were any sent twice
		cmd.Process.Signal(syscall.SIGTERM)
		if err := cmd.Wait(); err != nil {
			t.Errorf("subscribe did not stop cleanly: %v", err)
		}
	}
	subscribe()
	subscribe()
	b, _ := os.ReadFile(out)
	lines := strings.Split(strings.TrimSpace(string(b)), "\n")
	if len(lines) != want {
		t.Fatalf("%d events delivered over two runs, want %d once each:\n%s", len(lines), want, b)
	}
	for _, l := range lines {
		var e protocol.SubscribedEvent
		if err := json.Unmarshal([]byte(l), &e); err != nil || !strings.HasPrefix(e.URL, prefix) || e.Day != today || e.Offset == nil {
			t.Fatalf("event %q: %v", l, err)
		}
	}
	env, _ := os.ReadFile(out + ".env")
	for _, l := range strings.Split(strings.TrimSpace(string(env)), "\n") {
		if stat, u, _ := strings.Cut(l, " "); len(stat) != 1 || !strings.Contains("CUD", stat) || !strings.HasPrefix(u, prefix) {
			t.Errorf("the command's environment: %q", l)
		}
	}
	if st, _ := os.ReadFile(state); !strings.Contains(string(st), `"stream": "`) {
		t.Errorf("state file: %s", st)
	}
}

// `measure scale --restart-only` restarts the crawler from the store a
// scale crawl left, and loads every URL that crawl knew.
func TestMeasureScaleRestartOnly(t *testing.T) {
	base := freePortRun(t, 3)
	data := t.TempDir()
	web := []string{"--hosts", "3", "--pages", "40", "--port-base", strconv.Itoa(base), "--data", data}
	out := mustRun(t, append([]string{"measure", "scale", "--run", "6s", "--every", "2s", "--fresh-run", "2s"}, web...)...)
	m := regexp.MustCompile(`URLs known at the end: (\d+)`).FindStringSubmatch(out)
	if m == nil || m[1] == "0" {
		t.Fatalf("no URLs known at the end:\n%s", out)
	}
	// the fresh crawl of the baseline ran after the restart, and its data
	// folder, beside --data, is gone
	if !regexp.MustCompile(`restart: \d+ URLs loaded[^\n]*\na fresh crawl of the same web in a new data folder, to 2000000 URLs known or for 2s`).MatchString(out) {
		t.Errorf("no fresh crawl after the restart:\n%s", out)
	}
	if left, _ := filepath.Glob(filepath.Join(filepath.Dir(data), "cocrawl-measure-fresh-*")); len(left) > 0 {
		t.Errorf("the fresh crawl left %v", left)
	}
	out = mustRun(t, append([]string{"measure", "scale", "--restart-only"}, web...)...)
	if !strings.Contains(out, "restart: "+m[1]+" URLs loaded") || strings.Contains(out, "polls per second") {
		t.Errorf("a restart alone of %s URLs printed:\n%s", m[1], out)
	}
	if out, code := cocrawl(t, "measure", "scale", "--restart-only"); code == 0 {
		t.Errorf("--restart-only without --data ran:\n%s", out)
	}
}

// freePortRun finds n consecutive loopback ports that are free now.
func freePortRun(t *testing.T, n int) int {
	t.Helper()
	for base := 23000 + rand.IntN(5000); base < 29000; base += n {
		var ls []net.Listener
		for p := base; p < base+n; p++ {
			l, err := net.Listen("tcp", "127.0.0.1:"+strconv.Itoa(p))
			if err != nil {
				break
			}
			ls = append(ls, l)
		}
		for _, l := range ls {
			l.Close()
		}
		if len(ls) == n {
			return base
		}
	}
	t.Fatal("no free ports")
	return 0
}
