package webevents

import (
	"encoding/binary"
	"fmt"
	"math/rand/v2"
	"os"
	"runtime"
	"strconv"
	"testing"
	"time"
)

// BenchmarkCrawlLoad writes the store's share of an exploring crawl's
// polls, as `cocrawl run` makes them, into a store on disk: per poll its
// web-event (Record: the current state, the day log, and, behind it, the
// origin's block and day info; a record of a crawl's size with its digest, entity tag
// and fingerprint, where until 2026-11-27 it had none and stayed in the
// tree, under the value log's threshold), its URL parked with its state
// (about 180 bytes), a first visit taken from the backlog and a new one spilled to it; 150 polls a
// write, as the crawler's persister gathers them. It does so with the
// store's value threshold and with the 1 KiB one it had before, one after
// the other, and reports the polls/s of each over the last fifth of the
// polls and the ratio. COCRAWL_LOAD_POLLS sets the polls (default
// 1,000,000; docs/performance.md used 3,000,000).
func BenchmarkCrawlLoad(b *testing.B) {
	polls := loadPolls()
	for b.Loop() {
		ours, _ := crawlLoad(b, polls, BadgerOptions{})
		before, _ := crawlLoad(b, polls, BadgerOptions{valueThreshold: 1 << 10})
		b.ReportMetric(ours, "polls/s")
		b.ReportMetric(before, "polls/s-1KiB")
		b.ReportMetric(ours/before, "x-1KiB")
	}
}

// BenchmarkCrawlLoadAllocs writes BenchmarkCrawlLoad's polls with the
// store's settings alone and reports, beside the polls/s of the last fifth
// and the bytes compacted a poll, what the process allocated a poll and
// how many collections it made: Badger's table builders and log writes
// allocated about a third of it before they kept their buffers
// (third_party/badger/COCRAWL.md).
func BenchmarkCrawlLoadAllocs(b *testing.B) {
	polls := loadPolls()
	for b.Loop() {
		var before, after runtime.MemStats
		runtime.ReadMemStats(&before)
		ours, compacted := crawlLoad(b, polls, BadgerOptions{})
		runtime.ReadMemStats(&after)
		b.ReportMetric(ours, "polls/s")
		b.ReportMetric(compacted, "compacted-B/poll")
		b.ReportMetric(float64(after.TotalAlloc-before.TotalAlloc)/float64(polls), "alloc-B/poll")
		b.ReportMetric(float64(after.NumGC-before.NumGC), "collections")
	}
}

// loadPolls is COCRAWL_LOAD_POLLS, or 1,000,000.
func loadPolls() int {
	if v, err := strconv.Atoi(os.Getenv("COCRAWL_LOAD_POLLS")); err == nil && v > 0 {
		return v
	}
	return 1_000_000
}

// BenchmarkCrawlLoadLevelZero writes BenchmarkCrawlLoad's polls with
// the store's level 0 (2 tables before a compaction) and with 8, and
// reports the polls/s of the last fifth and the bytes Badger's
// compactions wrote a poll over the run, each with its ratio. A replay of
// the writes alone: the real crawl, which also scans the tables, was
// slower with 8 (docs/performance.md, "level 0 again").
func BenchmarkCrawlLoadLevelZero(b *testing.B) {
	benchmarkCrawlLoadAgainst(b, BadgerOptions{levelZeroTables: 8}, "L0x8")
}

// BenchmarkCrawlLoadLevelSizes writes BenchmarkCrawlLoad's polls with
// each level of the tree 10 times the one above (the store's setting,
// Badger's) and with 4, and reports the bytes the compactions wrote a
// poll and the polls/s of the last fifth, each with its ratio.
func BenchmarkCrawlLoadLevelSizes(b *testing.B) {
	benchmarkCrawlLoadAgainst(b, BadgerOptions{levelMultiplier: 4}, "x4")
}

