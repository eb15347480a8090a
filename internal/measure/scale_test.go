package measure

import (
	"cmp"
	"math"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/cocrawl/cocrawl/webevents"
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

// The speed by the frontier's size runs from the first sample past each
// million URLs known to the first past the next, however long each took.
func TestScaleSpeedByMillions(t *testing.T) {
	var ss []ScaleSample
	known, polls := int64(0), int64(0)
	for i := 1; i <= 40; i++ {
		rate := int64(8000) // polls a second: 8,000 up to 2 million URLs known, 4,000 after
		if known >= 2_000_000 {
			rate = 4000
		}
		polls += 10 * rate
		known += 25 * rate // 2.5 new URLs a poll
		// the crawler takes 1.2 cores and the web 0.6 throughout: 150 and
		// 75 µs a poll at 8,000 polls a second, twice that at 4,000
		// and reads 40 MB from the disk in 1,000 faults every 10 s, 500
		// and 12.5 a poll at 8,000 polls a second, twice that at 4,000
		ss = append(ss, ScaleSample{At: time.Duration(i) * 10 * time.Second, Known: known, Polls: polls, CPU: 1.2, WebCPU: 0.6,
			DiskRead: 40e6, MajorFaults: 1000, MemAvailable: int64(50-i) * 1e8,
			// and puts 8 MB in the store's tree, which its compactions
			// write 16 MB of to level 5 and, from the 20th sample on, 24
			// to level 6: 100, 200 and 300 bytes a poll at 8,000 a second
			TreePut: 8e6, ByLevel: [webevents.TreeLevels]int64{5: 16e6, 6: 24e6 * int64(min(i/20, 1))}, TreeBytes: int64(i) * 1e7})
	}
	ws := byMillion(ss)
	if len(ws) != 4 || ws[0].From != 1_000_000 || ws[3].To != 5_000_000 {
		t.Fatalf("windows %+v, want 1-2 million to 4-5", ws)
	}
	if math.Abs(ws[0].Rate-8000) > 1 || math.Abs(ws[2].Rate-4000) > 1 {
		t.Errorf("1-2M at %.0f polls/s, 3-4M at %.0f: want 8000 and 4000", ws[0].Rate, ws[2].Rate)
	}
	r := &ScaleReport{Config: ScaleConfig{Run: 400 * time.Second}, Samples: ss}
	r.summarise()
	var out strings.Builder
	r.Print(&out)
	t.Log("\n" + out.String())
	if !strings.Contains(out.String(), "3-4M 4000 (0.50x)") {
		t.Errorf("the report does not give 3-4 million's speed against 1-2 million's:\n%s", out.String())
	}
	if !strings.Contains(out.String(), "1-2M 150 µs (1.00x) web 75") || !strings.Contains(out.String(), "3-4M 300 µs (2.00x) web 150") {
		t.Errorf("the report does not give the CPU a poll took:\n%s", out.String())
	}
	// 1-2 million ends with the sample at 2 million: the 10th (known
	// ten samples of 200,000), 4.0 GB available
	if !strings.Contains(out.String(), "1-2M 500 B 0.01 faults 4.0 GB") || !strings.Contains(out.String(), "3-4M 1000 B 0.03 faults") {
		t.Errorf("the report does not give the disk's reads a poll:\n%s", out.String())
	}
	// at 4,000 polls a second from 2 million URLs known, twice as many
	// bytes a poll; levels that wrote nothing are left out
	if !strings.Contains(out.String(), "1-2M put 100 L5 200 (2.0x) tree 95 MB") || !strings.Contains(out.String(), "4-5M put 200 L5 400 L6 600 (5.0x)") {
		t.Errorf("the report does not give the tree's writes by level:\n%s", out.String())
	}
}

// The readers of /proc the samples take read this process, and 0 for one
// that is not there.
func TestProcReaders(t *testing.T) {
	if _, err := os.Stat("/proc/self/io"); err != nil {
		t.Skip("no /proc here")
	}
	if rss := processRSS("self"); rss <= 0 {
		t.Errorf("this process's resident memory: %d", rss)
	}
	if m := memAvailable(); m <= 0 {
		t.Errorf("the machine's available memory: %d", m)
	}
	if f := majorFaults("self"); f < 0 {
		t.Errorf("major faults %d", f)
	}
	if processRSS("no-such-process") != 0 || majorFaults("no-such-process") != 0 {
		t.Error("a process that is not there has a resident set or faults")
	}
	if got := kibField([]byte("MemTotal:  10 kB\nMemAvailable:    3 kB\n"), "MemAvailable:"); got != 3<<10 {
		t.Errorf("kibField: %d, want %d", got, 3<<10)
	}
}

// Past ten million URLs the report gives the speed over all of it, from
// the first sample there to the crawl's last (not the stop's), against
// 1-2 million's, with the range of its windows.
func TestScaleSpeedPastTenMillion(t *testing.T) {
	var ss []ScaleSample
	known, polls := int64(0), int64(0)
	for i := 1; i <= 80; i++ {
		rate := int64(5000) // 5,000 polls a second up to 10 million URLs, 4,000 after
		if known >= 10_000_000 {
			rate = 4000
		}
		polls += 10 * rate
		known += 30 * rate
		ss = append(ss, ScaleSample{At: time.Duration(i) * 10 * time.Second, Known: known, Polls: polls})
	}
	// The stop's sample: hardly a poll.
	ss = append(ss, ScaleSample{At: 810 * time.Second, Known: known, Polls: polls + 5})
	r := &ScaleReport{Config: ScaleConfig{Run: 800 * time.Second}, Samples: ss}
	r.summarise()
	if math.Abs(r.PastTenMillion-4000) > 1 {
		t.Errorf("past 10 million at %.1f polls/s, want 4000", r.PastTenMillion)
	}
	var out strings.Builder
	r.Print(&out)
	if !strings.Contains(out.String(), "past 10 million URLs known: 4000 (0.80x), its windows 0.80x to 0.80x") {
		t.Errorf("the report does not give the speed past 10 million:\n%s", out.String())
	}
	// A crawl that stayed below says nothing of it.
	r = &ScaleReport{Config: ScaleConfig{Run: 300 * time.Second}, Samples: ss[:30]}
	r.summarise()
	out.Reset()
	r.Print(&out)
	if r.PastTenMillion != 0 || strings.Contains(out.String(), "past 10 million") {
		t.Errorf("a crawl to %d URLs reports a speed past 10 million: %.0f\n%s", ss[29].Known, r.PastTenMillion, out.String())
	}
}

// With FreshBaseline the report sets the late windows against the fresh
// crawl's 1-2 million as well as the run's own: a machine that slowed
// in the course of the run slows the fresh crawl too.
func TestScaleFreshBaseline(t *testing.T) {
	crawl := func(n int, rate func(known int64) int64) []ScaleSample {
		var ss []ScaleSample
		known, polls := int64(0), int64(0)
		for i := 1; i <= n; i++ {
			r := rate(known)
			polls += 10 * r
			known += 30 * r
			ss = append(ss, ScaleSample{At: time.Duration(i) * 10 * time.Second, Known: known, Polls: polls, CPU: 1.5, WebCPU: 0.5})
		}
		return ss
	}
	// The run: 5,000 polls a second to 10 million URLs, 4,000 after. The
	// fresh crawl, at the run's end: 4,000 to 2 million, where it stops.
	run := crawl(80, func(known int64) int64 { return cmp.Or(4000*min(known/10_000_000, 1), 5000) })
	fresh := crawl(17, func(int64) int64 { return 4000 })
	r := &ScaleReport{Config: ScaleConfig{Run: 800 * time.Second, FreshBaseline: true}, Samples: run, Fresh: fresh}
	r.summarise()
	if math.Abs(r.FreshBase.Rate-4000) > 1 || r.FreshBase.From != 1_000_000 {
		t.Fatalf("the fresh baseline %+v, want 1-2 million at 4000 polls/s", r.FreshBase)
	}
	var out strings.Builder
	r.Print(&out)
	t.Log("\n" + out.String())
	for _, want := range []string{
		"the fresh crawl after the run (the same web, a new data folder): 1-2M 4000 polls/s, the crawler 375 µs a poll, the web 125; the run's own 1-2M against it 1.25x",
		"past 10 million URLs known: 4000 (0.80x), its windows 0.80x to 0.80x",
		"past 10 million URLs known against the fresh crawl's 1-2 million: 1.00x, its windows 1.00x to 1.00x",
		" 1-2M 1.25x",
	} {
		if !strings.Contains(out.String(), want) {
			t.Errorf("the report does not say %q:\n%s", want, out.String())
		}
	}
	// A fresh crawl that stopped short of 2 million gives no baseline,
	// and says so.
	r = &ScaleReport{Config: r.Config, Samples: run, Fresh: fresh[:5]}
	r.summarise()
	out.Reset()
	r.Print(&out)
	if r.FreshBase.Rate != 0 || !strings.Contains(out.String(), "the fresh crawl after the run knew 600000 URLs when it stopped, short of 2 million: no second baseline") ||
		strings.Contains(out.String(), "against the fresh") {
		t.Errorf("a fresh crawl to %d URLs:\n%s", fresh[4].Known, out.String())
	}
	// Without FreshBaseline, no word of it.
	r = &ScaleReport{Config: ScaleConfig{Run: 800 * time.Second}, Samples: run}
	r.summarise()
	out.Reset()
	r.Print(&out)
	if strings.Contains(out.String(), "fresh") {
		t.Errorf("a run without the fresh crawl:\n%s", out.String())
	}
}

// A crawl that goes on from the store of a web it knows whole learns next
// to no URLs: the report gives no memory per URL, nor a projection, rather
// than megabytes of the collector's swings divided by a few URLs.
func TestScaleNoSlopesWithoutGrowth(t *testing.T) {
	var ss []ScaleSample
	for i := 1; i <= 24; i++ {
		ss = append(ss, ScaleSample{At: time.Duration(i) * 10 * time.Second, Known: 15_000_000 + int64(i)*10,
			Polls: int64(i) * 60000, RSS: 8<<30 + int64(i)*(50<<20), RSSAnon: 1<<30 + int64(i%3)*(100<<20)})
	}
	r := &ScaleReport{Config: ScaleConfig{Run: 4 * time.Minute}, Samples: ss}
	r.summarise()
	var out strings.Builder
	r.Print(&out)
	if r.Grew >= minGrowth || strings.Contains(out.String(), "projection") || !strings.Contains(out.String(), "not measured") {
		t.Errorf("a frontier that learnt %d URLs got slopes:\n%s", r.Grew, out.String())
	}
}

// The sample's CPU figures come from /proc: this process's grows as it
// works, and a process that is not there reads 0.
func TestProcessCPUSeconds(t *testing.T) {
	if _, err := os.Stat("/proc/self/stat"); err != nil {
		t.Skip("no /proc here")
	}
	before := processCPUSeconds("self")
	x := 0
	for end := time.Now().Add(150 * time.Millisecond); time.Now().Before(end); {
		x++
	}
	if after := processCPUSeconds("self"); after <= before {
		t.Errorf("CPU seconds %v after a busy loop (%d turns), %v before", after, x, before)
	}
	if got := processCPUSeconds("no-such-process"); got != 0 {
		t.Errorf("a process that is not there: %v CPU seconds", got)
	}
}

// The report gives what the fingerprint maps hold outside the heap, per
// URL on disk, and no such line when they hold nothing there.
func TestScaleOffHeapLine(t *testing.T) {
	report := func(offHeap int64) string {
		var ss []ScaleSample
		for i := 1; i <= 18; i++ {
			known := int64(i) * 200000
			ss = append(ss, ScaleSample{At: time.Duration(i) * 10 * time.Second, Known: known, Parked: known / 2,
				Polls: int64(i) * 100000, RSSAnon: 30<<20 + 40*known, HeapLive: 20<<20 + 5*known})
		}
		ss[len(ss)-1].OffHeap = offHeap
		r := &ScaleReport{Config: ScaleConfig{Run: 3 * time.Minute}, Samples: ss}
		r.summarise()
		var out strings.Builder
		r.Print(&out)
		return out.String()
	}
	// 1,800,000 parked at the end, 54 MB of maps: 31.5 bytes each.
	if out := report(54 << 20); !strings.Contains(out, "outside the heap: 54 MB of fingerprint maps at the end, 31.5 bytes per URL on disk") {
		t.Errorf("no off-heap line, or a wrong one:\n%s", out)
	}
	if out := report(0); strings.Contains(out, "outside the heap") {
		t.Errorf("an off-heap line for maps that hold nothing there:\n%s", out)
	}
}

// The early profile starts at the sample that reaches its URLs known, not
// before, and stops after its length with a profile written.
func TestEarlyProfileByURLsKnown(t *testing.T) {
	path := filepath.Join(t.TempDir(), "early.prof")
	var out strings.Builder
	p := &cpuProfile{path: path, known: 1000, length: time.Minute, progress: &out, what: "the baseline window"}
	p.at(10*time.Second, 999)
	if p.f != nil {
		t.Fatal("started before the URLs known")
	}
	p.at(20*time.Second, 1000)
	if p.f == nil {
		t.Fatalf("not started at the URLs known: %s", out.String())
	}
	p.at(70*time.Second, 5000)
	if p.f == nil {
		t.Fatal("stopped before its length")
	}
	p.at(80*time.Second, 6000)
	if p.f != nil {
		t.Fatal("still running after its length")
	}
	if fi, err := os.Stat(path); err != nil || fi.Size() == 0 {
		t.Fatalf("no profile written: %v", err)
	}
	if !strings.Contains(out.String(), "cpu profile of the baseline window written to") {
		t.Fatalf("progress: %q", out.String())
	}
	p.at(90*time.Second, 7000) // once only
	if p.f != nil {
		t.Fatal("started twice")
	}
}
