package crawl

import (
	"math"
	"math/rand/v2"
	"sync"
	"time"

	"github.com/cocrawl/cocrawl/crawl/fingerprint"
	"github.com/cocrawl/cocrawl/webevents"
)

// Self-measurement. A crawler's model of its own freshness (the revisit
// plan's expected freshness, RateStats) rests on beliefs: that its change
// rates are right, and that a peer's record it counted as a visit is still
// true. Neither is checked by the polls the plan makes, which go where the
// plan says. So a share of the polls (Config.SampleShare) goes to a
// uniform random sample of every URL the crawler knows, whatever the
// source of what it holds: at a time the schedule did not choose, the
// poll says whether the state held was still the page's. The share of
// those polls that found it current is an unbiased estimate of the
// crawler's freshness (coverage-weighted: a URL known but held by nobody
// counts as stale), with a binomial confidence interval.
//
// Samples come with polls, so where the poll rate varies (a peer's rho,
// a host backing off, the budget) they would come more often at some
// times than others, and the plain share would weigh those times more.
// Each verdict is weighed by the mean time between polls when it was
// drawn (an average over the last polls), the inverse of its chance to be
// drawn at that time (Horvitz and Thompson), which makes the estimate a
// time average again; the interval uses the effective number of samples
// (Kish: (Σw)²/Σw²).
//
// The frame is the live URLs known now. A sample drawn when the crawler
// knew fewer could not fall on a URL found since, which was held by
// nobody then, so stale: its verdict counts for the share of today's
// frame that was known then (L then / L now). Without that, samples from
// a crawl's first minutes, drawn among the few URLs found, would stand
// for the whole web while most of it was not yet held at all. L is the
// URLs known, N, less those gone: a deleted URL stays known (its DELETE
// is held, and a link may name it again), so on a web whose pages come
// and go N grows while L does not, and N then / N now read every older
// verdict as standing for less and less of the web (peers on pages of
// which a tenth were replaced each cycle measured 0.373 where they held
// 0.659). The share gone, d, is what the samples find: an average over
// the last draws that reached an outcome of those that found a 404 or 410
// (a soft 404 taken as one), and L = N (1 - d). It lags where the share
// gone rises by the minute, as on that web (0.552 and 0.580 against
// 0.672 and 0.685 with it); where pages die at the real web's pace it
// hardly moves over a window.
//
// A sampled poll asks for the page itself (no conditional request) and
// goes ahead of the host's other due URLs, and hints cannot put it off,
// as a spot-check (Recheck); it is a poll like any other for the store
// and the schedule. It is judged against what was held just before it:
//
//   - current: a 200 whose page Detect finds unchanged from the held state;
//   - stale: a change, a page held by nobody, a page held as deleted;
//   - no verdict: a 404 or 410 (freshness is a share of the live web, as
//     the design defines it), an error, a 5xx or 429, another status, a
//     URL robots.txt excludes.

// DefaultSampleShare is the share of polls spent on samples by default: at
// 20 polls a second, a sample every 1.7 s, 400 samples (about ±5%) in 11
// minutes.
const DefaultSampleShare = 0.03

// sampleWindow is how many of the latest verdicts the estimate uses: old
// enough to be tight (±5% at worst), recent enough to follow a change.
const sampleWindow = 400

// SelfMeasure is the crawler's freshness as its samples measured it.
type SelfMeasure struct {
	// Samples and Current count the verdicts in the window (the latest
	// sampleWindow); Freshness is the weighted share of them that found
	// the state current (Current/Samples when the poll rate and the URLs
	// known were steady),
	// and Low and High its 95% Wilson interval for the effective number
	// of samples. Zero Samples: nothing measured yet.
	Samples   int     `json:"samples"`
	Current   int     `json:"current"`
	Effective float64 `json:"effective_samples"`
	Freshness float64 `json:"freshness"`
	Low       float64 `json:"low"`
	High      float64 `json:"high"`
	// Since the start: samples drawn, judged, and those that reached no
	// verdict (the rest are pending).
	Drawn     int64 `json:"drawn"`
	Judged    int64 `json:"judged"`
	NoVerdict int64 `json:"no_verdict"`
	// WindowS is the time the verdicts in the window span, in seconds.
	WindowS float64 `json:"window_s"`
	// Gone is the share of the URLs known that the latest draws found
	// gone (a 404 or 410, a soft 404 taken as one): what the frame leaves
	// out, and how much of what the crawler knows has died.
	Gone float64 `json:"gone_share"`
}

// Disagrees says whether a believed freshness lies outside the measured
// interval, once the sample is large enough to say (30 verdicts).
func (m SelfMeasure) Disagrees(believed float64) bool {
	return m.Samples >= 30 && (believed < m.Low || believed > m.High)
}

