package rho

import (
	"errors"
	"math"
	"math/rand/v2"
	"testing"
	"time"
)

// phase is a stretch of synthetic history: n operations, every
// mergeEvery-th a merge (none when 0) gaining mergeEv events, the others
// polls gaining pollYield events each on average.
type phase struct {
	n          int
	mergeEvery int     // every k-th operation is a merge
	pollYield  float64 // events per poll, as a long-run share
	mergeEv    int     // events per merge
	pollCost   time.Duration
	mergeCost  time.Duration
}

func (p phase) outcomes() []Outcome {
	var out []Outcome
	acc := 0.0
	for i := 1; i <= p.n; i++ {
		if p.mergeEvery > 0 && i%p.mergeEvery == 0 {
			out = append(out, Outcome{Merge: true, Events: p.mergeEv, Cost: p.mergeCost})
			continue
		}
		acc += p.pollYield
		ev := 0
		if acc >= 1 {
			ev, acc = 1, acc-1
		}
		out = append(out, Outcome{Events: ev, Cost: p.pollCost})
	}
	return out
}

func drive(c Controller, phases ...phase) {
	for _, p := range phases {
		for _, o := range p.outcomes() {
			c.Observe(o)
		}
	}
}

func TestParse(t *testing.T) {
	tests := []struct {
		spec, name string
		rho        float64
		bad        bool
	}{
		{spec: "fixed:0.3", name: "fixed:0.3", rho: 0.3},
		{spec: "0.85", name: "fixed:0.85", rho: 0.85},
		{spec: "1", name: "fixed:1", rho: 1},
		{spec: "FIXED:0", name: "fixed:0", rho: 0},
		{spec: "bangbang", name: "bangbang", rho: 0.9},
		{spec: " Bang-Bang ", name: "bangbang", rho: 0.9},
		{spec: "rate", name: "rate", rho: 0.5},
		{spec: "fixed:1.5", bad: true},
		{spec: "fixed:-0.1", bad: true},
		{spec: "fixed:NaN", bad: true},
		{spec: "fixed", bad: true},
		{spec: "bangbang:3", bad: true},
		{spec: "pid", bad: true},
		{spec: "", bad: true},
	}
	for _, tt := range tests {
		t.Run(tt.spec, func(t *testing.T) {
			c, err := Parse(tt.spec)
			if tt.bad {
				if !errors.Is(err, ErrBadSpec) {
					t.Fatalf("Parse(%q) = %v, %v; want ErrBadSpec", tt.spec, c, err)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if c.Name() != tt.name || c.Rho() != tt.rho {
				t.Fatalf("Parse(%q) = %s rho %v; want %s rho %v", tt.spec, c.Name(), c.Rho(), tt.name, tt.rho)
			}
			if again, err := Parse(c.Name()); err != nil || again.Name() != c.Name() {
				t.Fatalf("Name %q does not parse back: %v", c.Name(), err)
			}
		})
	}
}

func TestBangBang(t *testing.T) {
	sec := time.Second
	tests := []struct {
		name   string
		phases []phase
		want   float64
	}{
		{"no history starts high", nil, 0.9},
		{"polls only: nothing to compare", []phase{{n: 500, pollYield: 0.1, pollCost: sec}}, 0.9},
		{"merges gain more per operation", []phase{{n: 1000, mergeEvery: 5, pollYield: 0.3, mergeEv: 3}}, 0.1},
		{"polls gain more per operation", []phase{{n: 1000, mergeEvery: 5, pollYield: 0.8, mergeEv: 0}}, 0.9},
		{"tie keeps the last value", []phase{
			{n: 1000, mergeEvery: 5, pollYield: 0.3, mergeEv: 3},
			{n: 3000, mergeEvery: 2, pollYield: 1, mergeEv: 1},
		}, 0.1}, // the last 30% is an exact tie (1 per poll, 1 per merge): rho stays low
		{"only the recent 30% counts", []phase{
			{n: 7000, mergeEvery: 2, pollYield: 0, mergeEv: 10}, // merges far better, long ago
			{n: 3000, mergeEvery: 2, pollYield: 1, mergeEv: 0},  // polls better, the last 30%
		}, 0.9},
		{"older than 30% is forgotten the other way", []phase{
			{n: 7000, mergeEvery: 2, pollYield: 1, mergeEv: 0},
			{n: 3000, mergeEvery: 2, pollYield: 0, mergeEv: 10},
		}, 0.1},
		{"merge cost is not counted", []phase{
			// 4 events per merge at 60 s each against 0.5 per 1 s poll:
			// bang-bang sees 4 > 0.5 and goes low, the weakness Rate fixes.
			{n: 2000, mergeEvery: 10, pollYield: 0.5, mergeEv: 4, pollCost: sec, mergeCost: 60 * sec},
		}, 0.1},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			c := NewBangBang()
			drive(c, tt.phases...)
			if got := c.Rho(); got != tt.want {
				pr, mr := c.Rates()
				t.Fatalf("rho %v, want %v (p_r %.3f, m_r %.3f)", got, tt.want, pr, mr)
			}
		})
	}
}

