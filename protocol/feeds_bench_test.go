package protocol

import (
	"context"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"net/url"
	"regexp"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/cocrawl/cocrawl/webevents"
	"github.com/cocrawl/cocrawl/webevents/storetest"
)

// feedHosts is how many sites a benchmark day holds records of.
const feedHosts = 1000

// feedDay records a day of records of feedHosts sites, interleaved as a
// crawler polls them, in batches as the crawler's persister writes them.
func feedDay(b *testing.B, st webevents.Store, day int64, perHost int) {
	b.Helper()
	batch := make([]webevents.Event, 0, 4096)
	for i := range feedHosts * perHost {
		lpd := webevents.DayStart(day) + int64(i)%80000
		batch = append(batch, webevents.Event{URL: fmt.Sprintf("http://host%d.example/%s/page-%d.html", i%feedHosts, []string{"a", "b"}[i/feedHosts%2], i),
			Size: int64(1000 + i%5000), LMD: lpd - 3600, LPD: lpd, CID: "sharer.example:8080 cocrawl/1.1", Stat: webevents.Update,
			Digest: "sha256:" + fmt.Sprintf("%064x", i)})
		if len(batch) == cap(batch) {
			if err := st.Record(batch); err != nil {
				b.Fatal(err)
			}
			batch = batch[:0]
		}
	}
	if err := st.Record(batch); err != nil {
		b.Fatal(err)
	}
}

// BenchmarkFilteredDayFile fetches one peer's day of 1,000 sites whole,
// then filtered to one site and to one site's path, from the same server
// in the same run, and reports the bytes each moved and the time each
// took, with their ratios to the whole file.
func BenchmarkFilteredDayFile(b *testing.B) {
	st := storetest.OpenBadger(b)
	const day = 20000
	feedDay(b, st, day, 100)
	srv, err := NewServer(st, ServerOptions{})
	if err != nil {
		b.Fatal(err)
	}
	ts := httptest.NewServer(srv)
	defer ts.Close()
	base := fmt.Sprintf("%s/share/%d.dat", ts.URL, day)
	fetch := func(u string) (int64, time.Duration) {
		start := time.Now()
		resp, err := http.Get(u)
		if err != nil {
			b.Fatal(err)
		}
		n, _ := io.Copy(io.Discard, resp.Body)
		resp.Body.Close()
		if resp.StatusCode != 200 {
			b.Fatalf("%s: %d", u, resp.StatusCode)
		}
		return n, time.Since(start)
	}
	var wholeB, hostB, pathB int64
	var wholeT, hostT, pathT time.Duration
	for i := 0; b.Loop(); i++ {
		host := fmt.Sprintf("http://host%d.example/", (i*37)%feedHosts)
		n, d := fetch(base)
		wholeB, wholeT = wholeB+n, wholeT+d
		n, d = fetch(base + "?prefix=" + url.QueryEscape(host))
		hostB, hostT = hostB+n, hostT+d
		n, d = fetch(base + "?prefix=" + url.QueryEscape(host+"b/"))
		pathB, pathT = pathB+n, pathT+d
	}
	runs := float64(b.N)
	b.ReportMetric(float64(wholeB)/runs, "whole-bytes")
	b.ReportMetric(float64(hostB)/runs, "site-bytes")
	b.ReportMetric(float64(hostB)/float64(wholeB), "site/whole-bytes")
	b.ReportMetric(float64(pathB)/float64(wholeB), "path/whole-bytes")
	b.ReportMetric(float64(wholeT.Microseconds())/runs/1000, "whole-ms")
	b.ReportMetric(float64(hostT)/float64(wholeT), "site/whole-time")
	b.ReportMetric(float64(pathT)/float64(wholeT), "path/whole-time")
}

