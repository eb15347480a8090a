package peer

import (
	"encoding/json"
	"math"
	"net/http"
	"sort"
	"time"

	lpeer "github.com/libp2p/go-libp2p/core/peer"
	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/collectors"
	"github.com/prometheus/client_golang/prometheus/promhttp"

	"github.com/cocrawl/cocrawl/crawl"
	"github.com/cocrawl/cocrawl/peer/p2p"
)

// Status is what /api/status returns.
type Status struct {
	Crawler    string    `json:"crawler"`
	Mode       string    `json:"mode,omitempty"`
	Controller string    `json:"controller"`
	Share      bool      `json:"share"`
	Rho        float64   `json:"rho"`
	Started    time.Time `json:"started"`
	UptimeS    float64   `json:"uptime_s"`

	Polls          int64   `json:"polls"`
	Merges         int64   `json:"merges"`
	PollEvents     int64   `json:"poll_events"`
	MergeEvents    int64   `json:"merge_events"`
	EventsPerPoll  float64 `json:"events_per_poll"`
	EventsPerMerge float64 `json:"events_per_merge"`
	// Events by source (poll, merge), then kind (create, update, delete).
	Events map[string]map[string]int64 `json:"events"`
	// Operations by what ran (poll, merge), then what the slot drew: a
	// poll drawn as merge ran because no peer was due.
	Drawn          map[string]map[string]int64 `json:"drawn"`
	Idle           int64                       `json:"idle"`
	Bytes          map[string]int64            `json:"bytes"`
	NetworkSeconds map[string]float64          `json:"network_seconds"`
	Errors         map[string]map[string]int64 `json:"errors"`
	// Seconds spent at each value of rho, rounded to 0.05.
	TimeAtRho map[string]float64 `json:"time_at_rho"`

	// libp2p: the peer's ID, its addresses ending in /p2p/<id>, its
	// community and the size of its DHT routing table.
	PeerID    string           `json:"peer_id,omitempty"`
	P2PAddrs  []string         `json:"p2p_addrs,omitempty"`
	Community string           `json:"community,omitempty"`
	DHTPeers  int              `json:"dht_peers"`
	DHTBytes  map[string]int64 `json:"dht_bytes,omitempty"` // in, out
	// NAT: reachability, the DHT's mode, relays, connections by kind and
	// hole punches (nat.go).
	NAT *p2p.NATStatus `json:"nat,omitempty"`

	FrontierURLs int `json:"frontier_urls"`
	// FrontierSpilled is how many of them wait on disk, never polled.
	FrontierSpilled int `json:"frontier_spilled"`
	// FrontierParked is how many of them wait on disk for a revisit.
	FrontierParked int `json:"frontier_parked"`
	// DeletedBy counts this peer's own DELETE events by how they were
	// decided: 404 (or 410), soft-404, redirect.
	DeletedBy map[string]int64 `json:"deleted_by,omitempty"`
	// RevisitsAdvanced counts queued revisits a refit of the revisit
	// schedule brought forward.
	RevisitsAdvanced int64 `json:"revisits_advanced"`
	// HostsDistrusted counts the hosts not trusted now for a validator
	// ("last_modified": dated at the response; "etag": changed while the
	// text did not).
	HostsDistrusted map[string]int64 `json:"hosts_distrusted"`
	Delegated       int              `json:"delegated_prefixes"`
	PeersKnown      int              `json:"peers_known"`
	PeersHealthy    int              `json:"peers_healthy"`
	// Spot-checks of peers' claims and the peers distrusted for them.
	Checks          CheckStats `json:"checks"`
	PeersDistrusted int        `json:"peers_distrusted"`
	// Held counts the current states in the store by who vouches for them:
	// "own" for this peer's polls, else the peer merged from. Counted
	// every half minute.
	Held map[string]int64 `json:"held,omitempty"`
	// Store failures (a full disk): how many, the last, and when, of its
	// writes of merges and polls and of its origin index's passes; they
	// are not blamed on the peer being merged from.
	StoreFailures int64     `json:"store_failures"`
	StoreError    string    `json:"store_error,omitempty"`
	StoreFailedAt time.Time `json:"store_failed_at,omitzero"`
	// ChangeRates sums up the frontier's change-rate estimates (bands of
	// changes per day, and the freshness the revisit intervals should
	// give); recomputed every half minute.
	ChangeRates crawl.RateStats `json:"change_rates"`
	// Freshness is what the peer measured of its own freshness by
	// re-polling a uniform sample of what it holds, beside what its
	// revisit model expects (ChangeRates.ExpectedFreshness).
	Freshness FreshnessStatus   `json:"freshness"`
	Signals   crawl.SignalStats `json:"signals"` // publishers' sitemaps: reads, lastmod hints and how true they were

	History []Sample `json:"history,omitempty"`
}

