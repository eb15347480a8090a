package webevents_test

import (
	"testing"

	"github.com/cocrawl/cocrawl/webevents"
	"github.com/cocrawl/cocrawl/webevents/storetest"
)

func TestMemStore(t *testing.T) {
	storetest.Run(t, func(t *testing.T) webevents.Store {
		s := webevents.NewMemStore()
		t.Cleanup(func() { s.Close() })
		return s
	})
}

func TestBadgerStore(t *testing.T) {
	storetest.Run(t, func(t *testing.T) webevents.Store {
		s, err := webevents.OpenBadger(t.TempDir(), webevents.BadgerOptions{})
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { s.Close() })
		return s
	})
}

func TestBadgerReopen(t *testing.T) {
	dir := t.TempDir()
	s, err := webevents.OpenBadger(dir, webevents.BadgerOptions{})
	if err != nil {
		t.Fatal(err)
	}
	id := s.ID()
	e := storetest.Ev("a", webevents.Create, 800000000, "me:1 Me", 0)
	if err := s.Record([]webevents.Event{e}); err != nil {
		t.Fatal(err)
	}
	s.Close()
	s, err = webevents.OpenBadger(dir, webevents.BadgerOptions{})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	if got, ok, _ := s.Get(e.URL); !ok || got != e || s.ID() != id {
		t.Fatalf("after reopen: %+v %v id %s/%s", got, ok, s.ID(), id)
	}
}
