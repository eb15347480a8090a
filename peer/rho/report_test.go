package rho

import (
	"errors"
	"fmt"
	"math"
	"math/rand/v2"
	"testing"
	"time"
)

func TestReportRoundTrip(t *testing.T) {
	r := Report{Period: 90 * time.Minute, Centre: 0.953, Probe: 81234, Polls: 412, Fresh: 18, PrevPolls: 630, PrevFresh: 25}
	got, err := ParseReport(r.String())
	if err != nil || got != r {
		t.Fatalf("ParseReport(%q) = %+v, %v", r.String(), got, err)
	}
	// Unknown keys are ignored, for later versions.
	if got, err := ParseReport(r.String() + " spread=0.2"); err != nil || got != r {
		t.Fatalf("with an unknown key: %+v, %v", got, err)
	}
}

func TestParseReportRejects(t *testing.T) {
	for _, bad := range []string{
		"",
		"centre=0.9 k=3",            // no period
		"period=60 k=3",             // no centre
		"period=60 centre=0.9",      // no k
		"period=0 centre=0.9 k=3",   // period not positive
		"period=60 centre=1.5 k=3",  // centre out of [0,1]
		"period=60 centre=NaN k=3",  // not a number
		"period=60 centre=0.9 k=-1", // negative probe
		"period=60 centre=0.9 k=3 polls=5 fresh=6", // fresh above polls
		"period=60 centre=0.9 k=3 polls=-5",
		"period=60 centre=0.9 k=3 polls=99999999999",
		"period=60 period=60 centre=0.9 k=3",
		"period=60 centre=0.9 k=3 polls",
		"period=99999999999999999 centre=0.9 k=3",
	} {
		if r, err := ParseReport(bad); !errors.Is(err, ErrBadReport) {
			t.Errorf("ParseReport(%q) = %+v, %v; want ErrBadReport", bad, r, err)
		}
	}
}

func FuzzParseReport(f *testing.F) {
	f.Add(Report{Period: time.Hour, Centre: 0.95, Probe: 7, Polls: 10, Fresh: 3}.String())
	f.Add("period=60 centre=0.9 k=3 polls=5 fresh=6")
	f.Add("period=1 centre=0 k=0 prev-polls=1 prev-fresh=1 x=y")
	f.Fuzz(func(t *testing.T, v string) {
		r, err := ParseReport(v)
		if err != nil {
			return
		}
		if r.Fresh > r.Polls || r.PrevFresh > r.PrevPolls || r.Period <= 0 || r.Probe < 0 {
			t.Fatalf("ParseReport(%q) accepted %+v", v, r)
		}
		again, err := ParseReport(r.String())
		if err != nil || again.Period != r.Period || again.Probe != r.Probe || again.Polls != r.Polls {
			t.Fatalf("%+v does not read back: %+v, %v", r, again, err)
		}
	})
}

// A peer's counts weigh at most twice the crawler's own: one that reports
// a million polls does not drown the rest.
func TestPeerCountsAreCapped(t *testing.T) {
	pc := probeCount{own: count{100, 60}, peers: map[string]count{
		"liar":   {1_000_000, 1_000_000},
		"honest": {150, 90},
	}}
	got := pc.total(30)
	if want := (count{100 + 200 + 150, 60 + 200 + 90}); got != want {
		t.Fatalf("total %+v, want %+v", got, want)
	}
}

// community drives n Seek peers on a shared clock: each polls once a
// second, finding its cache fresh with probability fresh(rho), and every
// tenth second merges from the next peer, round robin, with that peer's
// report if share is set. It returns the time of each peer's first move
// (0: none) and the centres at the end.
func community(n, seconds int, share bool, fresh func(rho float64) float64) (firstMove []int, centres []float64) {
	epoch := time.Date(2026, 11, 22, 0, 0, 0, 0, time.UTC)
	peers := make([]*Seek, n)
	for i := range peers {
		peers[i] = &Seek{Period: 300 * time.Second}
	}
	start := peers[0].Centre()
	firstMove = make([]int, n)
	rng := rand.New(rand.NewPCG(5, 6))
	for sec := range seconds {
		at := epoch.Add(time.Duration(sec) * time.Second)
		for i, s := range peers {
			ev := 1
			if rng.Float64() < fresh(s.Rho()) {
				ev = 0
			}
			s.Observe(Outcome{Events: ev, Cost: time.Second, End: at})
			if sec%10 == i%10 {
				from := peers[(i+1+sec/10)%n]
				o := Outcome{Merge: true, Events: 3, Cost: time.Second, End: at}
				if share && from != s {
					o.From = fmt.Sprint((i + 1 + sec/10) % n)
					o.Report, _ = from.Report()
				}
				s.Observe(o)
			}
			if firstMove[i] == 0 && s.Centre() != start {
				firstMove[i] = sec
			}
		}
	}
	for _, s := range peers {
		centres = append(centres, s.Centre())
	}
	return firstMove, centres
}