// selfCheck keeps the verdicts. Its own lock: read by the status while
// polls are judged.
type selfCheck struct {
	share float64 // of polls
	owed  float64 // samples owed by the polls so far (c.mu)
	rng   *rand.Rand

	// gap is the mean time between polls (seconds, an exponential
	// average over about 20 polls), lastPoll the last poll's end (c.mu).
	gap      float64
	lastPoll time.Time

	mu         sync.Mutex
	verdicts   [sampleWindow]bool
	weights    [sampleWindow]float64
	known      [sampleWindow]float64 // live URLs known when the verdict was given (liveKnown)
	knownNow   int
	gone       float64 // of the draws that reached an outcome lately, the share found gone (404 or 410), before goneWeight
	goneWeight float64 // what the average's start at 0 leaves out (1 - (1 - 1/goneMemory)^outcomes)
	at         [sampleWindow]time.Time
	next, n    int
	drawn      int64
	judged     int64
	noVerdict  int64
}

func newSelfCheck(share float64) *selfCheck {
	return &selfCheck{share: share, rng: rand.New(rand.NewPCG(rand.Uint64(), rand.Uint64()))}
}

// polledForSample notes one poll (not a sample) and draws the samples
// it owes.
// c.mu held.
func (c *Crawler) polledForSample(now time.Time) {
	s := c.self
	if s.share <= 0 || len(c.f.all)+c.f.parkedCount() == 0 {
		return
	}
	if !s.lastPoll.IsZero() && now.After(s.lastPoll) {
		g := now.Sub(s.lastPoll).Seconds()
		if s.gap == 0 {
			s.gap = g
		} else {
			s.gap += (g - s.gap) / 20
		}
	}
	s.lastPoll = now
	s.mu.Lock()
	s.knownNow = c.f.size()
	s.mu.Unlock()
	s.owed += s.share
	for s.owed >= 1 {
		s.owed--
		c.drawSample()
	}
}

// drawSample marks a uniform random URL of the frontier for a sampled
// poll, ahead of its host's other URLs. A URL drawn from the backlog was
// never polled: its verdict, stale, needs no request. c.mu held.
func (c *Crawler) drawSample() {
	i := c.self.rng.IntN(c.f.size())
	var st *URLState
	switch parked := c.f.parkedCount(); {
	case i < len(c.f.all):
		st = c.f.all[i]
	case i < len(c.f.all)+parked:
		// A parked URL comes back into memory to be sampled.
		if st = c.f.drawParked(c.self.rng); st == nil {
			c.self.mu.Lock()
			c.self.drawn++
			c.self.mu.Unlock()
			c.noVerdict() // the store failed, or lost it
			return
		}
	default:
		c.self.mu.Lock()
		c.self.drawn++
		c.self.mu.Unlock()
		c.recordVerdict(false, float32(max(c.self.gap, 1e-3)), time.Now())
		return
	}
	s := c.self
	s.mu.Lock()
	s.drawn++
	s.mu.Unlock()
	if st.sampling {
		// Drawn again before its poll: one poll judges it once. Counting it
		// as no verdict keeps the draw uniform (a repeat is not re-drawn).
		c.noVerdict()
		return
	}
	st.sampling = true
	st.sampleWeight = float32(max(s.gap, 1e-3))
	h := c.f.host(hostKey(st.URL))
	if st.Gone {
		// Held as deleted: the sample checks that it still is.
		st.Gone = false
		st.Due = time.Unix(0, 0)
		c.f.enqueue(h, st)
	} else {
		// Before every due URL: the time of the look is the draw's, not
		// the schedule's. A URL being polled just carries it.
		c.f.setDue(st, time.Unix(0, 0))
	}
	c.save(st)
	c.signal()
}

func (c *Crawler) noVerdict() {
	c.self.mu.Lock()
	c.self.noVerdict++
	c.self.mu.Unlock()
}

// goneMemory is how many outcomes the share gone averages over, about:
// the window's half, so it follows the web as the verdicts do.
const goneMemory = sampleWindow / 2

// outcome adds a draw's outcome to the share gone; s.mu held.
func (s *selfCheck) outcome(gone bool) {
	x := 0.0
	if gone {
		x = 1
	}
	s.gone += (x - s.gone) / goneMemory
	s.goneWeight += (1 - s.goneWeight) / goneMemory
}

// goneShare is the share gone; s.mu held. The average starts at 0, so
// it is divided by the weight its outcomes have: in its first outcomes it
// is their plain mean, where a run of a few minutes gives a peer a few
// dozen.
func (s *selfCheck) goneShare() float64 {
	if s.goneWeight <= 0 {
		return 0
	}
	return s.gone / s.goneWeight
}

