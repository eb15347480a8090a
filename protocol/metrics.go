package protocol

import (
	"errors"
	"strconv"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/cocrawl/cocrawl/webevents"
)

// Metrics counts what one peer's share server and merge client do. Each
// peer makes its own with NewMetrics and registers it (it is a
// prometheus.Collector), so peers in one process count apart. Labels take
// a small fixed set of values so a hostile peer cannot blow up their
// cardinality. A nil *Metrics counts nothing.
type Metrics struct {
	badInput      *prometheus.CounterVec
	served        *prometheus.CounterVec
	servedBytes   prometheus.Counter
	fetches       *prometheus.CounterVec
	mergeBytes    prometheus.Counter
	mergeEvents   *prometheus.CounterVec
	filtered      *prometheus.CounterVec
	streamSent    prometheus.Counter
	streamDrops   *prometheus.CounterVec
	websubChanges prometheus.Counter
}

// NewMetrics returns zeroed metrics.
func NewMetrics() *Metrics {
	vec := func(name, help string, labels ...string) *prometheus.CounterVec {
		return prometheus.NewCounterVec(prometheus.CounterOpts{Name: name, Help: help}, labels)
	}
	one := func(name, help string) prometheus.Counter {
		return prometheus.NewCounter(prometheus.CounterOpts{Name: name, Help: help})
	}
	return &Metrics{
		badInput: vec("cocrawl_protocol_bad_input_total",
			"Records or files rejected while decoding, by file kind (dat, shr) and reason.", "file", "reason"),
		served: vec("cocrawl_share_requests_total",
			"Requests to the share repository, by resource (shr, dat, robots, other) and status code.", "resource", "code"),
		servedBytes: one("cocrawl_share_sent_bytes_total", "Day-file bytes sent, before compression."),
		fetches: vec("cocrawl_merge_fetches_total",
			"Day-file and robots.shr fetches of the merge client, by outcome.", "outcome"),
		mergeBytes: one("cocrawl_merge_received_bytes_total", "Bytes received by the merge client, as they came over the wire."),
		mergeEvents: vec("cocrawl_merge_events_total",
			"Merged records by resolution outcome (accept, restate, ignore, violation).", "action"),
		filtered: vec("cocrawl_share_filtered_total",
			"Filtered day files and change lists opened, by how: origin (from the store's origin index alone), prefix (a read of one origin's records), day (a read of the whole day, begun before the index).", "how"),
		streamSent: one("cocrawl_share_stream_events_total", "Web-events sent on live streams (/events)."),
		streamDrops: vec("cocrawl_share_stream_refused_total",
			"Live streams and WebSub subscriptions refused or dropped, by reason: limit (too many subscriptions), slow (a write waited past the write timeout, or deliveries failed).", "reason"),
		websubChanges: one("cocrawl_share_websub_changes_total", "Changes delivered to WebSub subscribers."),
	}
}

func (m *Metrics) collectors() []prometheus.Collector {
	return []prometheus.Collector{m.badInput, m.served, m.servedBytes, m.fetches, m.mergeBytes, m.mergeEvents, m.filtered, m.streamSent, m.streamDrops, m.websubChanges}
}

// Describe implements prometheus.Collector.
func (m *Metrics) Describe(ch chan<- *prometheus.Desc) {
	for _, c := range m.collectors() {
		c.Describe(ch)
	}
}

// Collect implements prometheus.Collector.
func (m *Metrics) Collect(ch chan<- prometheus.Metric) {
	for _, c := range m.collectors() {
		c.Collect(ch)
	}
}

func (m *Metrics) fetch(outcome string) {
	if m != nil {
		m.fetches.WithLabelValues(outcome).Inc()
	}
}

func (m *Metrics) bad(file string, err error) {
	if m != nil {
		m.badInput.WithLabelValues(file, reason(err)).Inc()
	}
}

func (m *Metrics) received(n int64) {
	if m != nil {
		m.mergeBytes.Add(float64(n))
	}
}

func (m *Metrics) request(resource string, code int) {
	if m != nil {
		m.served.WithLabelValues(resource, strconv.Itoa(code)).Inc()
	}
}

func (m *Metrics) sent(n int64) {
	if m != nil {
		m.servedBytes.Add(float64(n))
	}
}

func (m *Metrics) merged(r webevents.MergeResult) {
	if m != nil {
		m.mergeEvents.WithLabelValues("accept").Add(float64(r.Accepted))
		m.mergeEvents.WithLabelValues("restate").Add(float64(r.Restated))
		m.mergeEvents.WithLabelValues("ignore").Add(float64(r.Ignored))
		m.mergeEvents.WithLabelValues("violation").Add(float64(len(r.Polls)))
	}
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

func (m *Metrics) filter(how string) {
	if m != nil {
		m.filtered.WithLabelValues(how).Inc()
	}
}

func (m *Metrics) streamEvent() {
	if m != nil {
		m.streamSent.Inc()
	}
}

func (m *Metrics) streamDrop(reason string) {
	if m != nil {
		m.streamDrops.WithLabelValues(reason).Inc()
	}
}

func (m *Metrics) websubSent(n int) {
	if m != nil {
		m.websubChanges.Add(float64(n))
	}
}
