package webevents

import (
	"context"
	"time"
)

// Retention: how many days of logs a store keeps, today included, and how
// long a deleted URL's state is kept. One home for the rule that a peer
// and a publisher both apply.
const (
	// DefaultKeepDays is what a store keeps unless told otherwise.
	DefaultKeepDays = 30
	// MinKeepDays is the fewest it keeps: a first merge reaches back 7
	// days before today.
	MinKeepDays = 8
)

// KeepFrom is the first day a store keeping keepDays days keeps at now
// (keepDays 0 means DefaultKeepDays; fewer than MinKeepDays, MinKeepDays).
func KeepFrom(now time.Time, keepDays int) int64 {
	if keepDays <= 0 {
		keepDays = DefaultKeepDays
	}
	return Today(now) - int64(max(keepDays, MinKeepDays)) + 1
}

// Retain applies a store's retention (Expire from KeepFrom) at once and
// then every interval until ctx ends, handing each outcome to after.
func Retain(ctx context.Context, s Store, keepDays int, every time.Duration, after func(from int64, x Expired, err error)) {
	t := time.NewTicker(every)
	defer t.Stop()
	for {
		from := KeepFrom(time.Now(), keepDays)
		x, err := s.Expire(from)
		after(from, x, err)
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
	}
}
