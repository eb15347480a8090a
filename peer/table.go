package peer

import (
	"sort"
	"sync"
	"time"

	"github.com/cocrawl/cocrawl/webevents"
)

// Record is one row of the peer table: a peer found in the configuration
// (or, later, by discovery), what its robots.shr said and how merging from
// it went. It survives restarts; the merge cursor itself lives in the
// web-event store under the same robots.shr URL.
type Record struct {
	URL    string    `json:"url"`    // robots.shr URL, or libp2p://<peer-id>/robots.shr: the key
	Source string    `json:"source"` // how it was found: static, dht, mdns
	Added  time.Time `json:"added"`

	// From its robots.shr, as of the last successful merge.
	Crawler    string   `json:"crawler,omitempty"`
	Version    string   `json:"version,omitempty"`
	Special    []string `json:"special,omitempty"`
	Repository string   `json:"repository,omitempty"`
	Rho        string   `json:"rho,omitempty"`  // the rho it advertises
	Self       bool     `json:"self,omitempty"` // it is this peer: never merged
	// PeerID and P2PAddrs: for a peer found over libp2p, its authenticated
	// ID and the addresses it was found at; for a static peer, what its
	// robots.shr claims.
	PeerID   string   `json:"peer_id,omitempty"`
	P2PAddrs []string `json:"p2p_addrs,omitempty"`
	// Connection is how the libp2p host is connected to it when the table
	// is shown: "direct", "direct (hole punched)", "relayed via <relay
	// peer ID>", or empty (not connected, or not a libp2p peer).
	Connection string `json:"connection,omitempty"`

	Merges        int64     `json:"merges"`    // successful merges
	Gained        int64     `json:"gained"`    // events accepted from it
	LastGain      int64     `json:"last_gain"` // events accepted by the last merge
	Records       int64     `json:"records"`   // records received
	Bytes         int64     `json:"bytes"`     // bytes received
	Failures      int64     `json:"failures"`  // failed merges, all told
	Consecutive   int       `json:"consecutive_failures"`
	LastError     string    `json:"last_error,omitempty"`
	LastAttempt   time.Time `json:"last_attempt,omitzero"`
	LastSuccess   time.Time `json:"last_success,omitzero"`
	Interval      Duration  `json:"interval"` // adaptive wait between merges
	NextDue       time.Time `json:"next_due,omitzero"`
	NetworkTimeMS int64     `json:"network_ms"` // time spent merging from it

	// Spot-checks of its records (peer/checks.go): claims confirmed and
	// refuted by this peer's own polls, and checks that could not tell.
	Confirmed    int64     `json:"confirmed,omitempty"`
	Refuted      int64     `json:"refuted,omitempty"`
	Inconclusive int64     `json:"inconclusive,omitempty"`
	Distrusted   time.Time `json:"distrusted,omitzero"` // when its refutations passed the bound; never merged again
}

// Healthy says whether the last merge attempt succeeded.
func (r *Record) Healthy() bool {
	return r.Consecutive == 0 && !r.LastSuccess.IsZero() && r.Distrusted.IsZero()
}

// Duration is a time.Duration that reads and writes as "1m30s" in JSON.
type Duration time.Duration

func (d Duration) MarshalText() ([]byte, error) { return []byte(time.Duration(d).String()), nil }

func (d *Duration) UnmarshalText(b []byte) error {
	v, err := time.ParseDuration(string(b))
	*d = Duration(v)
	return err
}

// PeerStore keeps the peer table across restarts.
type PeerStore interface {
	LoadPeers(fn func(Record) error) error
	SavePeer(r Record) error
	DeletePeer(url string) error
}

// StoredPeers keeps the peer table in a table of the peer's store (a
// *webevents.Table, which reaches only the peer table's keys), one JSON
// row per peer.
type StoredPeers struct{ Table webevents.KeyValues }

func (s StoredPeers) json() webevents.JSONTable[Record] {
	return webevents.JSONTable[Record]{KV: s.Table, Key: func(r *Record) string { return r.URL }}
}

func (s StoredPeers) LoadPeers(fn func(Record) error) error { return s.json().Each(fn) }

func (s StoredPeers) SavePeer(r Record) error { return s.json().Put(r) }

func (s StoredPeers) DeletePeer(url string) error { return s.Table.Delete(url) }

// MemPeers keeps the peer table in memory, for tests.
type MemPeers struct {
	mu   sync.Mutex
	rows map[string]Record
}

func (m *MemPeers) LoadPeers(fn func(Record) error) error {
	m.mu.Lock()
	rows := make([]Record, 0, len(m.rows))
	for _, r := range m.rows {
		rows = append(rows, r)
	}
	m.mu.Unlock()
	sort.Slice(rows, func(i, j int) bool { return rows[i].URL < rows[j].URL })
	for _, r := range rows {
		if err := fn(r); err != nil {
			return err
		}
	}
	return nil
}

func (m *MemPeers) SavePeer(r Record) error {
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.rows == nil {
		m.rows = map[string]Record{}
	}
	r.Special = append([]string(nil), r.Special...)
	m.rows[r.URL] = r
	return nil
}

func (m *MemPeers) DeletePeer(url string) error {
	m.mu.Lock()
	defer m.mu.Unlock()
	delete(m.rows, url)
	return nil
}