// Status returns the peer's figures so far; with history, the recent
// samples too.
func (p *Peer) Status(history bool) Status {
	c := p.stats.snapshot()
	now := time.Now()
	st := Status{
		Crawler: p.cid, Mode: p.cfg.Mode, Share: p.cfg.Share, Rho: p.Rho(),
		Started: p.started, UptimeS: now.Sub(p.started).Seconds(),
		Polls: c.Polls, Merges: c.Merges, PollEvents: c.PollEvents, MergeEvents: c.MergeEvents,
		EventsPerPoll: perOp(c.PollEvents, c.Polls), EventsPerMerge: perOp(c.MergeEvents, c.Merges),
		Events: c.ByKind, Drawn: c.Drawn, Idle: c.Idle, Bytes: c.Bytes, NetworkSeconds: c.Seconds, Errors: c.Errors,
		TimeAtRho: map[string]float64{},
	}
	p.ctlMu.Lock()
	st.Controller = p.ctl.Name()
	for k, v := range p.timeAt {
		st.TimeAtRho[k] = v.Seconds()
	}
	if !p.rhoFrom.IsZero() {
		st.TimeAtRho[rhoBucket(p.rhoNow)] += now.Sub(p.rhoFrom).Seconds()
	}
	p.ctlMu.Unlock()
	if p.node != nil {
		ns := p.node.Status()
		st.PeerID, st.P2PAddrs, st.Community = p.PeerID(), p.P2PAddrs(), ns.Community
		st.DHTPeers = ns.DHTPeers
		st.DHTBytes = map[string]int64{"in": ns.DHTIn, "out": ns.DHTOut}
		st.NAT = &ns.NAT
	}
	cst := p.crawler.Stats()
	st.FrontierURLs, st.FrontierSpilled, st.FrontierParked, st.DeletedBy = cst.Known, cst.Spilled, cst.Parked, cst.DeletedBy
	st.RevisitsAdvanced = cst.Advanced
	st.HostsDistrusted = map[string]int64{"last_modified": cst.DistrustedLM, "etag": cst.DistrustedETag}
	st.Delegated = len(p.peers.delegated(now))
	st.PeersKnown, st.PeersHealthy = p.peers.counts()
	st.Checks, st.PeersDistrusted = p.checks.stats(), p.peers.distrusted()
	st.Held = p.heldCounts()
	p.storeMu.Lock()
	st.StoreFailures, st.StoreError, st.StoreFailedAt = p.storeFailures, p.storeErr, p.storeFailedAt
	p.storeMu.Unlock()
	st.ChangeRates = p.rateStats()
	st.Freshness = p.freshness(st.ChangeRates)
	st.Signals = p.crawler.SignalStats()
	cs := cst
	st.StoreFailures += cs.Errors["store"] // the crawler's writes of what it polled
	if ix, ok := p.stores.Events.(interface{ IndexFailures() int64 }); ok {
		st.StoreFailures += ix.IndexFailures() // the origin index's passes (webevents)
	}
	if err := p.crawler.StoreError(); err != nil {
		st.StoreError, st.StoreFailedAt = err.Error(), now
	}
	if history {
		p.histMu.Lock()
		st.History = append([]Sample(nil), p.history...)
		p.histMu.Unlock()
	}
	return st
}

// FreshnessStatus is the peer's freshness as its samples measured it
// (crawl.SelfMeasure: the share of sampled re-polls that found the state
// held still current, and its 95% interval), the freshness its revisit
// model expects, and whether the two disagree beyond the sample's noise.
type FreshnessStatus struct {
	crawl.SelfMeasure
	Expected float64 `json:"expected"`
	Disagree bool    `json:"disagree"`
}