// BenchmarkStreamDelay records 400 events one at a time, 5 ms apart, on a
// store whose day already holds 1,000 sites' records, and measures the
// delay from each record's commit to its delivery to a subscriber of its
// site over the live stream (SSE) and to a WebSub subscriber of its
// site's change list, at once: median and 99th percentile of each.
func BenchmarkStreamDelay(b *testing.B) {
	st := storetest.OpenBadger(b)
	today := webevents.Today(time.Now())
	feedDay(b, st, today, 20)
	srv, err := NewServer(st, ServerOptions{WebSubClient: NewHTTPClient(ClientOptions{AllowPrivate: true})})
	if err != nil {
		b.Fatal(err)
	}
	ts := httptest.NewServer(srv)
	defer ts.Close()
	var all, pushed []time.Duration
	var mu sync.Mutex
	recorded := map[string]time.Time{}
	locRE := regexp.MustCompile(`<loc>([^<]+)</loc>`)
	cbs := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Method == http.MethodGet {
			io.WriteString(w, r.URL.Query().Get("hub.challenge"))
			return
		}
		body, _ := io.ReadAll(r.Body)
		now := time.Now()
		mu.Lock()
		for _, m := range locRE.FindAllStringSubmatch(string(body), -1) {
			if at, ok := recorded[m[1]]; ok {
				pushed = append(pushed, now.Sub(at))
			}
		}
		mu.Unlock()
	}))
	defer cbs.Close()
	topic := ts.URL + "/resourcesync/changelist.xml?prefix=" + url.QueryEscape("http://watched.example/")
	resp, err := http.PostForm(ts.URL+WebSubPath, url.Values{"hub.mode": {"subscribe"}, "hub.topic": {topic}, "hub.callback": {cbs.URL}})
	if err != nil {
		b.Fatal(err)
	}
	resp.Body.Close()
	for srv.WebSubscriptions() == 0 {
		time.Sleep(10 * time.Millisecond)
	}
	for b.Loop() {
		f, _ := NewDayFilter("http://watched.example/")
		got := make(chan time.Duration, 1000)
		sub := &Subscriber{Base: ts.URL, Prefix: &f, Client: NewHTTPClient(ClientOptions{AllowPrivate: true}), FromNow: true,
			Deliver: func(e SubscribedEvent) error {
				mu.Lock()
				at := recorded[e.URL]
				mu.Unlock()
				got <- time.Since(at)
				return nil
			}}
		ctx, cancel := context.WithCancel(context.Background())
		done := make(chan error, 1)
		go func() { done <- sub.Run(ctx) }()
		time.Sleep(300 * time.Millisecond)
		const n = 400
		for i := range n {
			now := time.Now().Unix()
			evs := []webevents.Event{
				{URL: fmt.Sprintf("http://other%d.example/p/%d", i%50, i), Size: 1, LMD: now - 60, LPD: now, CID: "sharer.example:8080 cocrawl/1.1", Stat: webevents.Update},
				{URL: fmt.Sprintf("http://watched.example/p/%d", i), Size: 1, LMD: now - 60, LPD: now, CID: "sharer.example:8080 cocrawl/1.1", Stat: webevents.Update},
			}
			mu.Lock()
			recorded[evs[1].URL] = time.Now()
			mu.Unlock()
			if err := st.Record(evs); err != nil {
				b.Fatal(err)
			}
			time.Sleep(5 * time.Millisecond)
		}
		for range n {
			select {
			case d := <-got:
				all = append(all, d)
			case <-time.After(10 * time.Second):
				b.Fatal("an event was not delivered in 10 s")
			}
		}
		cancel()
		<-done
	}
	time.Sleep(time.Second) // the last notifications
	mu.Lock()
	defer mu.Unlock()
	if len(pushed) < len(all) {
		b.Fatalf("WebSub delivered %d of %d changes", len(pushed), len(all))
	}
	slices.Sort(all)
	slices.Sort(pushed)
	b.ReportMetric(float64(all[len(all)/2].Microseconds())/1000, "sse-p50-ms")
	b.ReportMetric(float64(all[len(all)*99/100].Microseconds())/1000, "sse-p99-ms")
	b.ReportMetric(float64(pushed[len(pushed)/2].Microseconds())/1000, "websub-p50-ms")
	b.ReportMetric(float64(pushed[len(pushed)*99/100].Microseconds())/1000, "websub-p99-ms")
}