func TestBangBangNeverZeroOrOne(t *testing.T) {
	c := NewBangBang()
	rng := rand.New(rand.NewPCG(1, 2))
	seen := map[float64]int{}
	for range 100000 {
		o := Outcome{Merge: rng.Float64() > c.Rho()}
		if o.Merge {
			o.Events = rng.IntN(3)
		} else if rng.Float64() < 0.5 {
			o.Events = 1
		}
		c.Observe(o)
		seen[c.Rho()]++
	}
	if len(seen) != 2 || seen[0.1] == 0 || seen[0.9] == 0 {
		t.Fatalf("rho took values %v; want both 0.1 and 0.9 and nothing else", seen)
	}
}

func TestHistoryRecentIsCloseToExact(t *testing.T) {
	rng := rand.New(rand.NewPCG(3, 4))
	var h history
	var all []Outcome
	for i := range 200000 {
		o := Outcome{Merge: rng.IntN(3) == 0, Events: rng.IntN(4)}
		h.add(o)
		all = append(all, o)
		if i%9973 != 0 {
			continue
		}
		for _, f := range []float64{0.3, 0.5, 1} {
			got := h.recent(f)
			var exact tally
			start := len(all) - int(f*float64(len(all))+0.5)
			for _, o := range all[max(start, 0):] {
				exact.add(o)
			}
			n := got.polls + got.merges
			en := exact.polls + exact.merges
			// Off by less than one step of marks: at most 1/256 of history.
			if d := n - en; d < 0 || d > int64(len(all))/256+1 {
				t.Fatalf("after %d ops, window %.1f holds %d ops, exact %d", len(all), f, n, en)
			}
		}
	}
	if len(h.marks) >= maxMarks {
		t.Fatalf("history holds %d marks", len(h.marks))
	}
}

func TestRate(t *testing.T) {
	sec := time.Second
	tests := []struct {
		name   string
		phases []phase
		lo, hi float64 // rho must end within [lo, hi]
	}{
		{"starts in the middle", nil, 0.5, 0.5},
		{"polls only: nothing to compare", []phase{{n: 500, pollYield: 0.5, pollCost: sec}}, 0.5, 0.5},
		{"merges cheaper per event", []phase{
			{n: 2000, mergeEvery: 4, pollYield: 0.2, mergeEv: 10, pollCost: sec, mergeCost: 2 * sec}}, 0.05, 0.05},
		{"polls cheaper per event", []phase{
			{n: 2000, mergeEvery: 4, pollYield: 0.8, mergeEv: 1, pollCost: sec, mergeCost: 2 * sec}}, 0.95, 0.95},
		{"costly merges are charged their time", []phase{
			// The bang-bang row above: 4 events per 60 s merge is 0.067/s
			// against 0.5/s for polls, so Rate polls more.
			{n: 2000, mergeEvery: 10, pollYield: 0.5, mergeEv: 4, pollCost: sec, mergeCost: 60 * sec}}, 0.95, 0.95},
		{"within the dead band rho stays", []phase{
			// 0.5/s by polls, 0.55/s by merges: 10% apart, margin is 20%.
			{n: 5000, mergeEvery: 2, pollYield: 0.5, mergeEv: 11, pollCost: sec, mergeCost: 20 * sec}}, 0.5, 0.5},
		{"fixed half-life: an old peer reacts fast", []phase{
			{n: 1_000_000, mergeEvery: 4, pollYield: 0.8, mergeEv: 0, pollCost: sec, mergeCost: sec},
			{n: 1000, mergeEvery: 4, pollYield: 0.1, mergeEv: 5, pollCost: sec, mergeCost: sec}}, 0.05, 0.05},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			c := NewRate()
			drive(c, tt.phases...)
			if got := c.Rho(); got < tt.lo-1e-9 || got > tt.hi+1e-9 {
				p, m := c.Rates()
				t.Fatalf("rho %v, want in [%v, %v] (poll %.3f/s, merge %.3f/s)", got, tt.lo, tt.hi, p, m)
			}
		})
	}
}

