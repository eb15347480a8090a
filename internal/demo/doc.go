// Package demo runs cocrawl's main demonstration: a synthetic web that
// changes faster than one peer can poll, a community of cooperating peers
// (sharing, merging over libp2p after finding each other in a community
// DHT, splitting the hosts between them with the protocol's special
// prefixes) and as many polling-only peers, every peer with the same
// budget of requests per second. It measures each peer's freshness
// against the web's ground truth while they run, and writes a table, a
// CSV file and an SVG chart of freshness over time.
//
// Freshness is measured two ways (docs/architecture.md, "Measuring"): coverage, the
// share of the web's live pages whose current version the peer holds, and
// the thesis's cache freshness, the share of the peer's own entries that
// are still true (section 4.2).
package demo
