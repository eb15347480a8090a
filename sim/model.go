package sim

import (
	"errors"
	"fmt"
	"math"
	"time"

	"github.com/cocrawl/cocrawl/peer/rho"
)

// Model holds the parameters of the simulated web and network (thesis
// section 6.1, with the values it leaves out chosen in sim/README.md).
type Model struct {
	Objects      int     // live web objects at the start (thesis: 1,000,000)
	Duration     float64 // simulated seconds (thesis: 180 days)
	CreatePerDay float64 // object creations per simulated day (thesis: 3,476)
	DeletePerDay float64 // object deletions per simulated day (thesis: 3,476)
	UpdateRate   float64 // updates per live object per second (lambda_U; not in the thesis: calibrated)
	// RateSpread gives objects their own update rates, log-uniform over
	// this many orders of magnitude with mean UpdateRate (so the web
	// changes as often in all); 0: every object at UpdateRate, as in the
	// thesis. ObjectRate says an object's rate.
	RateSpread float64
	// Undated: objects carry no date of their last change (live: a host
	// that sends no Last-Modified, or the response's time), so crawlers
	// that estimate change rates have only whether each poll found a
	// change (revisit.Rate's count form); false: the date, as the thesis.
	Undated bool

	NetworkBps float64 // the shared network (thesis: 1.5 Mbps)
	LinkBps    float64 // every crawler's link (thesis: 100 Kbps)
	Damping    float64 // slots of the network = Damping x NetworkBps / LinkBps (not in the thesis)
	Contention bool    // false: every transfer runs at full link speed

	ObjectBytes   float64 // mean bytes one poll transfers (1 s at 100 Kbps: "about one object per second")
	ObjectSpread  float64 // object sizes are uniform in ObjectBytes x [1-spread, 1+spread]
	RecordBytes   float64 // bytes of one web-event record in a merge (our .dat format: 162)
	MergeOverhead float64 // bytes of a merge besides its records: the robots.shr check and request

	SampleEvery float64 // simulated seconds between two samples of the freshness series
}

// Day is a simulated day in seconds.
const Day = 86400.0

// ThesisUpdateRate is lambda_U, calibrated so that the no-contention
// baseline's time-averaged freshness is 0.2 at thesis scale (figure 6.1);
// sim/README.md records the calibration run.
const ThesisUpdateRate = 4.9e-6

// Thesis returns the model at the thesis's scale (section 6.1).
func Thesis() Model {
	return Model{
		Objects:       1_000_000,
		Duration:      180 * Day,
		CreatePerDay:  3476,
		DeletePerDay:  3476,
		UpdateRate:    ThesisUpdateRate,
		NetworkBps:    1.5e6,
		LinkBps:       1e5,
		Damping:       1,
		Contention:    true,
		ObjectBytes:   12500,
		ObjectSpread:  0.5,
		RecordBytes:   16,
		MergeOverhead: 12500,
		SampleEvery:   Day,
	}
}

// Scaled shrinks the model by k in (0,1]: k times the objects and the
// duration, the update rate divided by k. What stays: a crawler's cycle
// through the web in simulated time over the duration (the number of
// cycles), updates per object per cycle, the share of the web created and
// deleted per cycle, web-events per second and the cost of every transfer.
// What does not: a crawler visits each of its N-1 peers fewer times per
// cycle, so large N at small k understates merging (sim/README.md).
func (m Model) Scaled(k float64) Model {
	m.Objects = int(math.Round(float64(m.Objects) * k))
	m.Duration *= k
	m.UpdateRate /= k
	m.SampleEvery *= k
	return m
}

// Scales names the presets of --scale.
var Scales = map[string]float64{"thesis": 1, "medium": 0.1, "small": 0.01, "tiny": 0.001}

// Slots is the number of transfers the network carries at full link speed.
func (m Model) Slots() float64 { return m.Damping * m.NetworkBps / m.LinkBps }

// ErrModel is wrapped by Validate errors.
var ErrModel = errors.New("sim: bad model")

