package crawl

import (
	"errors"
	"reflect"
	"sort"
	"testing"
	"time"

	"github.com/cocrawl/cocrawl/webevents"
	"github.com/cocrawl/cocrawl/webevents/storetest"
)

// The FrontierStore contract, run against every implementation: one suite,
// so the in-memory store the tests use cannot drift from the one peers run.
func TestFrontierStores(t *testing.T) {
	t.Run("memory", func(t *testing.T) {
		testFrontierStore(t, func(*testing.T) FrontierStore { return &MemFrontier{} })
	})
	t.Run("badger", func(t *testing.T) {
		testFrontierStore(t, func(t *testing.T) FrontierStore {
			return StoredFrontier{Table: storetest.OpenBadger(t).Table(webevents.TableFrontier)}
		})
	})
}

func testFrontierStore(t *testing.T, open func(t *testing.T) FrontierStore) {
	due := time.Date(2026, 11, 22, 10, 0, 0, 0, time.UTC)
	a := URLState{URL: "http://a.test/", Depth: 0, Due: due, Interval: time.Hour, Polls: 3, ETag: `"x"`, LastMod: "Sun, 22 Nov 2026 09:00:00 GMT"}
	b := URLState{URL: "http://b.test/p?q=1", Depth: 2, Due: due.Add(time.Minute), Interval: time.Minute, Gone: true, NotHTML: true, Excluded: true}
	load := func(t *testing.T, st FrontierStore) []URLState {
		t.Helper()
		var got []URLState
		if err := st.LoadFrontier(func(s URLState) error { got = append(got, s); return nil }); err != nil {
			t.Fatal(err)
		}
		sort.Slice(got, func(i, j int) bool { return got[i].URL < got[j].URL })
		return got
	}

	t.Run("empty", func(t *testing.T) {
		st := open(t)
		if got := load(t, st); len(got) != 0 {
			t.Errorf("a new store holds %v", got)
		}
		if err := st.SaveFrontier(nil); err != nil {
			t.Errorf("saving nothing: %v", err)
		}
	})
	saved := func(t *testing.T) FrontierStore {
		st := open(t)
		if err := st.SaveFrontier([]URLState{a, b}); err != nil {
			t.Fatal(err)
		}
		return st
	}
	t.Run("round trip", func(t *testing.T) {
		st := saved(t)
		if got := load(t, st); !reflect.DeepEqual(got, []URLState{a, b}) {
			t.Errorf("loaded %+v\nwant %+v", got, []URLState{a, b})
		}
	})
	t.Run("replace", func(t *testing.T) {
		st := saved(t)
		a2 := a
		a2.Polls, a2.Due = 4, due.Add(time.Hour)
		if err := st.SaveFrontier([]URLState{a2}); err != nil {
			t.Fatal(err)
		}
		if got := load(t, st); !reflect.DeepEqual(got, []URLState{a2, b}) {
			t.Errorf("loaded %+v\nwant %+v", got, []URLState{a2, b})
		}
	})
	t.Run("callback error stops", func(t *testing.T) {
		st := saved(t)
		stop := errors.New("stop")
		n := 0
		err := st.LoadFrontier(func(URLState) error { n++; return stop })
		if !errors.Is(err, stop) || n != 1 {
			t.Errorf("LoadFrontier: %v after %d calls, want the callback's error after 1", err, n)
		}
	})
	t.Run("many", func(t *testing.T) {
		st := open(t)
		const n = 20000 // more than one Badger transaction holds
		states := make([]URLState, n)
		for i := range states {
			states[i] = URLState{URL: "http://m.test/" + time.Duration(i).String(), Due: due, Interval: time.Hour}
		}
		if err := st.SaveFrontier(states); err != nil {
			t.Fatal(err)
		}
		if got := load(t, st); len(got) != n {
			t.Errorf("loaded %d states, want %d", len(got), n)
		}
	})
}
