package peer

import (
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/cocrawl/cocrawl/crawl"
	"github.com/cocrawl/cocrawl/crawl/fingerprint"
	"github.com/cocrawl/cocrawl/peer/trust"
	"github.com/cocrawl/cocrawl/protocol"
	"github.com/cocrawl/cocrawl/webevents"
)

// liarRepo is a share repository that tells false events about real
// pages: updates with lmd = now that never happened, and deletes of live
// pages, half of them under another crawler's cid.
func liarRepo(t *testing.T, urls []string, forged string) (*httptest.Server, *webevents.MemStore) {
	t.Helper()
	st := webevents.NewMemStore()
	now := time.Now().Unix()
	var lies []webevents.Event
	for i, u := range urls {
		e := webevents.Event{URL: u, Size: 1, LMD: now, LPD: now, CID: "liar.test:1 Liar/1", Stat: webevents.Update}
		if i%2 == 1 {
			e.Stat, e.CID = webevents.Delete, forged
		}
		lies = append(lies, e)
	}
	if err := st.Record(lies); err != nil {
		t.Fatal(err)
	}
	srv, err := protocol.NewServer(st, protocol.ServerOptions{Control: protocol.ShareControl{Crawler: "liar.test:1 Liar/1"}})
	if err != nil {
		t.Fatal(err)
	}
	ts := httptest.NewServer(srv)
	t.Cleanup(ts.Close)
	return ts, st
}

// A peer spot-checks what a lying peer gave it, distrusts it, merges
// nothing more from it, re-polls what it gave and stops publishing it.
func TestLiarIsDistrusted(t *testing.T) {
	w := startWeb(t, 1)
	ln := listen(t)
	// The liar knows the pages: it lies about each of them.
	var urls []string
	for _, u := range w.LiveURLs() {
		if n, err := crawl.Normalize(nil, u); err == nil {
			urls = append(urls, n)
		}
	}
	liar, _ := liarRepo(t, urls, ln.Addr().String()+" forged")
	cfg := testConfig(w.Seeds()[:1], "sharing-hybrid", liar.URL+"/robots.shr")
	cfg.Trust = TrustConfig{Policy: trust.Policy{Checks: 8}}
	a := startPeer(t, ln, t.TempDir(), cfg)

	liarURL := liar.URL + "/robots.shr"
	var row Record
	waitFor(t, 30*time.Second, "the liar distrusted", func() bool {
		for _, r := range a.Peers() {
			if r.URL == liarURL {
				row = r
			}
		}
		return !row.Distrusted.IsZero()
	})
	// A lie may come true by chance (a page updated in the second it was
	// told); more than one would be a wrong verdict.
	if row.Refuted < 3 || row.Confirmed > 1 {
		t.Errorf("liar's row: %d confirmed, %d refuted", row.Confirmed, row.Refuted)
	}
	merges := row.Merges
	// Its records are re-polled: none stays the current state.
	waitFor(t, 30*time.Second, "the liar's records replaced by own polls", func() bool {
		n := 0
		a.store.Current(func(e webevents.Event) error {
			if e.From == liarURL {
				n++
			}
			return nil
		})
		return n == 0
	})
	// Nothing more is merged from it, and nothing it said is published.
	time.Sleep(500 * time.Millisecond)
	for _, r := range a.Peers() {
		if r.URL == liarURL && r.Merges != merges {
			t.Errorf("merged %d more times from a distrusted peer", r.Merges-merges)
		}
	}
	resp, err := http.Get(fmt.Sprintf("%s/share/%d.dat", a.base, webevents.Today(time.Now())))
	if err != nil {
		t.Fatal(err)
	}
	body, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if strings.Contains(string(body), "Liar/1") || strings.Contains(string(body), "forged") {
		t.Error("the day file still publishes the liar's records")
	}
	st := a.Status(false)
	if st.PeersDistrusted != 1 || st.Checks.Refuted < 3 || st.Checks.RolledBack == 0 {
		t.Errorf("status: %d distrusted, checks %+v", st.PeersDistrusted, st.Checks)
	}
}