// The same late change leaves an aged bang-bang behind: after a million
// operations favouring polls, 1,000 favouring merges are a sliver of its
// 30% window.
func TestBangBangAgesWhereRateDoesNot(t *testing.T) {
	old := phase{n: 1_000_000, mergeEvery: 4, pollYield: 0.8, mergeEv: 0, pollCost: time.Second, mergeCost: time.Second}
	change := phase{n: 1000, mergeEvery: 4, pollYield: 0.1, mergeEv: 5, pollCost: time.Second, mergeCost: time.Second}
	b := NewBangBang()
	drive(b, old, change)
	if b.Rho() != 0.9 {
		t.Fatalf("bang-bang moved to %v; its window should still be dominated by the old phase", b.Rho())
	}
}

func TestRateStaysInBounds(t *testing.T) {
	c := &Rate{Min: 0.2, Max: 0.7, Step: 0.3}
	rng := rand.New(rand.NewPCG(5, 6))
	for range 50000 {
		o := Outcome{Merge: rng.Float64() > c.Rho(), Cost: time.Duration(rng.IntN(5)) * time.Second}
		if o.Merge {
			o.Events = rng.IntN(10)
		} else {
			o.Events = rng.IntN(2)
		}
		c.Observe(o)
		if r := c.Rho(); r < 0.2 || r > 0.7 {
			t.Fatalf("rho %v left [0.2, 0.7]", r)
		}
	}
}

// Seek moves towards the share of merges under which its polls find its
// cache fresher, and stays within its bounds.
func TestSeekClimbsTowardsFresherProbe(t *testing.T) {
	for _, tc := range []struct {
		name       string
		fresherLow bool // fresher when merging less (rho higher)
	}{{"fewer merges fresher", true}, {"more merges fresher", false}} {
		t.Run(tc.name, func(t *testing.T) {
			s := &Seek{Period: 300 * time.Second}
			start := s.Centre()
			rng := rand.New(rand.NewPCG(1, 2))
			for i := range 200_000 {
				r := s.Rho()
				// freshness seen by polls: 0.6 plus 2 per unit of rho
				// (or minus), so each probe differs clearly.
				f := 0.6 + 2*(r-0.95)
				if !tc.fresherLow {
					f = 0.6 - 2*(r-0.95)
				}
				ev := 0
				if rng.Float64() >= f {
					ev = 1
				}
				if i%20 == 0 {
					s.Observe(Outcome{Merge: true, Events: 50, Cost: time.Second})
				}
				s.Observe(Outcome{Events: ev, Cost: time.Second})
				if r < 0.5-1e-9 || r > 0.998+1e-9 {
					t.Fatalf("rho %.4f out of bounds", r)
				}
			}
			end := s.Centre()
			if tc.fresherLow && end <= start+0.015 || !tc.fresherLow && end >= start-0.03 {
				t.Fatalf("centre moved from %.3f to %.3f", start, end)
			}
		})
	}
}