// BenchmarkCrawlLoadOriginIndex writes BenchmarkCrawlLoad's polls with
// the origin index (spec section 7.7; an o/ block and an i/ info for each
// origin a pass finds, every 10 s behind the day log) and without it:
// what the index costs the tree that compactions rewrite, where a commit
// touches most origins once. Written with each commit, as until
// 2026-11-27, it cost 977 against 581 bytes compacted a poll.
func BenchmarkCrawlLoadOriginIndex(b *testing.B) {
	benchmarkCrawlLoadAgainst(b, BadgerOptions{noOriginIndex: true}, "no-origins")
}

// benchmarkCrawlLoadAgainst writes the polls into a store of the
// package's settings and into one opened with other, and reports both
// runs' polls/s and bytes compacted a poll, the latter's under name, with
// their ratios.
func benchmarkCrawlLoadAgainst(b *testing.B, other BadgerOptions, name string) {
	polls := loadPolls()
	for b.Loop() {
		ours, oursCompacted := crawlLoad(b, polls, BadgerOptions{})
		theirs, theirsCompacted := crawlLoad(b, polls, other)
		b.ReportMetric(ours, "polls/s")
		b.ReportMetric(theirs, "polls/s-"+name)
		b.ReportMetric(theirs/ours, "x-"+name)
		b.ReportMetric(oursCompacted, "compacted-B/poll")
		b.ReportMetric(theirsCompacted, "compacted-B/poll-"+name)
		if oursCompacted > 0 { // too few polls compact nothing
			b.ReportMetric(theirsCompacted/oursCompacted, "compacted-x-"+name)
		}
	}
}

// BenchmarkCrawlLoadTombstones writes BenchmarkCrawlLoad's polls with
// the store's compactions, which drop a tombstone once no level below may
// hold its key, and with Badger's own, which carry it down while the
// compaction's key range overlaps a level below, and reports the bytes
// the compactions wrote a poll and the polls/s of the last fifth, each
// with its ratio.
func BenchmarkCrawlLoadTombstones(b *testing.B) {
	benchmarkCrawlLoadAgainst(b, BadgerOptions{keepTombstones: true}, "keep")
}

// BenchmarkCrawlLoadCompactionOrder writes BenchmarkCrawlLoad's polls
// with the store's order of compaction within a level (the table that
// overlaps the fewest bytes below against its size first) and with
// Badger's (the oldest first), and reports the bytes the compactions
// wrote a poll and the polls/s of the last fifth, each with its ratio.
func BenchmarkCrawlLoadCompactionOrder(b *testing.B) {
	benchmarkCrawlLoadAgainst(b, BadgerOptions{oldestFirst: true}, "oldest")
}

// BenchmarkCrawlLoadFollowedOrigin writes BenchmarkCrawlLoad's polls
// while a follower of one origin's records reads them every 100 ms, as a
// live filtered stream does: from the origin index as far as it runs and
// then from the day log (ReadOriginDayIndexed, what the share server's
// streams do), or by ReadOriginDay, which brings the index up to the log
// at each read (what they did until 2026-11-28). It reports both runs'
// polls/s of the last fifth and bytes compacted a poll, with their
// ratios, and the passes each follower's reads made the index run.
func BenchmarkCrawlLoadFollowedOrigin(b *testing.B) {
	polls := loadPolls()
	for b.Loop() {
		var tailPasses, catchUpPasses int64
		ours, oursCompacted := crawlLoadFollowed(b, polls, BadgerOptions{}, func() func(*BadgerStore, int64, string) {
			var at, logAt int64
			started := false
			return func(s *BadgerStore, day int64, origin string) {
				if !started {
					info, through, err := s.ReadOriginDayIndexed(day, origin, 0, func(int64, Event) error { return nil })
					if err != nil {
						b.Error(err)
						return
					}
					at, logAt, started = info.Size, through, true
				}
				err := s.ReadDay(day, logAt, func(off int64, e Event) error {
					if off >= logAt {
						logAt = off + int64(RecordLen(&e))
						if Origin(e.URL) == origin {
							at += int64(RecordLen(&e))
						}
					}
					return nil
				})
				if err != nil {
					b.Error(err)
				}
				tailPasses = s.IndexCatchUps()
			}
		}())
		theirs, theirsCompacted := crawlLoadFollowed(b, polls, BadgerOptions{}, func() func(*BadgerStore, int64, string) {
			var cur int64
			return func(s *BadgerStore, day int64, origin string) {
				err := s.ReadOriginDay(day, origin, cur, func(off int64, e Event) error {
					cur = off + int64(RecordLen(&e))
					return nil
				})
				if err != nil {
					b.Error(err)
				}
				catchUpPasses = s.IndexCatchUps()
			}
		}())
		b.ReportMetric(ours, "polls/s")
		b.ReportMetric(theirs, "polls/s-catch-up")
		b.ReportMetric(theirs/ours, "x-catch-up")
		b.ReportMetric(oursCompacted, "compacted-B/poll")
		b.ReportMetric(theirsCompacted, "compacted-B/poll-catch-up")
		if oursCompacted > 0 {
			b.ReportMetric(theirsCompacted/oursCompacted, "compacted-x-catch-up")
		}
		b.ReportMetric(float64(tailPasses), "reader-passes")
		b.ReportMetric(float64(catchUpPasses), "reader-passes-catch-up")
	}
}

