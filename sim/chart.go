package sim

import (
	"strconv"

	"github.com/cocrawl/cocrawl/internal/chart"
)

// Chart and Series are the figures of an experiment, drawn by package
// internal/chart (shared with the demo).
type (
	Chart  = chart.Chart
	Series = chart.Series
)

func fmtNum(v float64) string { return strconv.FormatFloat(v, 'g', 6, 64) }