// Pooled reports let a community see a difference none of its peers sees
// alone in the same time: 200 counted polls a probe, 0.60 fresh merging
// more against 0.63 merging less, needs about eight probes' worth of
// polls to clear two standard errors; eight peers pooling have them in
// three probes.
func TestSeekPoolsPeersReports(t *testing.T) {
	fresh := func(r float64) float64 {
		if r > 0.95 {
			return 0.63
		}
		return 0.60
	}
	const n, seconds = 8, 8 * 300
	aloneMoves, _ := community(n, seconds, false, fresh)
	pooledMoves, centres := community(n, seconds, true, fresh)
	alone, pooled := 0, 0
	for i := range n {
		if aloneMoves[i] != 0 {
			alone++
		}
		if pooledMoves[i] != 0 {
			pooled++
			if centres[i] <= 0.95 {
				t.Errorf("peer %d moved to %.4f, towards the staler side", i, centres[i])
			}
		}
	}
	t.Logf("moved: %d of %d pooling, %d alone (first moves %v, %v)", pooled, n, alone, pooledMoves, aloneMoves)
	if pooled < n-1 || alone > n/4 {
		t.Fatalf("in 8 probes %d of %d pooling peers moved, %d alone; want nearly all and few", pooled, n, alone)
	}
}

// Reports of another period, or from a peer centred far away, are not
// pooled: they answer another question.
func TestSeekSkipsForeignReports(t *testing.T) {
	s := &Seek{Period: 300 * time.Second}
	at := time.Date(2026, 11, 22, 0, 0, 0, 0, time.UTC)
	s.Observe(Outcome{Cost: time.Second, End: at})
	k := at.UnixNano() / int64(300*time.Second)
	for _, r := range []Report{
		{Period: 600 * time.Second, Centre: 0.95, Probe: k, Polls: 100},
		{Period: 300 * time.Second, Centre: 0.85, Probe: k, Polls: 100},
		{Period: 300 * time.Second, Centre: 1, Probe: k, Polls: 100},
	} {
		s.Observe(Outcome{Merge: true, From: "p", Report: r, End: at})
		if len(s.peers) != 0 {
			t.Fatalf("pooled %+v", r)
		}
	}
	s.Observe(Outcome{Merge: true, From: "p", Report: Report{Period: 300 * time.Second, Centre: 0.97, Probe: k, Polls: 100, Fresh: 40}, End: at})
	if s.peers["p"] != (count{100, 40}) {
		t.Fatalf("a matching report not pooled: %+v", s.peers)
	}
}

// A difference many times clearer than the threshold moves the centre by
// up to Boost steps; one just clear of it by one step.
func TestSeekBoostsClearMoves(t *testing.T) {
	firstMove := func(boost, fresherBy float64) float64 {
		s := &Seek{Period: 300 * time.Second, Boost: boost}
		start := math.Log(1 - s.Centre())
		moved := 0.0
		seekExact(s, 12*300, func(r float64) float64 {
			if r > s.Centre() {
				return 0.6 + fresherBy // merging less is fresher
			}
			return 0.6
		}, func(c float64) {
			if x := math.Log(1 - c); moved == 0 && x != start {
				moved = start - x
			}
		})
		return moved
	}
	one, clear, boosted := firstMove(1, 0.3), firstMove(3, 0.3), firstMove(3, 0.11)
	if math.Abs(one-0.3) > 1e-9 || math.Abs(clear-0.9) > 1e-9 || boosted <= 0.3 || boosted >= 0.9 {
		t.Fatalf("first moves: %.3f without boost, %.3f with a clear difference, %.3f with a nearer one", one, clear, boosted)
	}
}

// The field carries whole seconds: a Seek of another period publishes
// nothing rather than a report its peers would misread or reject.
func TestSeekReportsWholeSecondPeriodsOnly(t *testing.T) {
	if _, ok := (&Seek{Period: 1500 * time.Millisecond}).Report(); ok {
		t.Fatal("a period of 1.5 s was reported")
	}
	r, ok := (&Seek{Period: 90 * time.Second}).Report()
	if !ok {
		t.Fatal("a period of 90 s was not reported")
	}
	if again, err := ParseReport(r.String()); err != nil || again.Period != 90*time.Second {
		t.Fatalf("%s reads back as %+v, %v", r, again, err)
	}
}