// crawlLoad writes polls polls into a new store opened with o and returns
// the polls/s of the last fifth and the bytes Badger's compactions wrote
// a poll, until the store was closed.
func crawlLoad(b *testing.B, polls int, o BadgerOptions) (pollsPerS, compactedPerPoll float64) {
	return crawlLoadFollowed(b, polls, o, nil)
}

// crawlLoadFollowed is crawlLoad with follow, when not nil, called every
// 100 ms while the polls are written, with the day and an origin of them.
func crawlLoadFollowed(b *testing.B, polls int, o BadgerOptions, follow func(s *BadgerStore, day int64, origin string)) (pollsPerS, compactedPerPoll float64) {
	const (
		hosts = 3000
		batch = 150
	)
	compacted := CompactedBytes()
	s, err := OpenBadger(b.TempDir(), o)
	if err != nil {
		b.Fatal(err)
	}
	closed := false
	defer func() {
		if !closed {
			s.Close()
		}
	}()
	parked, backlog := s.Table(TableRevisits), s.Table(TableBacklog)
	r := rand.New(rand.NewPCG(1, 2))
	queued := make([][]string, hosts) // each host's backlog keys, oldest first
	state := make([]byte, 180)
	for i := range state {
		state[i] = byte('a' + r.IntN(26))
	}
	now := time.Now()
	stopFollow := func() {}
	if follow != nil {
		stop, done := make(chan struct{}), make(chan struct{})
		go func() {
			defer close(done)
			t := time.NewTicker(100 * time.Millisecond)
			defer t.Stop()
			for {
				select {
				case <-stop:
					return
				case <-t.C:
					follow(s, DayOf(now.Unix()), "http://h7.test:28007")
				}
			}
		}()
		stopFollow = func() { close(stop); <-done }
		defer func() { stopFollow() }() // before the close, on a failure too
	}
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
			// A record of a crawl's size (about 180 bytes, above the value
			// log's threshold): its digest, entity tag and fingerprint.
			events = append(events, Event{URL: u, Size: 1000 + int64(r.IntN(9000)), LMD: now.Unix() - 3600, LPD: now.Unix(), CID: "a:1 A/1", Stat: Create,
				Digest: fmt.Sprintf("sha256:%016x%016x%016x%016x", r.Uint64(), r.Uint64(), r.Uint64(), r.Uint64()),
				ETag:   fmt.Sprintf(`"%x"`, r.Uint64()), Fingerprint: fmt.Sprintf("simhash64:%016x", r.Uint64())})
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
	pollsPerS = float64(polls-tailFrom) / time.Since(tailStart).Seconds()
	stopFollow()
	stopFollow = func() {}
	closed = true
	if err := s.Close(); err != nil {
		b.Fatal(err)
	}
	return pollsPerS, float64(CompactedBytes()-compacted) / float64(polls)
}
