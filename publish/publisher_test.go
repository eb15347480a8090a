package publish

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"os"
	"path/filepath"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/cocrawl/cocrawl/webevents"
)

const testBase = "http://site.test:8080/docs/"

func write(t *testing.T, root, rel, body string, mtime time.Time) {
	t.Helper()
	p := filepath.Join(root, filepath.FromSlash(rel))
	if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(p, []byte(body), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.Chtimes(p, mtime, mtime); err != nil {
		t.Fatal(err)
	}
}

// running starts a publisher and returns it with a function that stops it.
func running(t *testing.T, st Store, cfg Config) (*Publisher, func()) {
	t.Helper()
	if cfg.Base == "" {
		cfg.Base = testBase
	}
	cfg.CID = "127.0.0.1:8471 cocrawl-publish/test"
	if cfg.Settle == 0 {
		cfg.Settle = 20 * time.Millisecond
	}
	p, err := New(st, cfg)
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- p.Run(ctx) }()
	return p, func() {
		cancel()
		if err := <-done; err != nil {
			t.Error(err)
		}
	}
}

func waitFor(t *testing.T, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("timed out waiting for %s", what)
		}
		time.Sleep(10 * time.Millisecond)
	}
}

// current is what st holds, by URL.
func current(t *testing.T, st *webevents.MemStore) map[string]webevents.Event {
	t.Helper()
	out := map[string]webevents.Event{}
	if err := st.Current(func(e webevents.Event) error { out[e.URL] = e; return nil }); err != nil {
		t.Fatal(err)
	}
	return out
}

func sum(body string) string {
	h := sha256.Sum256([]byte(body))
	return "sha256:" + hex.EncodeToString(h[:])
}

func TestPublishFollowsTheRoot(t *testing.T) {
	root, st := t.TempDir(), webevents.NewMemStore()
	t0 := time.Now().Add(-time.Hour).Truncate(time.Second)
	write(t, root, "a.html", "<p>a</p>", t0)
	write(t, root, "guide/index.html", "<p>guide</p>", t0)
	write(t, root, "guide/b c.txt", "b", t0)
	write(t, root, ".git/config", "x", t0)
	write(t, root, "key1234567.txt", "key1234567", t0)
	p, stop := running(t, st, Config{Root: root, Skip: []string{"key1234567.txt"}})
	defer stop()
	waitFor(t, "the first publication", func() bool { return p.Stats().Created == 3 })

	got := current(t, st)
	want := map[string]string{testBase + "a.html": "<p>a</p>", testBase + "guide/": "<p>guide</p>", testBase + "guide/b%20c.txt": "b"}
	if len(got) != len(want) {
		t.Fatalf("published %v, want the URLs of %v (no hidden or skipped file)", got, want)
	}
	for u, body := range want {
		e := got[u]
		if e.Stat != webevents.Create || e.LMD != t0.Unix() || e.Size != int64(len(body)) || e.Digest != sum(body) || e.CID != "127.0.0.1:8471 cocrawl-publish/test" {
			t.Errorf("%s: %+v", u, e)
		}
	}

	// An edit, a removal, a folder made with a file in it.
	t1 := t0.Add(time.Minute)
	write(t, root, "a.html", "<p>a, again</p>", t1)
	if err := os.Remove(filepath.Join(root, "guide", "b c.txt")); err != nil {
		t.Fatal(err)
	}
	write(t, root, "new/deep/x.html", "x", t1)
	waitFor(t, "the edit, the removal and the new folder", func() bool {
		g := current(t, st)
		return g[testBase+"a.html"].LMD == t1.Unix() && g[testBase+"guide/b%20c.txt"].Stat == webevents.Delete && g[testBase+"new/deep/x.html"].Stat == webevents.Create
	})
	if e := current(t, st)[testBase+"a.html"]; e.Stat != webevents.Update || e.Digest != sum("<p>a, again</p>") {
		t.Errorf("edited: %+v", e)
	}

	// A folder moved: its files are deleted under the old name and created
	// under the new one, though inotify reports only the folder.
	if err := os.Rename(filepath.Join(root, "new"), filepath.Join(root, "moved")); err != nil {
		t.Fatal(err)
	}
	waitFor(t, "the move", func() bool {
		g := current(t, st)
		return g[testBase+"new/deep/x.html"].Stat == webevents.Delete && g[testBase+"moved/deep/x.html"].Stat == webevents.Create
	})
	// A file in the moved folder is watched under its new name.
	t2 := t1.Add(time.Minute)
	write(t, root, "moved/deep/x.html", "x2", t2)
	waitFor(t, "an edit in the moved folder", func() bool { return current(t, st)[testBase+"moved/deep/x.html"].LMD == t2.Unix() })

	// A folder removed: every file under it.
	if err := os.RemoveAll(filepath.Join(root, "guide")); err != nil {
		t.Fatal(err)
	}
	waitFor(t, "the folder's removal", func() bool { return current(t, st)[testBase+"guide/"].Stat == webevents.Delete })
	if s := p.Stats(); s.Files != 2 || s.Watches < 3 {
		t.Errorf("stats %+v: want 2 live files and the folders watched", s)
	}
}

