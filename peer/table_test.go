package peer

import (
	"errors"
	"reflect"
	"testing"
	"time"

	"github.com/cocrawl/cocrawl/webevents/storetest"
)

// The PeerStore contract, run against every implementation.
func TestPeerStores(t *testing.T) {
	t.Run("memory", func(t *testing.T) {
		testPeerStore(t, func(*testing.T) PeerStore { return &MemPeers{} })
	})
	t.Run("badger", func(t *testing.T) {
		testPeerStore(t, func(t *testing.T) PeerStore { return StoresIn(storetest.OpenBadger(t)).Peers })
	})
}

func testPeerStore(t *testing.T, open func(t *testing.T) PeerStore) {
	at := time.Date(2026, 11, 22, 10, 0, 0, 0, time.UTC)
	a := Record{URL: "http://a.test:8470/robots.shr", Source: "static", Added: at, Crawler: "a.test:8470 cocrawl/1.1",
		Special: []string{"http://a.test/"}, Merges: 3, Gained: 10, LastSuccess: at, Interval: Duration(time.Minute), NextDue: at.Add(time.Minute)}
	b := Record{URL: "libp2p://12D3KooWexample/robots.shr", Source: "dht", Added: at, PeerID: "12D3KooWexample",
		P2PAddrs: []string{"/ip4/127.0.0.1/tcp/1"}, Failures: 2, Consecutive: 2, LastError: "refused"}
	load := func(t *testing.T, st PeerStore) map[string]Record {
		t.Helper()
		got := map[string]Record{}
		if err := st.LoadPeers(func(r Record) error { got[r.URL] = r; return nil }); err != nil {
			t.Fatal(err)
		}
		return got
	}
	t.Run("empty", func(t *testing.T) {
		if got := load(t, open(t)); len(got) != 0 {
			t.Errorf("a new store holds %v", got)
		}
	})
	saved := func(t *testing.T) PeerStore {
		st := open(t)
		for _, r := range []Record{a, b} {
			if err := st.SavePeer(r); err != nil {
				t.Fatal(err)
			}
		}
		return st
	}
	t.Run("round trip and replace", func(t *testing.T) {
		st := saved(t)
		a2 := a
		a2.Merges, a2.Special = 4, nil
		if err := st.SavePeer(a2); err != nil {
			t.Fatal(err)
		}
		want := map[string]Record{a.URL: a2, b.URL: b}
		if got := load(t, st); !reflect.DeepEqual(got, want) {
			t.Errorf("loaded %+v\nwant %+v", got, want)
		}
	})
	t.Run("saved row is a copy", func(t *testing.T) {
		st := open(t)
		r := a
		r.Special = []string{"http://a.test/"}
		if err := st.SavePeer(r); err != nil {
			t.Fatal(err)
		}
		r.Special[0] = "http://changed.test/"
		if got := load(t, st)[a.URL].Special; !reflect.DeepEqual(got, a.Special) {
			t.Errorf("the caller's later change reached the store: %v", got)
		}
	})
	t.Run("callback error stops", func(t *testing.T) {
		st := saved(t)
		stop := errors.New("stop")
		n := 0
		if err := st.LoadPeers(func(Record) error { n++; return stop }); !errors.Is(err, stop) || n != 1 {
			t.Errorf("LoadPeers: %v after %d calls, want the callback's error after 1", err, n)
		}
	})
}
