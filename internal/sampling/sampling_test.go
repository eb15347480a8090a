package sampling

import (
	"testing"
	"time"
)

// Samples at Intervals fall at every phase of a grid as often, whatever
// the grid's step: a fixed period of 1 s against a grid of 2 s looks at
// one phase only (or two), the worst one as likely as any.
func TestIntervalsSpreadOverEveryPhase(t *testing.T) {
	for _, grid := range []time.Duration{200 * time.Millisecond, time.Second, 2 * time.Second, 3 * time.Second} {
		next := Intervals(time.Second, 7)
		const bins, n = 8, 4000
		var hist [bins]int
		var at time.Duration
		for range n {
			at += next()
			hist[int(at%grid)*bins/int(grid)]++
		}
		for i, h := range hist {
			if share := float64(h) / n; share < 0.8/bins || share > 1.2/bins {
				t.Errorf("grid %v: %.3f of the samples in phase bin %d of %d, want about %.3f", grid, share, i, bins, 1.0/bins)
			}
		}
	}
	// The mean is the period.
	next := Intervals(time.Second, 3)
	var sum time.Duration
	for range 10000 {
		d := next()
		if d < 500*time.Millisecond || d > 1500*time.Millisecond {
			t.Fatalf("interval %v outside [0.5 s, 1.5 s]", d)
		}
		sum += d
	}
	if mean := sum / 10000; mean < 990*time.Millisecond || mean > 1010*time.Millisecond {
		t.Errorf("mean interval %v, want 1 s", mean)
	}
}

func TestTickerTicksAndStops(t *testing.T) {
	tk := NewTicker(10*time.Millisecond, 1)
	deadline := time.After(10 * time.Second)
	for range 5 {
		select {
		case <-tk.C:
		case <-deadline:
			t.Fatal("no tick in 10 s")
		}
	}
	tk.Stop()
	tk.Stop()                         // twice is fine
	time.Sleep(50 * time.Millisecond) // a tick on its way when Stop came
	select {
	case <-tk.C: // at most one left in the buffer
	default:
	}
	select {
	case <-tk.C:
		t.Fatal("a tick after Stop")
	case <-time.After(100 * time.Millisecond):
	}
}