// Judge's verdicts, one claim and one poll at a time.
func TestJudge(t *testing.T) {
	at := func(s int64) time.Time { return time.Unix(s, 0) }
	live := func(lmd, lpd int64) webevents.Event {
		return webevents.Event{Stat: webevents.Update, LMD: lmd, LPD: lpd, ETag: `"e"`}
	}
	del := webevents.Event{Stat: webevents.Delete, LMD: 5000, LPD: 5000}
	const fpA, fpC uint64 = 0x0f0f0f0f0f0f0f0f, 0xf0f0f0f0f0f0f0f0
	fpB := fingerprint.Format(0x00ff00ff00ff00ff)
	dyn := func(lmd int64, fp any) webevents.Event {
		e := webevents.Event{Stat: webevents.Update, LMD: lmd, LPD: lmd}
		switch v := fp.(type) {
		case string:
			e.Fingerprint = v
		case uint64:
			e.Fingerprint = fingerprint.Format(v)
		}
		return e
	}
	seenFP := func(now, before uint64, beforeAt int64) crawl.PollResult {
		r := crawl.PollResult{Status: 200, Fingerprint: now, HasFingerprint: true, Local: now, HasLocal: true, OwnBefore: before}
		if beforeAt > 0 {
			r.OwnBeforeAt = at(beforeAt)
		}
		return r
	}
	tests := []struct {
		name  string
		claim webevents.Event
		poll  crawl.PollResult
		want  Verdict
	}{
		{"same version", live(1000, 2000), crawl.PollResult{Status: 200, LastModified: at(1000)}, Confirmed},
		{"version never existed", live(3000, 3000), crawl.PollResult{Status: 200, LastModified: at(1000)}, Refuted},
		{"another version at lpd", live(1000, 9000), crawl.PollResult{Status: 200, LastModified: at(2000)}, Refuted},
		{"changed since", live(1000, 2000), crawl.PollResult{Status: 200, LastModified: at(2500)}, Inconclusive},
		{"dated by its poller's clock a second after the Last-Modified", live(1001, 1002), crawl.PollResult{Status: 200, LastModified: at(1000)}, Inconclusive},
		{"etag only", live(1000, 2000), crawl.PollResult{Status: 200, ETag: `"e"`}, Confirmed},
		{"gone since", live(1000, 2000), crawl.PollResult{Status: 404}, Inconclusive},
		{"poll failed", live(3000, 3000), crawl.PollResult{ErrKind: "timeout"}, Inconclusive},
		{"delete confirmed", del, crawl.PollResult{Status: 410}, Confirmed},
		{"delete of a page older than it", del, crawl.PollResult{Status: 200, LastModified: at(1000)}, Refuted},
		{"recreated since", del, crawl.PollResult{Status: 200, LastModified: at(6000)}, Inconclusive},
		// Dynamic pages: no Last-Modified, no ETag; the text decides.
		{"same text", dyn(5000, fpA), seenFP(fpA^1, 0, 0), Confirmed},
		{"other text, own look before the same as now", dyn(5000, fpB), seenFP(fpA, fpA, 4000), Refuted},
		{"no fp, own look before the same as now", dyn(5000, ""), seenFP(fpA, fpA, 4000), Refuted},
		{"other text, own look too late", dyn(5000, fpB), seenFP(fpA, fpA, 4990), Inconclusive},
		{"other text, changed since own look", dyn(5000, fpB), seenFP(fpA, fpC, 4000), Inconclusive},
		{"other text, no own look", dyn(5000, fpB), seenFP(fpA, 0, 0), Inconclusive},
		{"deletion of a page that lived through it", del, seenFP(fpA, fpA, 4000), Refuted},
		{"deletion, page changed since own look", del, seenFP(fpA, fpC, 4000), Inconclusive},
	}
	for _, tt := range tests {
		if got := Judge(tt.claim, tt.poll); got != tt.want {
			t.Errorf("%s: %v, want %v", tt.name, got, tt.want)
		}
	}
	tr := TrustConfig{}
	tr.defaults()
	if tr.distrusts(&Record{Confirmed: 100, Refuted: 3}) || !tr.distrusts(&Record{Refuted: 3}) || tr.vouches(&Record{Confirmed: 9, Distrusted: time.Now()}) {
		t.Error("a peer's trust: want the policy's bound, and no vouching for the distrusted")
	}
}
