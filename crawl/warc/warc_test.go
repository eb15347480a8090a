package warc

import (
	"encoding/json"
	"fmt"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

func capture(i int, kind Kind) Capture {
	body := fmt.Sprintf("<html><body><p>page %d</p>%s</body></html>", i, strings.Repeat("<p>text</p>", 200))
	c := Capture{URL: fmt.Sprintf("http://127.0.0.1:8080/p/%d.html?q=1", i), Kind: kind, Time: time.Unix(1764000000, 0), Server: "127.0.0.1:8080",
		ReqHeader: http.Header{"User-Agent": {"cocrawl/1.1"}, "If-None-Match": {`"v1"`}}, Proto: "HTTP/1.1", Status: 200,
		Header: http.Header{"Content-Type": {"text/html"}, "Etag": {`"v1"`}, "Transfer-Encoding": {"chunked"}}, Body: []byte(body)}
	if kind == NotModified {
		c.Status, c.Body = 304, nil
	}
	if kind == SameText {
		c.Fingerprint = "simhash64:0123456789abcdef"
	}
	return c
}

// Every kind of capture makes records that gowarc's strict reader takes
// without a complaint; files rotate by size.
func TestWriterRecordsAndRotates(t *testing.T) {
	dir := t.TempDir()
	if s := writeCaptures(t, dir); s.Records != 80 || s.Revisits != 30 {
		t.Errorf("stats %+v", s)
	}
	sum, err := Check(dir)
	if err != nil {
		t.Fatal(err)
	}
	if len(sum.Invalid) > 0 {
		t.Errorf("strict validation: %v", sum.Invalid)
	}
	files, count := sum.Files, sum.Records
	if files < 2 || count["request"] != 40 || count["response"] != 10 || count["revisit server-not-modified"] != 10 ||
		count["revisit identical-payload-digest"] != 10 || count["revisit same-text-fingerprint"] != 10 || count["warcinfo"] != files {
		t.Errorf("%d files; records %v", files, count)
	}
}

// warcio.js, the Webrecorder project's reader (npm), reads the files a
// Writer wrote, and every block matches its WARC-Block-Digest. The test
// needs node and the warcio package: .ci/run installs it and sets
// WARCIO; without them the test is skipped, and says so.
func TestWarcioReadsTheFiles(t *testing.T) {
	mod := os.Getenv("WARCIO")
	node, err := exec.LookPath("node")
	if mod == "" || err != nil {
		t.Skip("needs node and WARCIO=<node_modules/warcio> (.ci/run installs them)")
	}
	dir := t.TempDir()
	writeCaptures(t, dir)
	names, _ := filepath.Glob(filepath.Join(dir, "*.warc.gz"))
	cmd := exec.Command(node, append([]string{"testdata/warcio-check.cjs"}, names...)...)
	cmd.Env = append(os.Environ(), "WARCIO="+mod)
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("warcio: %v\n%s", err, out)
	}
	var got struct {
		Records int
		Types   map[string]int
		Bad     []string
	}
	if err := json.Unmarshal(out, &got); err != nil {
		t.Fatalf("warcio said %q: %v", out, err)
	}
	if len(got.Bad) > 3 {
		got.Bad = got.Bad[:3]
	}
	if got.Records != 80+len(names) || len(got.Bad) > 0 || got.Types["response"] != 10 || got.Types["request"] != 40 {
		t.Errorf("warcio read %+v", got)
	}
}

// writeCaptures writes 40 captures, ten of each kind, in files of 20 KiB.
func writeCaptures(t *testing.T, dir string) Stats {
	t.Helper()
	w, err := Open(Options{Dir: dir, MaxSize: 20 << 10, Software: "cocrawl test"})
	if err != nil {
		t.Fatal(err)
	}
	kinds := []Kind{Response, NotModified, SameBytes, SameText}
	for i := range 40 {
		if err := w.Keep(capture(i, kinds[i%4])); err != nil {
			t.Fatal(err)
		}
	}
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
	return w.Stats()
}
