package rho

import (
	"math"
	"math/rand/v2"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// contractSpecs are the controllers every peer and the simulator can run;
// a new controller adds its names here.
var contractSpecs = []string{"fixed:0", "fixed:0.3", "fixed:1", "bangbang", "rate", "seek", "seek:1m"}

// outcomeStream is a long, varied stream of operations on a simulated
// shared clock: polls and merges, gains and costs, peers' probe reports
// well-formed and odd.
func outcomeStream(seed uint64, n int) []Outcome {
	rng := rand.New(rand.NewPCG(seed, 7))
	clock := time.Date(2026, 11, 22, 0, 0, 0, 0, time.UTC)
	out := make([]Outcome, n)
	for i := range out {
		clock = clock.Add(time.Duration(rng.IntN(3000)) * time.Millisecond)
		o := Outcome{Merge: rng.IntN(3) == 0, Cost: time.Duration(rng.IntN(4000)) * time.Millisecond, End: clock}
		if o.Merge {
			o.Events = rng.IntN(50)
			if rng.IntN(4) == 0 {
				o.From = "http://peer" + string(rune('a'+rng.IntN(5))) + ".test/robots.shr"
				o.Report = Report{Period: time.Minute, Centre: 0.5 + rng.Float64()/2, Probe: clock.Unix() / 60,
					Polls: rng.IntN(1000), PrevPolls: rng.IntN(1000)}
				o.Report.Fresh = rng.IntN(o.Report.Polls + 1)
				o.Report.PrevFresh = rng.IntN(o.Report.PrevPolls + 1)
			}
		} else {
			o.Events = rng.IntN(2)
		}
		if rng.IntN(500) == 0 {
			o.End = time.Time{} // a clock that is not known
		}
		out[i] = o
	}
	return out
}

// The contract every rho.Controller keeps: rho within [0,1] whatever it is
// told, the same rho for the same outcomes (no clock, no hidden
// randomness), and a name that Parse reads back into the same controller.
func TestControllerContract(t *testing.T) {
	stream := outcomeStream(1, 100_000)
	for _, spec := range contractSpecs {
		t.Run(spec, func(t *testing.T) {
			a, err := Parse(spec)
			if err != nil {
				t.Fatal(err)
			}
			b, err := Parse(a.Name())
			if err != nil || b.Name() != a.Name() {
				t.Fatalf("Parse(%q) = %v, %v: the name does not round-trip", a.Name(), b, err)
			}
			if r := a.Rho(); !(r >= 0 && r <= 1) {
				t.Fatalf("initial rho %v is not in [0,1]", r)
			}
			start, moved := a.Rho(), false
			for i, o := range stream {
				a.Observe(o)
				b.Observe(o)
				ra, rb := a.Rho(), b.Rho()
				if math.IsNaN(ra) || ra < 0 || ra > 1 {
					t.Fatalf("after %d outcomes rho is %v, not in [0,1]", i+1, ra)
				}
				if ra != rb {
					t.Fatalf("after %d outcomes two controllers told the same disagree: %v and %v", i+1, ra, rb)
				}
				moved = moved || ra != start
			}
			if _, fixed := a.(Fixed); fixed && moved {
				t.Errorf("a fixed controller moved")
			}
		})
	}
}

// Controllers read time only from Outcome.End: the simulator runs them on
// its own clock, so a call to the wall clock would make runs irreproducible.
func TestControllersReadNoClock(t *testing.T) {
	files, err := filepath.Glob("*.go")
	if err != nil {
		t.Fatal(err)
	}
	for _, f := range files {
		if strings.HasSuffix(f, "_test.go") {
			continue
		}
		b, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		for _, banned := range []string{"time.Now(", "time.Since(", "math/rand"} {
			if strings.Contains(string(b), banned) {
				t.Errorf("%s uses %s", f, banned)
			}
		}
	}
}
