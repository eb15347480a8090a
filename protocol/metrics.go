package protocol

import (
	"errors"

	"github.com/cocrawl/cocrawl/webevents"
	"github.com/prometheus/client_golang/prometheus"
)

// Metrics of the protocol package. A peer registers them with Collectors;
// labels take a small fixed set of values so a hostile peer cannot blow up
// their cardinality.
var (
	metricBadInput = prometheus.NewCounterVec(prometheus.CounterOpts{
		Name: "cocrawl_protocol_bad_input_total",
		Help: "Records or files rejected while decoding, by file kind (dat, shr) and reason.",
	}, []string{"file", "reason"})
	metricServed = prometheus.NewCounterVec(prometheus.CounterOpts{
		Name: "cocrawl_share_requests_total",
		Help: "Requests to the share repository, by resource (shr, dat, robots, other) and status code.",
	}, []string{"resource", "code"})
	metricServedBytes = prometheus.NewCounter(prometheus.CounterOpts{
		Name: "cocrawl_share_sent_bytes_total",
		Help: "Day-file bytes sent, before compression.",
	})
	metricFetches = prometheus.NewCounterVec(prometheus.CounterOpts{
		Name: "cocrawl_merge_fetches_total",
		Help: "Day-file and robots.shr fetches of the merge client, by outcome.",
	}, []string{"outcome"})
	metricMergeBytes = prometheus.NewCounter(prometheus.CounterOpts{
		Name: "cocrawl_merge_received_bytes_total",
		Help: "Bytes received by the merge client, as they came over the wire.",
	})
	metricMergeEvents = prometheus.NewCounterVec(prometheus.CounterOpts{
		Name: "cocrawl_merge_events_total",
		Help: "Merged records by resolution outcome (accept, restate, ignore, violation).",
	}, []string{"action"})
)

// Collectors returns the package's metrics for registration.
func Collectors() []prometheus.Collector {
	return []prometheus.Collector{metricBadInput, metricServed, metricServedBytes, metricFetches, metricMergeBytes, metricMergeEvents}
}

// reason maps an error to a bounded metric label.
func reason(err error) string {
	for _, r := range []struct {
		err   error
		label string
	}{
		{ErrLineTooLong, "line_too_long"}, {ErrTooManyFields, "too_many_fields"},
		{ErrTooManyRecords, "too_many_records"}, {ErrTooLarge, "too_large"},
		{ErrSyntax, "syntax"}, {ErrMissingField, "missing_field"},
		{ErrDuplicateField, "duplicate_field"}, {ErrBadNumber, "bad_number"},
		{ErrUnsupportedVersion, "version"}, {ErrBinary, "binary"},
	} {
		if errors.Is(err, r.err) {
			return r.label
		}
	}
	return classifyEventError(err)
}

func classifyEventError(err error) string {
	for _, r := range []struct {
		err   error
		label string
	}{
		{webevents.ErrBadStat, "bad_stat"}, {webevents.ErrBadURL, "bad_url"},
		{webevents.ErrBadField, "bad_field"}, {webevents.ErrDateTooOld, "date_too_old"},
		{webevents.ErrDateFuture, "date_future"}, {webevents.ErrLMDAfterLPD, "lmd_after_lpd"},
	} {
		if errors.Is(err, r.err) {
			return r.label
		}
	}
	return "other"
}
