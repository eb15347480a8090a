package webevents

import (
	"encoding/binary"
	"fmt"
	"math/rand/v2"
	"os"
	"strconv"
	"testing"
	"time"
)

// BenchmarkCrawlLoad writes the store's share of an exploring crawl's
// polls, as `cocrawl run` makes them, into a store on disk: per poll its
// web-event (Record: the current state, the day log, the origin's block
// and day info), its URL parked with its state (about 180 bytes), a first
// visit taken from the backlog and a new one spilled to it; 150 polls a
// write, as the crawler's persister gathers them. It does so with the
// store's value threshold and with the 1 KiB one it had before, one after
// the other, and reports the polls/s of each over the last fifth of the
// polls and the ratio. COCRAWL_LOAD_POLLS sets the polls (default
// 1,000,000; docs/performance.md used 3,000,000).
func BenchmarkCrawlLoad(b *testing.B) {
	polls := 1_000_000
	if v, err := strconv.Atoi(os.Getenv("COCRAWL_LOAD_POLLS")); err == nil && v > 0 {
		polls = v
	}
	for b.Loop() {
		ours := crawlLoad(b, polls, 0)
		before := crawlLoad(b, polls, 1<<10)
		b.ReportMetric(ours, "polls/s")
		b.ReportMetric(before, "polls/s-1KiB")
		b.ReportMetric(ours/before, "x-1KiB")
	}
}

// crawlLoad writes polls polls into a new store with the value threshold
// vt (0: the store's) and returns the polls/s of the last fifth.
func crawlLoad(b *testing.B, polls int, vt int64) float64 {
	const (
		hosts = 3000
		batch = 150
	)
	s, err := OpenBadger(b.TempDir(), BadgerOptions{valueThreshold: vt})
	if err != nil {
		b.Fatal(err)
	}
	defer s.Close()
	parked, backlog := s.Table(TableRevisits), s.Table(TableBacklog)
	r := rand.New(rand.NewPCG(1, 2))
	queued := make([][]string, hosts) // each host's backlog keys, oldest first
	state := make([]byte, 180)
	for i := range state {
		state[i] = byte('a' + r.IntN(26))
	}
	now := time.Now()
	var tailStart time.Time
	tailFrom := polls - polls/5
	events := make([]Event, 0, batch)
	var parks, spills []Entry
	var takes []string
	for p := 0; p < polls; p += batch {
		if p >= tailFrom && tailStart.IsZero() {
			tailStart = time.Now()
		}
		events, parks, spills, takes = events[:0], parks[:0], spills[:0], takes[:0]
		for i := range batch {
			h := r.IntN(hosts)
			host := fmt.Sprintf("h%d.test:%d", h, 28000+h)
			u := fmt.Sprintf("http://%s/p/%d", host, p+i)
			events = append(events, Event{URL: u, Size: 1000 + int64(r.IntN(9000)), LMD: now.Unix() - 3600, LPD: now.Unix(), CID: "a:1 A/1", Stat: Create})
			fp := r.Uint64()
			due := binary.BigEndian.AppendUint32(nil, uint32(now.Unix())+uint32(r.IntN(7200)))
			parks = append(parks, Entry{host + "\x00" + string(due) + string(binary.BigEndian.AppendUint64(nil, fp)), state})
			if q := queued[h]; len(q) > 0 {
				takes = append(takes, q[0])
				queued[h] = q[1:]
			}
			k := host + "\x00" + string(binary.BigEndian.AppendUint16(nil, uint16(r.IntN(100)))) + string(binary.BigEndian.AppendUint64(nil, r.Uint64()))
			spills = append(spills, Entry{k, []byte(u + "\x00\x01\x00\x00\x00\x00")})
			queued[h] = append(queued[h], k)
		}
		if err := s.Record(events); err != nil {
			b.Fatal(err)
		}
		if err := parked.Put(parks...); err != nil {
			b.Fatal(err)
		}
		if err := backlog.Delete(takes...); err != nil {
			b.Fatal(err)
		}
		if err := backlog.Put(spills...); err != nil {
			b.Fatal(err)
		}
	}
	return float64(polls-tailFrom) / time.Since(tailStart).Seconds()
}
