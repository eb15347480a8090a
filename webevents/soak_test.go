package webevents

import (
	"fmt"
	"io/fs"
	"math/rand/v2"
	"os"
	"path/filepath"
	"testing"
)

// TestSoak writes a month and a half of a steady web into a Badger store,
// compressed in time, with the retention a peer applies (14 days kept)
// and value-log GC, and prints the disk bytes per live URL each day. It
// asserts that the store stops growing. `make soak` runs it
// (COCRAWL_SOAK=1); it takes minutes.
func TestSoak(t *testing.T) {
	if os.Getenv("COCRAWL_SOAK") == "" {
		t.Skip("set COCRAWL_SOAK=1 (make soak)")
	}
	with := soak(t, 14)
	without := soak(t, 0)
	t.Logf("at the end: %d bytes with retention, %d without (%.2fx)", with, without, float64(without)/float64(with))
}

// soak runs the steady web for days with keep days of retention (0: none)
// and returns the disk bytes at the end.
func soak(t *testing.T, keep int64) int64 {
	const (
		urls     = 100_000
		days     = 45
		updates  = urls / 5 // a day's updates: a fifth of the web
		turnover = urls / 100
	)
	dir := t.TempDir()
	s, err := OpenBadger(dir, BadgerOptions{})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	rng := rand.New(rand.NewPCG(1, 2))
	live := make([]int, urls)
	for i := range live {
		live[i] = i
	}
	next := urls
	url := func(i int) string {
		return fmt.Sprintf("http://site%d.example/section/%d/page-%d.html", i%500, i%37, i)
	}
	ev := func(i int, st Stat, day int64, k int) Event {
		lpd := DayStart(day) + int64(k%86000)
		return Event{URL: url(i), Size: int64(1000 + i%9000), LMD: lpd - 30, LPD: lpd, CID: "soak.example:8470 cocrawl/1.1", Stat: st,
			ETag: fmt.Sprintf(`"%x-%d"`, i, day)}
	}
	const day0 = 20000
	var sizes []int64
	fmt.Printf("retention %d days\nday,disk_bytes,live_urls,bytes_per_live_url,expired_days,expired_urls\n", keep)
	for d := int64(0); d < days; d++ {
		day := day0 + d
		var batch []Event
		if d == 0 {
			for k, i := range live {
				batch = append(batch, ev(i, Create, day, k))
			}
		}
		for k := range updates {
			batch = append(batch, ev(live[rng.IntN(len(live))], Update, day, k))
		}
		for k := range turnover { // as many deleted as created: a steady web
			j := rng.IntN(len(live))
			batch = append(batch, ev(live[j], Delete, day, k))
			live[j] = next
			batch = append(batch, ev(next, Create, day, k))
			next++
		}
		for lo := 0; lo < len(batch); lo += 20_000 {
			if err := s.Record(batch[lo:min(len(batch), lo+20_000)]); err != nil {
				t.Fatal(err)
			}
		}
		var x Expired
		if keep > 0 {
			if x, err = s.Expire(day - keep + 1); err != nil {
				t.Fatal(err)
			}
		}
		for s.db.RunValueLogGC(0.5) == nil {
		}
		size := dirSize(t, dir)
		sizes = append(sizes, size)
		fmt.Printf("%d,%d,%d,%.0f,%d,%d\n", d, size, len(live), float64(size)/float64(len(live)), x.Days, x.URLs)
	}
	// Steady state: the last ten days grow no more than a fifth over the
	// ten before (past the first two weeks, retention balances the writes).
	a, b := mean64(sizes[days-20:days-10]), mean64(sizes[days-10:])
	t.Logf("retention %d: mean disk bytes, days %d-%d: %.0f; days %d-%d: %.0f (ratio %.2f)", keep, days-20, days-11, a, days-10, days-1, b, b/a)
	if keep > 0 && b > 1.2*a {
		t.Errorf("the store keeps growing: %.0f then %.0f bytes", a, b)
	}
	return sizes[len(sizes)-1]
}

func dirSize(t *testing.T, dir string) int64 {
	var n int64
	err := filepath.WalkDir(dir, func(_ string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return err
		}
		info, err := d.Info()
		if err == nil {
			n += diskUsage(info)
		}
		return err
	})
	if err != nil {
		t.Fatal(err)
	}
	return n
}

func mean64(xs []int64) float64 {
	var s float64
	for _, x := range xs {
		s += float64(x)
	}
	return s / float64(len(xs))
}