func (p *Peer) freshness(rates crawl.RateStats) FreshnessStatus {
	m := p.crawler.SelfMeasure()
	f := FreshnessStatus{SelfMeasure: m, Expected: rates.ExpectedFreshness}
	f.Disagree = rates.ExpectedFreshness > 0 && m.Disagrees(rates.ExpectedFreshness)
	return f
}

// disagreeEvery bounds how often a disagreement between measured and
// expected freshness is logged.
const disagreeEvery = 10 * time.Minute

// warnIfDeceived logs a warning when the measured freshness and the
// model's disagree beyond the sample's noise: the model's beliefs (change
// rates, merged records counted as visits) are wrong, and what it shows
// should not be trusted. At most once every disagreeEvery.
func (p *Peer) warnIfDeceived(now time.Time) {
	f := p.freshness(p.rateStats())
	if !f.Disagree || now.Sub(p.warnedAt) < disagreeEvery {
		return
	}
	p.warnedAt = now
	p.log.Warn("measured freshness disagrees with the revisit model's",
		"measured", round3(f.Freshness), "low", round3(f.Low), "high", round3(f.High), "samples", f.Samples,
		"expected", round3(f.Expected))
}

func round3(x float64) float64 { return math.Round(x*1000) / 1000 }

func perOp(events, ops int64) float64 {
	if ops == 0 {
		return 0
	}
	return float64(events) / float64(ops)
}

// Peers returns the peer table sorted by URL.
func (p *Peer) Peers() []Record {
	rows := p.peers.snapshot()
	if p.node == nil {
		return rows
	}
	for i := range rows {
		id, ok := p2pIDOf(rows[i].URL)
		if !ok {
			if d, err := lpeer.Decode(rows[i].PeerID); err == nil {
				id, ok = d, true
			}
		}
		if ok {
			rows[i].Connection = p.node.ConnectionOf(id)
		}
	}
	return rows
}

func (p *Peer) serveStatus(w http.ResponseWriter, r *http.Request) {
	writeJSON(w, p.Status(r.URL.Query().Get("history") != "0"))
}

func (p *Peer) servePeers(w http.ResponseWriter, _ *http.Request) {
	writeJSON(w, struct {
		Peers []Record `json:"peers"`
	}{p.Peers()})
}

func writeJSON(w http.ResponseWriter, v any) {
	w.Header().Set("Content-Type", "application/json")
	w.Header().Set("Cache-Control", "no-store")
	enc := json.NewEncoder(w)
	enc.SetIndent("", "  ")
	_ = enc.Encode(v)
}

// metricsHandler serves this peer's metrics. Each peer has its own
// registry, so several peers can run in one process (tests, the demo).
func (p *Peer) metricsHandler() http.Handler {
	reg := prometheus.NewRegistry()
	reg.MustRegister(collectors.NewGoCollector(), collectors.NewProcessCollector(collectors.ProcessCollectorOpts{}))
	reg.MustRegister(p.metrics)
	reg.MustRegister(peerCollector{p})
	return promhttp.HandlerFor(reg, promhttp.HandlerOpts{})
}

