package protocol

import (
	"encoding/xml"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/cocrawl/cocrawl/webevents"
)

// The documents as an independent reader sees them (encoding/xml with the
// namespaces spelt out, as a ResourceSync client must).
type rsLink struct {
	Rel  string `xml:"rel,attr"`
	Href string `xml:"href,attr"`
}

type rsMD struct {
	Capability string `xml:"capability,attr"`
	Change     string `xml:"change,attr"`
	Datetime   string `xml:"datetime,attr"`
	From       string `xml:"from,attr"`
	Until      string `xml:"until,attr"`
	Length     string `xml:"length,attr"`
	Hash       string `xml:"hash,attr"`
}

type rsEntry struct {
	Loc string `xml:"http://www.sitemaps.org/schemas/sitemap/0.9 loc"`
	MD  rsMD   `xml:"http://www.openarchives.org/rs/terms/ md"`
}

type rsDoc struct {
	XMLName  xml.Name
	Links    []rsLink  `xml:"http://www.openarchives.org/rs/terms/ ln"`
	MD       rsMD      `xml:"http://www.openarchives.org/rs/terms/ md"`
	URLs     []rsEntry `xml:"http://www.sitemaps.org/schemas/sitemap/0.9 url"`
	Sitemaps []rsEntry `xml:"http://www.sitemaps.org/schemas/sitemap/0.9 sitemap"`
}