func TestPublishAfterARestartOnlyWhatChanged(t *testing.T) {
	root, st := t.TempDir(), webevents.NewMemStore()
	t0 := time.Now().Add(-time.Hour).Truncate(time.Second)
	for _, f := range []string{"keep.html", "edit.html", "gone.html"} {
		write(t, root, f, f, t0)
	}
	p, stop := running(t, st, Config{Root: root})
	waitFor(t, "the first publication", func() bool { return p.Stats().Created == 3 })
	stop()

	write(t, root, "edit.html", "edited", t0.Add(time.Minute))
	os.Remove(filepath.Join(root, "gone.html"))
	write(t, root, "added.html", "added", t0.Add(time.Minute))
	var notified []string
	var mu sync.Mutex
	p, stop = running(t, st, Config{Root: root, Notify: func(u []string) { mu.Lock(); notified = append(notified, u...); mu.Unlock() }})
	defer stop()
	waitFor(t, "the changes made while stopped", func() bool {
		s := p.Stats()
		return s.Created+s.Updated+s.Deleted == 3
	})
	if s := p.Stats(); s.Created != 1 || s.Updated != 1 || s.Deleted != 1 {
		t.Errorf("after the restart %+v: want one of each", s)
	}
	mu.Lock()
	defer mu.Unlock()
	if len(notified) != 3 {
		t.Errorf("notified %v: want the three changes (a restart is not a first publication)", notified)
	}
}

func TestPublishConfirmsEveryFileOncePerCycle(t *testing.T) {
	root, st := t.TempDir(), webevents.NewMemStore()
	t0 := time.Now().Add(-time.Hour).Truncate(time.Second)
	for _, f := range []string{"1.html", "2.html", "3.html", "4.html"} {
		write(t, root, f, f, t0)
	}
	p, stop := running(t, st, Config{Root: root, ConfirmCycle: 400 * time.Millisecond})
	defer stop()
	waitFor(t, "a pass of confirmations", func() bool { return p.Stats().Confirmed >= 8 })
	day := webevents.Today(time.Now())
	perURL := map[string]int{}
	if err := st.ReadDay(day, 0, func(_ int64, e webevents.Event) error {
		if e.LMD != t0.Unix() {
			t.Errorf("a confirmation changed the lmd: %+v", e)
		}
		perURL[e.URL]++
		return nil
	}); err != nil {
		t.Fatal(err)
	}
	for u, n := range perURL {
		if n < 2 {
			t.Errorf("%s recorded %d times: want its creation and a confirmation", u, n)
		}
	}
	if len(perURL) != 4 {
		t.Errorf("URLs in the log: %v", perURL)
	}
}

// failingStore fails its first writes, as a full disk would.
type failingStore struct {
	*webevents.MemStore
	fail atomic.Int32
}

func (f *failingStore) Record(e []webevents.Event) error {
	if f.fail.Add(-1) >= 0 {
		return errors.New("no space left on device")
	}
	return f.MemStore.Record(e)
}

func TestPublishRetriesAFailedWrite(t *testing.T) {
	root := t.TempDir()
	st := &failingStore{MemStore: webevents.NewMemStore()}
	t0 := time.Now().Add(-time.Hour).Truncate(time.Second)
	write(t, root, "a.html", "a", t0)
	p, stop := running(t, st, Config{Root: root})
	defer stop()
	waitFor(t, "the first publication", func() bool { return p.Stats().Created == 1 })
	st.fail.Store(2)
	write(t, root, "a.html", "a2", t0.Add(time.Minute))
	waitFor(t, "the edit, after two failed writes", func() bool { return p.Stats().Updated == 1 })
	if s := p.Stats(); s.RecordErrors != 2 {
		t.Errorf("record errors %d, want 2", s.RecordErrors)
	}
	if e := current(t, st.MemStore)[testBase+"a.html"]; e.LMD != t0.Add(time.Minute).Unix() {
		t.Errorf("stored %+v", e)
	}
}

func TestPublishIndexFiles(t *testing.T) {
	p, err := New(webevents.NewMemStore(), Config{Root: t.TempDir(), Base: "http://Site.test/", CID: "x y"})
	if err != nil {
		t.Fatal(err)
	}
	for rel, want := range map[string]string{
		"index.html":       "http://site.test/",
		"a/index.html":     "http://site.test/a/",
		"a/b.html":         "http://site.test/a/b.html",
		"a/ü x.html":       "http://site.test/a/%C3%BC%20x.html",
		"a/notindex.html":  "http://site.test/a/notindex.html",
		"a/100%/file.html": "http://site.test/a/100%25/file.html",
	} {
		got, ok := p.urlOf(rel)
		if !ok || got != want {
			t.Errorf("urlOf(%q) = %q, %v; want %q", rel, got, ok, want)
		}
		if back := p.relOf(got); back != rel {
			t.Errorf("relOf(%q) = %q, want %q", got, back, rel)
		}
	}
	for _, bad := range []string{"", "ftp://x/", "/relative", "http://x/?q=1"} {
		if _, err := New(webevents.NewMemStore(), Config{Root: t.TempDir(), Base: bad, CID: "x y"}); err == nil {
			t.Errorf("base %q accepted", bad)
		}
	}
}

// A file dated before 1993 (an archive's or a reproducible build's epoch)
// or far ahead is not published: no merger would take its record.
func TestPublishSkipsDatesNoRecordCarries(t *testing.T) {
	root, st := t.TempDir(), webevents.NewMemStore()
	write(t, root, "ok.html", "ok", time.Now().Add(-time.Hour))
	write(t, root, "epoch.html", "e", time.Unix(1, 0))
	write(t, root, "ahead.html", "a", time.Now().Add(48*time.Hour))
	p, stop := running(t, st, Config{Root: root})
	defer stop()
	waitFor(t, "the first publication", func() bool { return p.Stats().Created == 1 })
	if s := p.Stats(); s.BadDates != 2 || len(current(t, st)) != 1 {
		t.Errorf("stats %+v, store %v: want the two misdated files counted and left out", s, current(t, st))
	}
}
