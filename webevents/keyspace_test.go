package webevents

import (
	"bytes"
	"errors"
	"testing"
	"time"
)

func TestKeyspacePrefixesDisjoint(t *testing.T) {
	all := allPrefixes()
	for i, a := range all {
		for j, b := range all {
			if i != j && bytes.HasPrefix(a, b) {
				t.Errorf("prefix %q starts with prefix %q: their keys would mix", a, b)
			}
		}
	}
}

func openInMemory(t *testing.T) *BadgerStore {
	t.Helper()
	s, err := OpenBadger("", BadgerOptions{InMemory: true})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { s.Close() })
	return s
}

func TestTableStaysInItsPrefix(t *testing.T) {
	s := openInMemory(t)
	now := time.Now().Unix()
	f, p := s.Table(TableFrontier), s.Table(TablePeers)
	if err := f.Put(Entry{"http://a/", []byte("1")}, Entry{"http://b/", []byte("2")}); err != nil {
		t.Fatal(err)
	}
	if err := p.Put(Entry{"http://a/", []byte("peer")}); err != nil {
		t.Fatal(err)
	}
	if err := s.Record([]Event{{URL: "http://a/", Size: 1, LMD: now - 10, LPD: now, CID: "a:1 A/1", Stat: Create}}); err != nil {
		t.Fatal(err)
	}
	got := map[string]string{}
	if err := f.Each(func(k string, v []byte) error { got[k] = string(v); return nil }); err != nil {
		t.Fatal(err)
	}
	if len(got) != 2 || got["http://a/"] != "1" || got["http://b/"] != "2" {
		t.Errorf("frontier table holds %v, want its two entries only", got)
	}
	n := 0
	stop := errors.New("stop")
	if err := p.Each(func(k string, v []byte) error { n++; return stop }); !errors.Is(err, stop) || n != 1 {
		t.Errorf("Each: err %v after %d entries, want the callback's error after 1", err, n)
	}
}

func TestTableUndeclaredPanics(t *testing.T) {
	s := openInMemory(t)
	defer func() {
		if recover() == nil {
			t.Error("Table of an undeclared name did not panic")
		}
	}()
	s.Table("u/")
}

func TestOpenBadgerInUse(t *testing.T) {
	dir := t.TempDir()
	s, err := OpenBadger(dir, BadgerOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := OpenBadger(dir, BadgerOptions{}); !errors.Is(err, ErrInUse) {
		t.Errorf("second open: %v, want ErrInUse", err)
	}
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	s, err = OpenBadger(dir, BadgerOptions{})
	if err != nil {
		t.Fatalf("open after close: %v", err)
	}
	s.Close()
}