var (
	descRho       = prometheus.NewDesc("cocrawl_rho", "Current probability that an operation polls the web.", nil, nil)
	descOps       = prometheus.NewDesc("cocrawl_operations_total", "Network operations by what ran (op) and what the slot drew.", []string{"op", "drawn"}, nil)
	descEvents    = prometheus.NewDesc("cocrawl_events_total", "Web-events gained, by source (poll, merge) and kind.", []string{"source", "kind"}, nil)
	descBytes     = prometheus.NewDesc("cocrawl_bytes_total", "Bytes received, by operation.", []string{"op"}, nil)
	descSeconds   = prometheus.NewDesc("cocrawl_network_seconds_total", "Network time spent, by operation.", []string{"op"}, nil)
	descErrors    = prometheus.NewDesc("cocrawl_errors_total", "Errors by operation and kind.", []string{"op", "kind"}, nil)
	descPeers     = prometheus.NewDesc("cocrawl_peers", "Peers in the peer table, by state.", []string{"state"}, nil)
	descIdle      = prometheus.NewDesc("cocrawl_idle_total", "Slot turns with nothing due to poll or merge.", nil, nil)
	descFrontier  = prometheus.NewDesc("cocrawl_frontier_urls", "URLs the crawler knows.", nil, nil)
	descSpilled   = prometheus.NewDesc("cocrawl_frontier_spilled_urls", "URLs the crawler knows that wait on disk, never polled.", nil, nil)
	descParked    = prometheus.NewDesc("cocrawl_frontier_parked_urls", "URLs the crawler knows that wait on disk for a revisit.", nil, nil)
	descAdvanced  = prometheus.NewDesc("cocrawl_revisits_advanced_total", "Queued revisits a refit of the revisit schedule brought forward.", nil, nil)
	descDistrust  = prometheus.NewDesc("cocrawl_hosts_distrusted", "Hosts not trusted now for a validator: last_modified (dated at the response), etag (changed while the text did not).", []string{"validator"}, nil)
	descDHTBytes  = prometheus.NewDesc("cocrawl_dht_bytes_total", "Bytes of the community DHT protocol, by direction.", []string{"direction"}, nil)
	descDHTPeers  = prometheus.NewDesc("cocrawl_dht_routing_table_peers", "Peers in the community DHT routing table.", nil, nil)
	descTimeRho   = prometheus.NewDesc("cocrawl_rho_seconds_total", "Time spent at each value of rho, rounded to 0.05.", []string{"rho"}, nil)
	descChecks    = prometheus.NewDesc("cocrawl_spot_checks_total", "Spot-checks of peers' claims by verdict (asked: polls asked for).", []string{"verdict"}, nil)
	descRolled    = prometheus.NewDesc("cocrawl_rolled_back_total", "URLs re-polled because the peer that gave their state was distrusted.", nil, nil)
	descStore     = prometheus.NewDesc("cocrawl_store_failures_total", "Failures of this peer's own store (a full disk): its writes of merges and polls, and the passes of its index by origin; not blamed on the peer merged from.", nil, nil)
	descSitemaps  = prometheus.NewDesc("cocrawl_sitemap_reads_total", "Sitemap documents read, by outcome (ok, error).", []string{"outcome"}, nil)
	descLastmods  = prometheus.NewDesc("cocrawl_sitemap_lastmods_total", "Sitemap lastmods that made a page due (hinted), and the polls' verdicts on them.", []string{"verdict"}, nil)
	descPubHosts  = prometheus.NewDesc("cocrawl_sitemap_hosts", "Hosts whose sitemaps gave entries, and those whose lastmods are distrusted now.", []string{"state"}, nil)
	descReach     = prometheus.NewDesc("cocrawl_p2p_reachability", "1 for the peer's reachability now (public, private, unknown).", []string{"state"}, nil)
	descConns     = prometheus.NewDesc("cocrawl_p2p_connections", "Open libp2p connections, by kind (direct, relayed).", []string{"kind"}, nil)
	descPunches   = prometheus.NewDesc("cocrawl_p2p_hole_punches_total", "DCUtR hole punches, by outcome (attempt, success, failure).", []string{"outcome"}, nil)
	descRelays    = prometheus.NewDesc("cocrawl_p2p_relays", "Relays this peer holds a slot on.", nil, nil)
	descDHTServer = prometheus.NewDesc("cocrawl_dht_server", "1 while the DHT runs in server mode, 0 in client mode.", nil, nil)
	descPubEvents = prometheus.NewDesc("cocrawl_publisher_events_total", "Changes of proven hosts' ResourceSync change lists stored as the publisher's web-events (not polled).", nil, nil)
	descFresh     = prometheus.NewDesc("cocrawl_freshness", "Freshness: measured by sampled re-polls (measured, with its 95% interval low and high) and expected by the revisit model (expected).", []string{"estimate"}, nil)
	descDeleted   = prometheus.NewDesc("cocrawl_deletions_total", "DELETE events of this peer's own polls, by how they were decided (404, soft-404, redirect).", []string{"how"}, nil)
	descSamples   = prometheus.NewDesc("cocrawl_freshness_samples_total", "Sampled re-polls drawn to measure freshness, by outcome (verdict, no_verdict).", []string{"outcome"}, nil)
	descGone      = prometheus.NewDesc("cocrawl_known_gone_share", "Share of the URLs known that the sampled re-polls find gone (404 or 410, soft 404s included), left out of the measured freshness's frame.", nil, nil)
	descIndexNow  = prometheus.NewDesc("cocrawl_indexnow_urls_total", "URLs of IndexNow submissions, by outcome (accepted: key verified; refused: key wrong or host distrusted).", []string{"outcome"}, nil)
)