func fetchRS(t *testing.T, url string, dir string) rsDoc {
	t.Helper()
	resp, body := get(t, url)
	if resp.StatusCode != http.StatusOK || !strings.HasPrefix(resp.Header.Get("Content-Type"), "application/xml") {
		t.Fatalf("%s: %d %s", url, resp.StatusCode, resp.Header.Get("Content-Type"))
	}
	var d rsDoc
	if err := xml.Unmarshal(body, &d); err != nil {
		t.Fatalf("%s: %v\n%s", url, err, body)
	}
	if dir != "" {
		name := filepath.Join(dir, strings.NewReplacer("/", "_", ":", "_").Replace(url))
		if err := os.WriteFile(name, body, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	return d
}

// A ResourceSync client follows a peer from the well-known URI down to the
// change lists, and finds every record of the day logs once, as a change
// of the right kind and time; a withheld source's records are left out.
func TestResourceSync(t *testing.T) {
	st := webevents.NewMemStore()
	today := webevents.DayOf(time.Now().Unix())
	yesterday := dayEvents(today-1, 12000, 0) // more than one page (1 MiB of day file)
	odd := yesterday[1]
	odd.URL, odd.Stat, odd.LPD, odd.Digest = "http://site1.example/a?b=1&c=<2>", webevents.Update, odd.LPD+1, "sha256:"+strings.Repeat("ab", 32)
	yesterday = append(yesterday, odd)
	gone := yesterday[2]
	gone.Stat, gone.LPD, gone.LMD = webevents.Delete, gone.LPD+2, gone.LPD+2
	yesterday = append(yesterday, gone)
	if err := st.Record(yesterday); err != nil {
		t.Fatal(err)
	}
	now := time.Now().Unix()
	if err := st.Record([]webevents.Event{{URL: "http://site2.example/new", Size: 10, LMD: now - 60, LPD: now, CID: "x.example:1 c/1", Stat: webevents.Create}}); err != nil {
		t.Fatal(err)
	}
	liar := webevents.Event{URL: "http://site2.example/liar", Size: 10, LMD: now - 60, LPD: now, CID: "x.example:1 c/1", Stat: webevents.Create, From: "http://liar.example/robots.shr"}
	if _, err := st.Merge([]webevents.Event{liar}, nil); err != nil {
		t.Fatal(err)
	}
	srv, err := NewServer(st, ServerOptions{Withhold: func(from string) bool { return strings.Contains(from, "liar") }})
	if err != nil {
		t.Fatal(err)
	}
	ts := httptest.NewServer(srv)
	defer ts.Close()
	dir := t.TempDir()

	desc := fetchRS(t, ts.URL+"/.well-known/resourcesync", dir)
	if desc.MD.Capability != "description" || len(desc.URLs) != 1 || desc.URLs[0].MD.Capability != "capabilitylist" {
		t.Fatalf("source description %+v", desc)
	}
	caps := fetchRS(t, desc.URLs[0].Loc, dir)
	if caps.MD.Capability != "capabilitylist" || len(caps.URLs) != 1 || caps.URLs[0].MD.Capability != "changelist" ||
		len(caps.Links) != 1 || caps.Links[0].Rel != "up" {
		t.Fatalf("capability list %+v", caps)
	}
	index := fetchRS(t, caps.URLs[0].Loc, dir)
	if index.XMLName.Local != "sitemapindex" || index.MD.Capability != "changelist" || len(index.Sitemaps) < 3 {
		t.Fatalf("change list index %+v", index)
	}
	seen := map[string]int{}
	var changes []rsEntry
	for _, sm := range index.Sitemaps {
		cl := fetchRS(t, sm.Loc, dir)
		if cl.MD.Capability != "changelist" || cl.MD.From != sm.MD.From || cl.MD.Until != sm.MD.Until {
			t.Fatalf("%s: %+v, listed as %+v", sm.Loc, cl.MD, sm.MD)
		}
		for _, u := range cl.URLs {
			seen[u.Loc+" "+u.MD.Change+" "+u.MD.Datetime]++
		}
		changes = append(changes, cl.URLs...)
	}
	var want int
	for _, day := range []int64{today - 1, today} {
		err := st.ReadDay(day, 0, func(_ int64, e webevents.Event) error {
			if strings.Contains(e.From, "liar") {
				return nil
			}
			want++
			change := map[webevents.Stat]string{webevents.Create: "created", webevents.Update: "updated", webevents.Delete: "deleted"}[e.Stat]
			if k := e.URL + " " + change + " " + time.Unix(e.LMD, 0).UTC().Format(time.RFC3339); seen[k] != 1 {
				t.Errorf("record %s found %d times", k, seen[k])
			}
			return nil
		})
		if err != nil {
			t.Fatal(err)
		}
	}
	if len(changes) != want || want != len(yesterday)+1 {
		t.Fatalf("%d changes listed for %d records (%d recorded, one withheld)", len(changes), want, len(yesterday)+2)
	}
	for _, c := range changes {
		if c.Loc == odd.URL && (c.MD.Hash != "sha-256:"+strings.Repeat("ab", 32) || c.MD.Change != "updated") {
			t.Errorf("the escaped URL's entry: %+v", c)
		}
	}
	for _, p := range []string{"/resourcesync/changelist/12-0.xml", "/resourcesync/changelist/x.xml", "/resourcesync/changelist/" + strconv.FormatInt(today, 10) + "-9.xml"} {
		if resp, _ := get(t, ts.URL+p); resp.StatusCode != http.StatusNotFound {
			t.Errorf("%s: %d, want 404", p, resp.StatusCode)
		}
	}
	checkWithXmllint(t, dir)
}

// checkWithXmllint reads every document with libxml2 (apt-get install
// libxml2-utils): well-formed, the sitemap namespace on the root and the
// rs namespace on every rs: element.
func checkWithXmllint(t *testing.T, dir string) {
	t.Helper()
	lint, err := exec.LookPath("xmllint")
	if err != nil {
		t.Log("xmllint not installed (apt-get install libxml2-utils): the documents were read by encoding/xml only")
		return
	}
	files, _ := filepath.Glob(filepath.Join(dir, "*"))
	for _, f := range files {
		if out, err := exec.Command(lint, "--noout", f).CombinedOutput(); err != nil {
			t.Errorf("xmllint %s: %v\n%s", filepath.Base(f), err, out)
			continue
		}
		root, err := exec.Command(lint, "--xpath", "namespace-uri(/*)", f).Output()
		if err != nil || strings.TrimSpace(string(root)) != "http://www.sitemaps.org/schemas/sitemap/0.9" {
			t.Errorf("xmllint %s: root namespace %q (%v)", filepath.Base(f), root, err)
		}
		stray, err := exec.Command(lint, "--xpath", "count(//*[starts-with(name(), 'rs:') and namespace-uri() != 'http://www.openarchives.org/rs/terms/'])", f).Output()
		if err != nil || strings.TrimSpace(string(stray)) != "0" {
			t.Errorf("xmllint %s: %s rs: elements outside the rs namespace (%v)", filepath.Base(f), stray, err)
		}
	}
	t.Logf("xmllint read %d documents", len(files))
}