// liveKnown is the live URLs among known, by the share gone; s.mu held.
func (s *selfCheck) liveKnown(known int) float64 {
	return float64(known) * (1 - min(s.goneShare(), 0.99))
}

// judgeSample records the verdict of a sampled poll: prev is what was
// held before it, changed whether Detect found an event, kind its error
// kind. c.mu held.
func (c *Crawler) judgeSample(prev *webevents.Event, changed bool, res *Result, kind string, weight float32, at time.Time) {
	if kind == "" && (res.Status == 404 || res.Status == 410) {
		// Gone: no verdict (freshness is a share of the live web), but
		// one more draw that fell outside the live frame.
		c.self.mu.Lock()
		c.self.noVerdict++
		c.self.outcome(true)
		c.self.mu.Unlock()
		return
	}
	if kind != "" || (res.Status != 200 && res.Status != 304) {
		c.noVerdict()
		return
	}
	current := prev != nil && prev.Stat != webevents.Delete && sameVersion(prev, res, changed)
	c.recordVerdict(current, weight, at)
}

// recordVerdict keeps one sample's verdict. c.mu held.
func (c *Crawler) recordVerdict(current bool, weight float32, at time.Time) {
	s := c.self
	s.mu.Lock()
	s.judged++
	s.outcome(false)
	s.verdicts[s.next], s.at[s.next], s.weights[s.next] = current, at, float64(max(weight, 1e-3))
	s.known[s.next], s.knownNow = s.liveKnown(c.f.size()), c.f.size()
	s.next = (s.next + 1) % sampleWindow
	s.n = min(s.n+1, sampleWindow)
	s.mu.Unlock()
}

// SelfMeasure returns the freshness the crawler's samples measured.
func (c *Crawler) SelfMeasure() SelfMeasure {
	s := c.self
	s.mu.Lock()
	defer s.mu.Unlock()
	m := SelfMeasure{Samples: s.n, Drawn: s.drawn, Judged: s.judged, NoVerdict: s.noVerdict, Gone: s.goneShare()}
	if s.n == 0 {
		return m
	}
	oldest := s.at[(s.next-s.n+sampleWindow)%sampleWindow]
	newest := s.at[(s.next-1+sampleWindow)%sampleWindow]
	m.WindowS = newest.Sub(oldest).Seconds()
	var sw, sw2, hit float64
	for i := range s.n {
		j := (s.next - 1 - i + sampleWindow) % sampleWindow
		w := s.weights[j]
		sw += w
		sw2 += w * w
		if s.verdicts[j] {
			m.Current++
			hit += w * min(1, s.known[j]/max(s.liveKnown(s.knownNow), 1))
		}
	}
	// The interval treats the scaled verdicts as binomial: their variance
	// is at most that of 0/1 verdicts of the same mean, so it is wide
	// enough.
	m.Freshness = hit / sw
	m.Effective = sw * sw / sw2
	m.Low, m.High = WilsonShare(m.Freshness, m.Effective)
	return m
}

// Wilson is the 95% Wilson score interval of a binomial proportion of k
// successes in n trials: sound at 0 and n and for small n, where the
// normal approximation is not.
func Wilson(k, n int) (lo, hi float64) {
	if n <= 0 {
		return 0, 1
	}
	return WilsonShare(float64(k)/float64(n), float64(n))
}

// WilsonShare is Wilson for a share p of n (effective) trials.
func WilsonShare(p, nf float64) (lo, hi float64) {
	if nf <= 0 {
		return 0, 1
	}
	const z = 1.959964
	d := 1 + z*z/nf
	c := (p + z*z/(2*nf)) / d
	w := z * math.Sqrt(p*(1-p)/nf+z*z/(4*nf*nf)) / d
	return max(0, c-w), min(1, c+w)
}

// sameVersion says whether a sampled poll found the version held: by the
// content digest when both sides have one (the most direct evidence), else
// by the ETag, else as Detect judged (changed). Not by Detect alone: a
// Last-Modified has whole seconds, so two versions within one second look
// alike to it, and a page that stamps every response with the time looks
// changed at every poll.
func sameVersion(prev *webevents.Event, res *Result, changed bool) bool {
	_, ok := fingerprint.Parse(prev.Fingerprint)
	switch {
	case ok && res.HasFingerprint:
		return !changed // Detect judged by the text, as the host's noise allows
	case prev.Digest != "" && res.Digest != "":
		return prev.Digest == res.Digest
	case prev.ETag != "" && res.ETag != "":
		return prev.ETag == res.ETag
	}
	return !changed
}
