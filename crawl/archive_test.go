package crawl

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/cocrawl/cocrawl/crawl/warc"
	"github.com/cocrawl/cocrawl/internal/testweb"
	"github.com/cocrawl/cocrawl/webevents"
)

// A crawl with an archive writes each page it fetched: whole at its first
// poll and when it changed, as a revisit when it did not, in files that
// gowarc's strict reader takes.
func TestCrawlWritesWARC(t *testing.T) {
	w := runWeb(t, testweb.Config{Hosts: 3, PagesPerHost: 15, UpdateRate: 0.3, Seed: 9})
	dir := t.TempDir()
	arch, err := warc.Open(warc.Options{Dir: dir, Software: "cocrawl test"})
	if err != nil {
		t.Fatal(err)
	}
	cfg := testConfig(w)
	cfg.Archive = arch
	st := webevents.NewMemStore()
	c, err := New(cfg, st, &MemFrontier{})
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- c.Run(ctx) }()
	waitFor(t, 30*time.Second, "not 300 polls", func() bool { return c.Stats().Polls >= 300 })
	cancel()
	if err := <-done; err != nil {
		t.Fatal(err)
	}
	if err := arch.Close(); err != nil {
		t.Fatal(err)
	}
	s := c.Stats()
	sum, err := warc.Check(dir)
	if err != nil {
		t.Fatal(err)
	}
	if len(sum.Invalid) > 0 {
		t.Errorf("strict validation: %v", sum.Invalid)
	}
	count := sum.Records
	revisits := 0
	for k, n := range count {
		if strings.HasPrefix(k, "revisit") {
			revisits += n
		}
	}
	t.Logf("%d polls, %d events; records %v", s.Polls, s.Created+s.Updated+s.Deleted, count)
	if count["response"] < 45 || revisits == 0 || count["request"] != count["response"]+revisits || count["warcinfo"] != sum.Files {
		t.Errorf("records %v after %d polls of 45 pages", count, s.Polls)
	}
	if st := arch.Stats(); st.Records != int64(count["request"]*2) {
		t.Errorf("the writer counted %d records, the files hold %d", st.Records, count["request"]*2)
	}
}
