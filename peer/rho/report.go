package rho

import (
	"errors"
	"fmt"
	"math"
	"strconv"
	"strings"
	"time"
)

// Report is what a Seek controller publishes about its probes, for its
// peers to pool with their own counts (the robots.shr field "probe"). The
// counts are of polls that found the cache fresh: the same measure every
// Seek peer takes, so N peers' counts shrink the noise of a probe by the
// square root of N.
type Report struct {
	Period    time.Duration // the probe period; zero: no report
	Centre    float64       // the rho the probes are centred on
	Probe     int64         // the current probe's index on the shared clock
	Polls     int           // polls counted so far in Probe
	Fresh     int           // of which found the cache fresh
	PrevPolls int           // polls counted in Probe-1; zero if not compared
	PrevFresh int
}

// Reporter is a controller that publishes a Report.
type Reporter interface {
	Report() (Report, bool)
}

// ErrBadReport is wrapped by ParseReport errors.
var ErrBadReport = errors.New("rho: bad probe report")

// maxReportCount bounds a reported count: far above what a probe of a
// real peer counts, low enough that sums of thousands of them stay exact.
const maxReportCount = 1 << 30

// String is the report as the robots.shr field "probe" carries it:
// space-separated key=value pairs, the period in whole seconds.
func (r Report) String() string {
	return fmt.Sprintf("period=%d centre=%s k=%d polls=%d fresh=%d prev-polls=%d prev-fresh=%d",
		int64(r.Period/time.Second), strconv.FormatFloat(r.Centre, 'f', 6, 64), r.Probe, r.Polls, r.Fresh, r.PrevPolls, r.PrevFresh)
}

// ParseReport reads a report written by String. Unknown keys are ignored,
// so that later versions can add some; a missing period, centre or k, a
// count out of range, or fresh above polls is an error.
func ParseReport(v string) (Report, error) {
	var r Report
	seen := map[string]bool{}
	fields := strings.Fields(v)
	if len(fields) > 32 {
		return Report{}, fmt.Errorf("%w: %d fields, at most 32", ErrBadReport, len(fields))
	}
	for _, f := range fields {
		key, val, ok := strings.Cut(f, "=")
		if !ok {
			return Report{}, fmt.Errorf("%w: %q is not key=value", ErrBadReport, f)
		}
		if seen[key] {
			return Report{}, fmt.Errorf("%w: %s repeated", ErrBadReport, key)
		}
		seen[key] = true
		count := func(dst *int) error {
			n, err := strconv.Atoi(val)
			if err != nil || n < 0 || n > maxReportCount {
				return fmt.Errorf("%w: %s=%q is not a count", ErrBadReport, key, val)
			}
			*dst = n
			return nil
		}
		var err error
		switch key {
		case "period":
			n, perr := strconv.ParseInt(val, 10, 64)
			if perr != nil || n <= 0 || n > int64(math.MaxInt64/time.Second) {
				err = fmt.Errorf("%w: period=%q is not a positive number of seconds", ErrBadReport, val)
			}
			r.Period = time.Duration(n) * time.Second
		case "centre":
			c, perr := strconv.ParseFloat(val, 64)
			if perr != nil || !(c >= 0 && c <= 1) {
				err = fmt.Errorf("%w: centre=%q is not a number in [0,1]", ErrBadReport, val)
			}
			r.Centre = c
		case "k":
			k, perr := strconv.ParseInt(val, 10, 64)
			if perr != nil || k < 0 {
				err = fmt.Errorf("%w: k=%q is not a probe index", ErrBadReport, val)
			}
			r.Probe = k
		case "polls":
			err = count(&r.Polls)
		case "fresh":
			err = count(&r.Fresh)
		case "prev-polls":
			err = count(&r.PrevPolls)
		case "prev-fresh":
			err = count(&r.PrevFresh)
		}
		if err != nil {
			return Report{}, err
		}
	}
	for _, k := range [...]string{"period", "centre", "k"} {
		if !seen[k] {
			return Report{}, fmt.Errorf("%w: no %s", ErrBadReport, k)
		}
	}
	if r.Fresh > r.Polls || r.PrevFresh > r.PrevPolls {
		return Report{}, fmt.Errorf("%w: more fresh polls than polls", ErrBadReport)
	}
	return r, nil
}
