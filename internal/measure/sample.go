package measure

import (
	"context"
	"fmt"
	"io"
	"strings"
	"time"

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
}

func (s *sampled) mean() float64 { return s.fresh / float64(max(s.n, 1)) }

// sampleFreshness samples every arm's freshness (freshShare) each 250 ms
// until warmup+measure has passed, summing the samples after the warm-up;
// atWarmup runs once when the warm-up ends. A line of progress every 30 s.
func sampleFreshness(ctx context.Context, arms []*sampled, warmup, measure time.Duration, progress io.Writer, atWarmup func()) error {
	start := time.Now()
	tick := time.NewTicker(250 * time.Millisecond)
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
		if !measuring && el >= warmup {
			measuring = true
			atWarmup()
		}
		if measuring {
			for _, a := range arms {
				a.fresh += freshShare(a.web, a.store)
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
