package webevents_test

import (
	"errors"
	"fmt"
	"path/filepath"
	"strings"
	"testing"

	"github.com/cocrawl/cocrawl/internal/testfs"
	"github.com/cocrawl/cocrawl/webevents"
	"github.com/cocrawl/cocrawl/webevents/storetest"
)

// Issue 32, item 3: on a small disk the store makes its logs smaller and
// stores events (it used to refuse every write below 208 MiB free), and
// on a disk too small for even those it refuses to start, saying how much
// it needs. Needs root for the tmpfs; skipped otherwise.
func TestSmallDiskStores(t *testing.T) {
	mnt := testfs.Tmpfs(t, "32m")
	dir := filepath.Join(mnt, "db")
	s, err := webevents.OpenBadger(dir, webevents.BadgerOptions{})
	if err != nil {
		t.Fatal(err)
	}
	const n = 3000
	for i := 0; i < n; i += 100 {
		var batch []webevents.Event
		for j := i; j < i+100; j++ {
			batch = append(batch, storetest.Ev(fmt.Sprintf("p/%d.html", j), webevents.Create, 800000000+int64(j), "me:1 Me", 0))
		}
		if err := s.Record(batch); err != nil {
			t.Fatalf("after %d events: %v", i, err)
		}
	}
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	s, err = webevents.OpenBadger(dir, webevents.BadgerOptions{})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	for _, j := range []int{0, n / 2, n - 1} {
		if _, ok, err := s.Get(fmt.Sprintf("http://site.example/p/%d.html", j)); err != nil || !ok {
			t.Errorf("event %d not held after reopening: %v %v", j, ok, err)
		}
	}
}

func TestTinyDiskRefusedAtStart(t *testing.T) {
	mnt := testfs.Tmpfs(t, "8m")
	_, err := webevents.OpenBadger(filepath.Join(mnt, "db"), webevents.BadgerOptions{})
	if !errors.Is(err, webevents.ErrNoSpace) || !strings.Contains(err.Error(), "needs at least") {
		t.Fatalf("a new store on 8 MiB: %v, want ErrNoSpace saying what it needs", err)
	}
	t.Log(err)
}
