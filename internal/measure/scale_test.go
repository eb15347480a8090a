package measure

import (
	"math"
	"testing"
	"time"
)

// The scale report's slope is memory per URL over the frontier's growth,
// not over samples taken once the web was whole, and its rates are polls
// per second over the first and last windows.
func TestScaleSummary(t *testing.T) {
	var ss []ScaleSample
	for i := 1; i <= 18; i++ {
		known := int64(min(i, 11)) * 100000 // whole after 110 s
		ss = append(ss, ScaleSample{At: time.Duration(i) * 10 * time.Second, Known: known,
			Polls: int64(i) * 100000, RSS: 50<<20 + 2000*known + int64(i%2)*(1<<20), RSSAnon: 30<<20 + 900*known,
			HeapInUse: 40<<20 + 1000*known, HeapLive: 20<<20 + 30*known})
	}
	r := &ScaleReport{Config: ScaleConfig{Run: 3 * time.Minute}, Samples: ss}
	r.summarise()
	if math.Abs(r.RSSPerURL-2000) > 50 || math.Abs(r.HeapPerURL-1000) > 1 {
		t.Errorf("slopes %.0f and %.0f bytes per URL, want 2000 and 1000", r.RSSPerURL, r.HeapPerURL)
	}
	if math.Abs(r.AnonPerURL-900) > 1 || math.Abs(r.LivePerURL-30) > 1 {
		t.Errorf("anonymous and live slopes %.0f and %.0f bytes per URL, want 900 and 30", r.AnonPerURL, r.LivePerURL)
	}
	if math.Abs(r.FirstRate-10000) > 1 || math.Abs(r.LastRate-10000) > 1 {
		t.Errorf("rates %.0f and %.0f polls/s, want 10000", r.FirstRate, r.LastRate)
	}
	if math.Abs(r.StorePerURL) > 0 {
		t.Errorf("store %.0f bytes per URL of an empty folder", r.StorePerURL)
	}
}

func TestSlopes2SplitsTwoCauses(t *testing.T) {
	var x1, x2, ys []float64
	for i := range 20 {
		a, b := float64(i*i%7)*1000, float64(i)*5000
		x1, x2, ys = append(x1, a), append(x2, b), append(ys, 10+300*a+20*b)
	}
	if a, b := slopes2(x1, x2, ys); math.Abs(a-300) > 1e-6 || math.Abs(b-20) > 1e-6 {
		t.Errorf("slopes %v and %v, want 300 and 20", a, b)
	}
	if a, b := slopes2(x1, x1, ys); a != 0 || b != 0 {
		t.Errorf("two equal regressors gave %v and %v, want none", a, b)
	}
}
