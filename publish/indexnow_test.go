package publish

import (
	"context"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"sync"
	"testing"
	"time"

	"github.com/cocrawl/cocrawl/webevents"
)

type submission struct {
	Host        string   `json:"host"`
	Key         string   `json:"key"`
	KeyLocation string   `json:"keyLocation"`
	URLList     []string `json:"urlList"`
}

func TestPingerBatchesAndBacksOff(t *testing.T) {
	var mu sync.Mutex
	var got []submission
	calls := 0
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		mu.Lock()
		defer mu.Unlock()
		calls++
		if r.Method != http.MethodPost || r.Header.Get("Content-Type") != "application/json; charset=utf-8" {
			t.Errorf("%s with %q", r.Method, r.Header.Get("Content-Type"))
		}
		if calls == 1 {
			w.Header().Set("Retry-After", "1")
			w.WriteHeader(http.StatusTooManyRequests)
			return
		}
		var s submission
		if err := json.NewDecoder(r.Body).Decode(&s); err != nil {
			t.Error(err)
		}
		got = append(got, s)
		w.WriteHeader(http.StatusAccepted)
	}))
	defer srv.Close()
	p, err := NewPinger(PingConfig{Endpoints: []string{srv.URL + "/indexnow"}, Key: "0123456789abcdef", Host: "site.test", Every: 50 * time.Millisecond})
	if err != nil {
		t.Fatal(err)
	}
	p.Add([]string{"http://site.test/a", "http://site.test/b"})
	p.Add([]string{"http://site.test/a"}) // already queued
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	go p.Run(ctx)
	waitFor(t, "a submission after the 429", func() bool { return p.Stats().Posts == 1 })
	s := p.Stats()
	if s.Failures != 1 || s.URLs != 2 || s.Queued != 0 {
		t.Errorf("stats %+v: want one failure, then 2 URLs in one post", s)
	}
	mu.Lock()
	defer mu.Unlock()
	if calls != 2 || len(got) != 1 || got[0].Key != "0123456789abcdef" || got[0].Host != "site.test" || len(got[0].URLList) != 2 {
		t.Errorf("%d calls, submissions %+v", calls, got)
	}
}

func TestPingerRefusesBadSettings(t *testing.T) {
	for _, c := range []PingConfig{
		{Key: "short", Endpoints: []string{"http://127.0.0.1/indexnow"}},
		{Key: "0123456789abcdef", Endpoints: []string{"ftp://127.0.0.1/"}},
	} {
		if _, err := NewPinger(c); err == nil {
			t.Errorf("%+v accepted", c)
		}
	}
}

func TestKeyFileIsNotPublished(t *testing.T) {
	root, st := t.TempDir(), webevents.NewMemStore()
	key := NewKey()
	name, err := WriteKeyFile(root, key)
	if err != nil {
		t.Fatal(err)
	}
	if b, err := os.ReadFile(filepath.Join(root, name)); err != nil || string(b) != key {
		t.Fatalf("key file %q: %v", b, err)
	}
	write(t, root, "page.html", "p", time.Now().Add(-time.Minute))
	p, stop := running(t, st, Config{Root: root, Skip: []string{name}})
	defer stop()
	waitFor(t, "the page", func() bool { return p.Stats().Created == 1 })
	if _, err := WriteKeyFile(root, "bad key"); err == nil {
		t.Error("a bad key was written")
	}
	time.Sleep(100 * time.Millisecond)
	if got := current(t, st); len(got) != 1 {
		t.Errorf("published %v: the key file must not be", got)
	}
}