// peerCollector turns the status into metrics at scrape time, so counters
// have one source.
type peerCollector struct{ p *Peer }

func (c peerCollector) Describe(ch chan<- *prometheus.Desc) {
	for _, d := range []*prometheus.Desc{descRho, descOps, descEvents, descBytes, descSeconds, descErrors, descPeers, descIdle, descFrontier, descSpilled, descParked, descAdvanced, descDistrust, descTimeRho, descDHTBytes, descDHTPeers, descChecks, descRolled, descStore, descSitemaps, descLastmods, descPubHosts, descPubEvents, descIndexNow, descFresh, descSamples, descGone, descDeleted, descReach, descConns, descPunches, descRelays, descDHTServer} {
		ch <- d
	}
}

func (c peerCollector) Collect(ch chan<- prometheus.Metric) {
	st := c.p.Status(false)
	ch <- prometheus.MustNewConstMetric(descRho, prometheus.GaugeValue, st.Rho)
	for _, op := range []string{"poll", "merge"} {
		for _, dr := range []string{"poll", "merge"} {
			ch <- prometheus.MustNewConstMetric(descOps, prometheus.CounterValue, float64(st.Drawn[op][dr]), op, dr)
		}
		for _, k := range kindNames {
			ch <- prometheus.MustNewConstMetric(descEvents, prometheus.CounterValue, float64(st.Events[op][k]), op, k)
		}
		ch <- prometheus.MustNewConstMetric(descBytes, prometheus.CounterValue, float64(st.Bytes[op]), op)
		ch <- prometheus.MustNewConstMetric(descSeconds, prometheus.CounterValue, st.NetworkSeconds[op], op)
		kinds := make([]string, 0, len(st.Errors[op]))
		for k := range st.Errors[op] {
			kinds = append(kinds, k)
		}
		sort.Strings(kinds)
		for _, k := range kinds {
			ch <- prometheus.MustNewConstMetric(descErrors, prometheus.CounterValue, float64(st.Errors[op][k]), op, k)
		}
	}
	ch <- prometheus.MustNewConstMetric(descPeers, prometheus.GaugeValue, float64(st.PeersHealthy), "healthy")
	ch <- prometheus.MustNewConstMetric(descPeers, prometheus.GaugeValue, float64(st.PeersDistrusted), "distrusted")
	ch <- prometheus.MustNewConstMetric(descPeers, prometheus.GaugeValue, float64(st.PeersKnown-st.PeersHealthy-st.PeersDistrusted), "other")
	for v, n := range map[string]int64{"asked": st.Checks.Asked, "confirmed": st.Checks.Confirmed, "refuted": st.Checks.Refuted, "inconclusive": st.Checks.Inconclusive} {
		ch <- prometheus.MustNewConstMetric(descChecks, prometheus.CounterValue, float64(n), v)
	}
	ch <- prometheus.MustNewConstMetric(descRolled, prometheus.CounterValue, float64(st.Checks.RolledBack))
	ch <- prometheus.MustNewConstMetric(descStore, prometheus.CounterValue, float64(st.StoreFailures))
	sg := st.Signals
	ch <- prometheus.MustNewConstMetric(descSitemaps, prometheus.CounterValue, float64(sg.SitemapReads-sg.SitemapErrors), "ok")
	ch <- prometheus.MustNewConstMetric(descSitemaps, prometheus.CounterValue, float64(sg.SitemapErrors), "error")
	for v, n := range map[string]int64{"hinted": sg.LastmodHints, "confirmed": sg.LastmodConfirmed, "refuted": sg.LastmodRefuted} {
		ch <- prometheus.MustNewConstMetric(descLastmods, prometheus.CounterValue, float64(n), v)
	}
	ch <- prometheus.MustNewConstMetric(descPubHosts, prometheus.GaugeValue, float64(sg.HostsWithSitemaps), "with_sitemaps")
	ch <- prometheus.MustNewConstMetric(descPubHosts, prometheus.GaugeValue, float64(sg.HostsDistrusted), "distrusted")
	ch <- prometheus.MustNewConstMetric(descPubEvents, prometheus.CounterValue, float64(sg.PublisherEvents))
	ch <- prometheus.MustNewConstMetric(descIndexNow, prometheus.CounterValue, float64(sg.IndexNowURLs), "accepted")
	ch <- prometheus.MustNewConstMetric(descIndexNow, prometheus.CounterValue, float64(sg.IndexNowRefused), "refused")
	if fr := st.Freshness; fr.Samples > 0 {
		for k, v := range map[string]float64{"measured": fr.Freshness, "low": fr.Low, "high": fr.High} {
			ch <- prometheus.MustNewConstMetric(descFresh, prometheus.GaugeValue, v, k)
		}
	}
	if st.Freshness.Expected > 0 {
		ch <- prometheus.MustNewConstMetric(descFresh, prometheus.GaugeValue, st.Freshness.Expected, "expected")
	}
	ch <- prometheus.MustNewConstMetric(descSamples, prometheus.CounterValue, float64(st.Freshness.Judged), "verdict")
	ch <- prometheus.MustNewConstMetric(descSamples, prometheus.CounterValue, float64(st.Freshness.NoVerdict), "no_verdict")
	ch <- prometheus.MustNewConstMetric(descGone, prometheus.GaugeValue, st.Freshness.Gone)
	if n := st.NAT; n != nil {
		for _, r := range []string{"public", "private", "unknown"} {
			ch <- prometheus.MustNewConstMetric(descReach, prometheus.GaugeValue, map[bool]float64{true: 1}[n.Reachability == r], r)
		}
		ch <- prometheus.MustNewConstMetric(descConns, prometheus.GaugeValue, float64(n.Direct), "direct")
		ch <- prometheus.MustNewConstMetric(descConns, prometheus.GaugeValue, float64(n.Relayed), "relayed")
		ch <- prometheus.MustNewConstMetric(descPunches, prometheus.CounterValue, float64(n.HolePunches.Attempts), "attempt")
		ch <- prometheus.MustNewConstMetric(descPunches, prometheus.CounterValue, float64(n.HolePunches.Successes), "success")
		ch <- prometheus.MustNewConstMetric(descPunches, prometheus.CounterValue, float64(n.HolePunches.Failures), "failure")
		ch <- prometheus.MustNewConstMetric(descRelays, prometheus.GaugeValue, float64(len(n.Relays)))
		if n.DHTMode != "" {
			ch <- prometheus.MustNewConstMetric(descDHTServer, prometheus.GaugeValue, map[bool]float64{true: 1}[n.DHTMode == "server"])
		}
	}
	ch <- prometheus.MustNewConstMetric(descIdle, prometheus.CounterValue, float64(st.Idle))
	ch <- prometheus.MustNewConstMetric(descFrontier, prometheus.GaugeValue, float64(st.FrontierURLs))
	ch <- prometheus.MustNewConstMetric(descSpilled, prometheus.GaugeValue, float64(st.FrontierSpilled))
	ch <- prometheus.MustNewConstMetric(descParked, prometheus.GaugeValue, float64(st.FrontierParked))
	ch <- prometheus.MustNewConstMetric(descAdvanced, prometheus.CounterValue, float64(st.RevisitsAdvanced))
	for v, n := range st.HostsDistrusted {
		ch <- prometheus.MustNewConstMetric(descDistrust, prometheus.GaugeValue, float64(n), v)
	}
	for how, n := range st.DeletedBy {
		ch <- prometheus.MustNewConstMetric(descDeleted, prometheus.CounterValue, float64(n), how)
	}
	if st.DHTBytes != nil {
		ch <- prometheus.MustNewConstMetric(descDHTBytes, prometheus.CounterValue, float64(st.DHTBytes["in"]), "in")
		ch <- prometheus.MustNewConstMetric(descDHTBytes, prometheus.CounterValue, float64(st.DHTBytes["out"]), "out")
		ch <- prometheus.MustNewConstMetric(descDHTPeers, prometheus.GaugeValue, float64(st.DHTPeers))
	}
	for k, v := range st.TimeAtRho {
		ch <- prometheus.MustNewConstMetric(descTimeRho, prometheus.CounterValue, v, k)
	}
}

// rateStats is the crawler's RateStats, walked at most every heldEvery.
func (p *Peer) rateStats() crawl.RateStats {
	p.heldMu.Lock()
	defer p.heldMu.Unlock()
	if p.rates.PerDay == nil || time.Since(p.ratesAt) >= heldEvery {
		p.rates, p.ratesAt = p.crawler.RateStats(), time.Now()
	}
	return p.rates
}
