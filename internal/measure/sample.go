package measure

import (
	"context"
	"fmt"
	"io"
	"strings"
	"time"

	"github.com/cocrawl/cocrawl/internal/sampling"
	"github.com/cocrawl/cocrawl/internal/testweb"
	"github.com/cocrawl/cocrawl/webevents"
)

// sampled is one crawler's copy of a web, with its freshness sampled.
type sampled struct {
	name  string
	web   *testweb.Web
	store *webevents.MemStore
	fresh float64 // summed over the samples after the warm-up
	n     int
	// first and rest sum the freshness of the web's first host and of
	// the others, when byHost is set.
	byHost      bool
	first, rest float64
	// firstAt are the first host's samples and when they were taken.
	firstAt []timedShare
}

type timedShare struct {
	at    time.Time
	share float64
}

// firstMeanFrom is the first host's mean freshness over the samples
// taken from t on.
func (s *sampled) firstMeanFrom(t time.Time) float64 {
	sum, n := 0.0, 0
	for _, x := range s.firstAt {
		if !x.at.Before(t) {
			sum += x.share
			n++
		}
	}
	return sum / float64(max(n, 1))
}

func (s *sampled) mean() float64 { return s.fresh / float64(max(s.n, 1)) }

// firstMean and restMean are the first host's and the others' means.
func (s *sampled) firstMean() float64 { return s.first / float64(max(s.n, 1)) }
func (s *sampled) restMean() float64  { return s.rest / float64(max(s.n, 1)) }

// sampleFreshness samples every arm's freshness (freshShare) about each 250 ms
// until warmup+measure has passed, summing the samples after the warm-up;
// atWarmup runs once when the warm-up ends, and onTick (when not nil) at
// every sample, warm-up included. A line of progress every 30 s.
func sampleFreshness(ctx context.Context, arms []*sampled, warmup, measure time.Duration, progress io.Writer, atWarmup func(), onTick func(time.Time)) error {
	start := time.Now()
	tick := sampling.NewTicker(250*time.Millisecond, uint64(start.UnixNano())) // at random phases (package sampling)
	defer tick.Stop()
	lastNote, measuring := start, false
	for {
		var now time.Time
		select {
		case <-ctx.Done():
			return ctx.Err()
		case now = <-tick.C:
		}
		el := now.Sub(start)
		if onTick != nil {
			onTick(now)
		}
		if !measuring && el >= warmup {
			measuring = true
			atWarmup()
		}
		if measuring {
			for _, a := range arms {
				a.fresh += freshShare(a.web, a.store)
				if a.byHost {
					f, r := freshFirstHost(a.web, a.store)
					a.first += f
					a.rest += r
					a.firstAt = append(a.firstAt, timedShare{now, f})
				}
				a.n++
			}
		}
		if progress != nil && now.Sub(lastNote) >= 30*time.Second {
			lastNote = now
			var parts []string
			for _, a := range arms {
				parts = append(parts, fmt.Sprintf("%s %.3f", a.name, freshShare(a.web, a.store)))
			}
			fmt.Fprintf(progress, "%4.0fs  fresh now: %s\n", el.Seconds(), strings.Join(parts, ", "))
		}
		if el >= warmup+measure {
			return nil
		}
	}
}

// freshFirstHost is freshShare of the web's first host's pages, and of
// the other hosts'.
func freshFirstHost(w *testweb.Web, store *webevents.MemStore) (first, rest float64) {
	truth := w.Truth()
	prefix := w.Hosts()[0].URL + "/"
	var n, fresh [2]int
	for u := range w.Rates() {
		i := 1
		if strings.HasPrefix(u, prefix) {
			i = 0
		}
		n[i]++
		if e, ok, err := store.Get(u); err == nil && ok && e.Stat != webevents.Delete && e.ETag == truth[u].ETag {
			fresh[i]++
		}
	}
	return float64(fresh[0]) / float64(max(n[0], 1)), float64(fresh[1]) / float64(max(n[1], 1))
}
