package webevents

import (
	"bytes"
	"errors"
	"fmt"
	"strings"
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

// A batch larger than one Badger transaction commits in several, reads its
// own writes, and a scan reaches only the table's keys under its prefix.
func TestTableBatchScanAndGet(t *testing.T) {
	s := openInMemory(t)
	b, f := s.Table(TableBacklog), s.Table(TableFrontier)
	if err := f.Put(Entry{"h\x00x", []byte("frontier")}); err != nil {
		t.Fatal(err)
	}
	const n = 60000 // past one transaction's limit with the store's memtables
	big := bytes.Repeat([]byte("v"), 100)
	err := b.Batch(func(tb *TableBatch) error {
		for i := range n {
			if err := tb.Set(fmt.Sprintf("h\x00%08d", i), big); err != nil {
				return err
			}
		}
		if v, ok, err := tb.Get("h\x0000000007"); err != nil || !ok || !bytes.Equal(v, big) {
			t.Errorf("the batch's own write: %q, %v, %v", v, ok, err)
		}
		return tb.Delete("h\x0000000003")
	})
	if err != nil {
		t.Fatal(err)
	}
	count := 0
	if err := b.Scan("h\x00", true, func(k string, v []byte) bool { count++; return v == nil }); err != nil {
		t.Fatal(err)
	}
	if count != n-1 {
		t.Errorf("scanned %d keys, want %d", count, n-1)
	}
	var first []string
	if err := b.Scan("h\x00", false, func(k string, v []byte) bool {
		first = append(first, k)
		return len(first) < 3
	}); err != nil {
		t.Fatal(err)
	}
	if strings.Join(first, ",") != "h\x0000000000,h\x0000000001,h\x0000000002" {
		t.Errorf("a scan stopped after 3: %q", first)
	}
	// ScanKeys sees the same keys, in order, without the deleted one and
	// without the table's prefix, and stops when told.
	keys, ordered := 0, true
	var last string
	if err := b.ScanKeys("h\x00", func(k []byte) bool {
		keys++
		ordered = ordered && string(k) > last && string(k) != "h\x0000000003"
		last = string(k)
		return true
	}); err != nil {
		t.Fatal(err)
	}
	if keys != n-1 || !ordered || last != fmt.Sprintf("h\x00%08d", n-1) {
		t.Errorf("ScanKeys: %d keys, in order %v, last %q; want %d", keys, ordered, last, n-1)
	}
	keys = 0
	if err := b.ScanKeys("", func([]byte) bool { keys++; return keys < 5 }); err != nil || keys != 5 {
		t.Errorf("ScanKeys stopped after %d keys (%v), want 5", keys, err)
	}
	if _, ok, err := b.Get("h\x0000000003"); err != nil || ok {
		t.Errorf("a deleted key: %v, %v", ok, err)
	}
	if _, ok, err := b.Get("h\x00x"); err != nil || ok {
		t.Errorf("the backlog table reads the frontier's key: %v, %v", ok, err)
	}
}

// EstimateKeys counts a table's keys from Badger's files, not the keys of
// the tables beside it, and nothing before anything reached a file.
func TestTableEstimateKeys(t *testing.T) {
	dir := t.TempDir()
	// Level 0 holds the test's two files without a compaction: one in
	// flight may show a file's keys on both its levels (EstimateKeys
	// says so), which made this test fail one run in about thirty.
	opts := BadgerOptions{levelZeroTables: 8}
	put := func(name TableName, n int) {
		s, err := OpenBadger(dir, opts)
		if err != nil {
			t.Fatal(err)
		}
		if got := s.Table(name).EstimateKeys(); got != 0 {
			t.Errorf("table %s estimates %d keys before any was written", name, got)
		}
		for i := 0; i < n; i += 1000 {
			var es []Entry
			for j := i; j < i+1000; j++ {
				es = append(es, Entry{Key: fmt.Sprintf("h%d.test\x00%08d", j%50, j), Value: []byte("x")})
			}
			if err := s.Table(name).Put(es...); err != nil {
				t.Fatal(err)
			}
		}
		// Closing flushes the memtable into a file of this table's keys.
		if err := s.Close(); err != nil {
			t.Fatal(err)
		}
	}
	put(TableBacklog, 60_000)
	put(TableRevisits, 20_000)
	s, err := OpenBadger(dir, opts)
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	for _, c := range []struct {
		name TableName
		want int
	}{{TableBacklog, 60_000}, {TableRevisits, 20_000}, {TablePeers, 0}} {
		// A file that also holds the store's own keys (m/) counts half.
		if got := s.Table(c.name).EstimateKeys(); got < c.want/2 || got > c.want {
			t.Errorf("table %s estimates %d keys, holds %d", c.name, got, c.want)
		}
	}
}