// Validate reports a parameter out of range.
func (m Model) Validate() error {
	switch {
	case m.Objects < 1:
		return fmt.Errorf("%w: objects %d < 1", ErrModel, m.Objects)
	case m.Objects > 50_000_000:
		return fmt.Errorf("%w: objects %d > 50,000,000", ErrModel, m.Objects)
	case !(m.Duration > 0) || math.IsInf(m.Duration, 0):
		return fmt.Errorf("%w: duration must be positive", ErrModel)
	case m.CreatePerDay < 0 || m.DeletePerDay < 0 || m.UpdateRate < 0:
		return fmt.Errorf("%w: rates cannot be negative", ErrModel)
	case !(m.NetworkBps > 0) || !(m.LinkBps > 0) || !(m.Damping > 0):
		return fmt.Errorf("%w: bandwidths and damping must be positive", ErrModel)
	case !(m.ObjectBytes > 0) || m.ObjectSpread < 0 || m.ObjectSpread >= 1:
		return fmt.Errorf("%w: object bytes must be positive, spread in [0,1)", ErrModel)
	case m.RecordBytes < 0 || !(m.MergeOverhead > 0):
		return fmt.Errorf("%w: record bytes cannot be negative and a merge's overhead must be positive", ErrModel)
	case m.RateSpread < 0 || m.RateSpread > 6:
		return fmt.Errorf("%w: rate spread must be in [0, 6] orders of magnitude", ErrModel)
	case !(m.SampleEvery > 0):
		return fmt.Errorf("%w: sample interval must be positive", ErrModel)
	}
	return nil
}

// ObjectRate is object o's update rate (RateSpread), the same in every
// run of the model: a hash of o places it in the spread.
func (m Model) ObjectRate(o uint32) float64 {
	if m.RateSpread == 0 {
		return m.UpdateRate
	}
	u := float64(splitmix64(uint64(o))>>11) / (1 << 53)
	return m.rateCentre() * math.Pow(10, m.RateSpread*(u-0.5))
}

// rateCentre is the geometric centre of the rates: the mean of
// 10^(s·(u−½)) over u uniform is (10^(s/2) − 10^(−s/2)) / (s·ln 10).
func (m Model) rateCentre() float64 {
	s := m.RateSpread
	return m.UpdateRate * s * math.Ln10 / (math.Pow(10, s/2) - math.Pow(10, -s/2))
}

// maxObjectRate bounds ObjectRate: the rate of candidate updates that
// webEvent thins to each object's own.
func (m Model) maxObjectRate() float64 {
	if m.RateSpread == 0 {
		return m.UpdateRate
	}
	return m.rateCentre() * math.Pow(10, m.RateSpread/2)
}

func splitmix64(x uint64) uint64 {
	x += 0x9e3779b97f4a7c15
	x = (x ^ (x >> 30)) * 0xbf58476d1ce4e5b9
	x = (x ^ (x >> 27)) * 0x94d049bb133111eb
	return x ^ (x >> 31)
}

// maxSlots bounds the object slots a run allocates: the initial objects and
// the creations expected over the run with a margin of ten deviations.
func (m Model) maxSlots() int {
	c := m.CreatePerDay * m.Duration / Day
	return m.Objects + int(math.Ceil(c+10*math.Sqrt(c)+16))
}

// SeekPeriod is the probe period the simulator gives the seek controller:
// SeekPeriodShare times the mean time between updates of an object. Shorter
// probes see the gain of merging more at once (peers' discoveries arrive
// sooner) but its cost (fewer polls, so fewer discoveries) only as the
// cache ages, and so lean towards merging; at four times, the lean was
// below the noise in the controllers experiment (sim/README.md). The
// period depends on the web, not on the community: an operator of a live
// peer sets it from the change intervals its polls see (seek:PERIOD).
func (m Model) SeekPeriod() time.Duration {
	if m.UpdateRate <= 0 {
		return rho.DefaultSeekPeriod
	}
	// A rate as small as --update-rate allows would overflow a Duration:
	// a period longer than the run is as good as none anyway.
	secs := min(SeekPeriodShare/m.UpdateRate, max(m.Duration, 1))
	return time.Duration(secs * 1e9).Round(time.Second)
}

// SeekPeriodShare is SeekPeriod in mean times between updates of an object.
const SeekPeriodShare = 4.0