// Differences within the noise do not move the centre: a flat landscape
// leaves Seek where it started.
func TestSeekHoldsOnNoise(t *testing.T) {
	s := &Seek{Period: 300 * time.Second}
	start := s.Centre()
	rng := rand.New(rand.NewPCG(3, 4))
	moves := 0
	last := start
	for range 300_000 {
		ev := 0
		if rng.Float64() >= 0.6 {
			ev = 1
		}
		s.Observe(Outcome{Events: ev, Cost: time.Second})
		if c := s.Centre(); c != last {
			moves, last = moves+1, c
		}
	}
	// 500 pairs of probes; a two-standard-error filter lets about one in
	// twenty through, each a step either way.
	if moves > 50 || math.Abs(math.Log(1-s.Centre())-math.Log(1-start)) > 2 {
		t.Fatalf("noise moved the centre %d times, from %.4f to %.4f", moves, start, s.Centre())
	}
}

// Peers that share a clock probe in step, whatever their history; without
// a clock each probes on the sum of its own costs.
func TestSeekProbesInStepOnASharedClock(t *testing.T) {
	epoch := time.Date(2026, 11, 22, 0, 0, 0, 0, time.UTC)
	a, b := &Seek{Period: time.Hour}, &Seek{Period: time.Hour}
	for i := range 10_000 {
		at := epoch.Add(time.Duration(i) * 7 * time.Second)
		a.Observe(Outcome{Events: i % 2, Cost: time.Second, End: at})
		if i%3 != 0 {
			continue
		}
		// b observes less often, with other costs
		b.Observe(Outcome{Merge: true, Events: 9, Cost: 5 * time.Second, End: at})
		if (a.Rho() < a.Centre()) != (b.Rho() < b.Centre()) {
			t.Fatalf("at %v a probes %.3f around %.3f, b %.3f around %.3f", at, a.Rho(), a.Centre(), b.Rho(), b.Centre())
		}
	}
	c := &Seek{Period: time.Minute}
	if c.Rho() >= c.Centre() {
		t.Fatal("the first probe should merge more")
	}
	for range 60 {
		c.Observe(Outcome{Cost: time.Second})
	}
	if c.Rho() <= c.Centre() {
		t.Fatal("after a minute of costs the second probe should merge less")
	}
}

func TestParseSeekPeriod(t *testing.T) {
	c, err := Parse("seek:2h")
	if err != nil || c.(*Seek).Period != 2*time.Hour || c.Name() != "seek:2h0m0s" {
		t.Fatalf("Parse(seek:2h): %v %v", c, err)
	}
	if again, err := Parse(c.Name()); err != nil || again.Name() != c.Name() {
		t.Fatalf("Name does not parse back: %v %v", again, err)
	}
	for _, bad := range []string{"seek:", "seek:0s", "seek:-1h", "seek:soon"} {
		if _, err := Parse(bad); !errors.Is(err, ErrBadSpec) {
			t.Errorf("Parse(%q) = %v, want ErrBadSpec", bad, err)
		}
	}
}

func TestSeekIgnoresMergeEvents(t *testing.T) {
	s := NewSeek()
	before := s.Centre()
	for range 10_000 {
		s.Observe(Outcome{Merge: true, Events: 1000, Cost: time.Millisecond})
	}
	if s.Centre() != before {
		t.Fatal("merges alone moved rho")
	}
	if c, err := Parse("seek"); err != nil || c.Name() != "seek" {
		t.Fatalf("Parse(seek): %v %v", c, err)
	}
}

// seekExact drives s with one poll a second for the given seconds, the
// share of them that find the cache fresh exactly fresh(rho) (spread
// evenly, no noise), and calls each with the centre after every second.
func seekExact(s *Seek, seconds int, fresh func(rho float64) float64, each func(centre float64)) {
	acc := 0.0
	for range seconds {
		acc += fresh(s.Rho())
		ev := 1
		if acc >= 1 {
			acc--
			ev = 0
		}
		s.Observe(Outcome{Events: ev, Cost: time.Second})
		if each != nil {
			each(s.Centre())
		}
	}
}

