package webevents_test

import (
	"fmt"
	"math/rand/v2"
	"slices"
	"testing"
	"time"

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

// TestBadgerMatchesMemStore runs one random history of Record and Merge
// calls on both stores, with batches larger than Badger's merge parts and
// URLs that recur within and across batches, and compares everything a
// reader can see: current states, day logs and reads from every offset.
func TestBadgerMatchesMemStore(t *testing.T) {
	mem := webevents.NewMemStore()
	defer mem.Close()
	dir := t.TempDir()
	bad, err := webevents.OpenBadger(dir, webevents.BadgerOptions{})
	if err != nil {
		t.Fatal(err)
	}
	defer func() { bad.Close() }()
	rng := rand.New(rand.NewPCG(1, 2))
	stats := []webevents.Stat{webevents.Create, webevents.Update, webevents.Delete}
	event := func() webevents.Event {
		e := storetest.Ev(fmt.Sprintf("p%d", rng.IntN(3000)), stats[rng.IntN(3)], 800000000+rng.Int64N(1000), "p:1 P", rng.Int64N(2))
		e.LPD += rng.Int64N(3600)
		return e
	}
	for call := range 12 {
		if call == 6 { // a reopened store knows what it holds
			bad.Close()
			if bad, err = webevents.OpenBadger(dir, webevents.BadgerOptions{}); err != nil {
				t.Fatal(err)
			}
		}
		batch := make([]webevents.Event, 1+rng.IntN(3500))
		for i := range batch {
			batch[i] = event()
		}
		var c *webevents.Cursor
		if call%3 == 1 {
			c = &webevents.Cursor{Peer: "http://peer.example/robots.shr", LastDay: storetest.Day0}
		}
		for _, s := range []webevents.Store{mem, bad} {
			if call%4 == 0 {
				err = s.Record(batch)
			} else {
				_, err = s.Merge(batch, c)
			}
			if err != nil {
				t.Fatalf("call %d: %v", call, err)
			}
		}
	}
	current := func(s webevents.Store) []webevents.Event {
		var out []webevents.Event
		if err := s.Current(func(e webevents.Event) error { out = append(out, e); return nil }); err != nil {
			t.Fatal(err)
		}
		return out
	}
	if m, b := current(mem), current(bad); !slices.Equal(m, b) {
		t.Fatalf("current states differ: %d in memory, %d in Badger", len(m), len(b))
	}
	type entry struct {
		off int64
		e   webevents.Event
	}
	log := func(s webevents.Store, day, from int64) []entry {
		var out []entry
		if err := s.ReadDay(day, from, func(o int64, e webevents.Event) error { out = append(out, entry{o, e}); return nil }); err != nil {
			t.Fatal(err)
		}
		return out
	}
	for _, day := range []int64{storetest.Day0, storetest.Day0 + 1} {
		all := log(mem, day, 0)
		if b := log(bad, day, 0); !slices.Equal(all, b) {
			t.Fatalf("day %d: %d entries in memory, %d in Badger", day, len(all), len(b))
		}
		for i := 0; i < len(all); i += 1 + rng.IntN(50) {
			from := all[i].off + rng.Int64N(int64(webevents.RecordLen(&all[i].e)))
			if b := log(bad, day, from); !slices.Equal(all[i:], b) {
				t.Fatalf("day %d from %d (inside entry %d): %d entries, want %d", day, from, i, len(b), len(all)-i)
			}
		}
	}
}

// A store keeps DefaultKeepDays unless told, and never fewer than
// MinKeepDays, today included.
func TestKeepFrom(t *testing.T) {
	now := time.Date(2026, 11, 25, 12, 0, 0, 0, time.UTC)
	today := webevents.Today(now)
	for keep, want := range map[int]int64{0: today - 29, 30: today - 29, 3: today - 7, 8: today - 7, 100: today - 99} {
		if got := webevents.KeepFrom(now, keep); got != want {
			t.Errorf("KeepFrom(%d) = today%+d, want today%+d", keep, got-today, want-today)
		}
	}
}
