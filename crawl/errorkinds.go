package crawl

import (
	"context"
	"errors"

	"github.com/cocrawl/cocrawl/internal/netguard"
)

func errorKind(r *Result) string {
	switch {
	case r.Err != nil && errors.Is(r.Err, ErrTooSlow):
		return "slow"
	case r.Err != nil && (errors.Is(r.Err, context.DeadlineExceeded) || netguard.IsTimeout(r.Err)):
		return "timeout"
	case r.Err != nil:
		return "network"
	case r.Status == 429:
		return "429"
	case r.Status >= 500:
		return "5xx"
	case r.Status >= 400 && r.Status != 404 && r.Status != 410:
		return "4xx"
	}
	return ""
}