// A difference too small for one pair of probes to show is seen by
// several pooled: 200 counted polls a probe, 0.60 against 0.65 fresh, is
// half the two standard errors one pair needs; four pairs together clear
// them. With no pooling (Window 1) Seek never moves.
func TestSeekPoolsPairsToSeeSmallDifferences(t *testing.T) {
	for _, window := range []int{0, 1} {
		s := &Seek{Period: 300 * time.Second, Window: window}
		start := s.Centre()
		firstMove := -1
		seekExact(s, 12*600, func(r float64) float64 {
			if r > s.Centre() {
				return 0.65 // merging less is fresher
			}
			return 0.60
		}, func(c float64) {
			if firstMove < 0 && c != start {
				firstMove = 0
			}
			if firstMove == 0 && c > start {
				firstMove = 1
			}
		})
		switch {
		case window == 0 && firstMove != 1:
			t.Fatalf("pooled: centre %.4f from %.4f, want a move towards fewer merges", s.Centre(), start)
		case window == 1 && s.Centre() != start:
			t.Fatalf("single pairs moved the centre to %.4f on a difference within their noise", s.Centre())
		}
	}
}

// Moves that keep going the same way grow, so a far optimum is reached in
// a few probes; a turn halves the step, so Seek settles instead of
// swinging.
func TestSeekStepGrowsThenSettles(t *testing.T) {
	target := math.Log(1 - 0.8) // the freshest rho
	// Boost 1: the step rule alone, without moves scaled by clarity.
	s := &Seek{Period: 300 * time.Second, Start: 0.975, Boost: 1}
	var moves []float64
	last := math.Log(1 - s.Centre())
	seekExact(s, 40*600, func(r float64) float64 {
		return 0.7 - 0.3*math.Abs(math.Log(1-r)-target)
	}, func(c float64) {
		if x := math.Log(1 - c); x != last {
			moves, last = append(moves, x-last), x
		}
	})
	if len(moves) < 4 {
		t.Fatalf("moves %v", moves)
	}
	if moves[0] <= 0 || moves[1] <= moves[0] || moves[2] <= moves[1] {
		t.Fatalf("first moves %v: want growing steps towards more merges", moves[:3])
	}
	turned := false
	for i := 1; i < len(moves); i++ {
		if moves[i]*moves[i-1] < 0 {
			turned = true
			if math.Abs(moves[i]) >= math.Abs(moves[i-1]) {
				t.Fatalf("moves %v: a turn should halve the step", moves)
			}
		}
	}
	if d := math.Abs(last - target); !turned || d > 0.2 {
		t.Fatalf("moves %v end %.3f from the target (turned %v)", moves, d, turned)
	}
}

// A cache whose freshness drifts (a community warming up) with no
// difference between probes leaves Seek where it is: probes alternate, and
// the fitted line takes the drift. Compared probe by probe, each probe
// merging less would look fresher than the one before it.
func TestSeekIgnoresDrift(t *testing.T) {
	for _, slope := range []float64{0.4, -0.4} {
		s := &Seek{Period: 3000 * time.Second}
		start := s.Centre()
		second := 0
		seekExact(s, 20*3000, func(float64) float64 {
			second++
			return 0.3 + slope*float64(second)/(20*3000)
		}, nil)
		if s.Centre() != start {
			t.Fatalf("drift %+.1f over 20 probes moved the centre from %.4f to %.4f", slope, start, s.Centre())
		}
	}
}

func TestInvert3(t *testing.T) {
	m := [3][3]float64{{4, 1, 2}, {1, 3, 0.5}, {2, 0.5, 5}}
	inv, ok := invert3(m)
	if !ok {
		t.Fatal("a regular matrix reported singular")
	}
	for i := range 3 {
		for j := range 3 {
			var sum float64
			for k := range 3 {
				sum += m[i][k] * inv[k][j]
			}
			want := 0.0
			if i == j {
				want = 1
			}
			if math.Abs(sum-want) > 1e-12 {
				t.Fatalf("m x inv [%d][%d] = %v", i, j, sum)
			}
		}
	}
	if _, ok := invert3([3][3]float64{{1, 2, 3}, {2, 4, 6}, {3, 6, 10}}); ok {
		t.Fatal("a singular matrix inverted")
	}
}
