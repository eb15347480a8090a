// Package peer is a running cooperating crawler: thesis algorithm 4.1 made
// concurrent, with a peer table, a share repository, an HTTP API, metrics
// and a dashboard.
//
// Data flows like this. Config.Slots workers each draw, with probability
// rho (from a peer/rho Controller), a poll or a merge. A poll asks the
// crawl.Crawler for the next due URL of a host whose delay has passed; a
// merge takes the peer most overdue in the peer table and runs a
// protocol.Merger against its robots.shr. When the drawn side has nothing
// due the slot does the other; rho 0 never polls and rho 1 never merges.
// Both write into one webevents.Store, whose day files the share server
// publishes when sharing is on (a non-sharing peer serves an empty
// repository). Every outcome (events gained, network time) goes to the
// controller, which moves rho.
//
// The peer table (Record rows in a PeerStore) keeps for each peer what its
// robots.shr said, how much merging from it gained, its failures and when
// it is due again: the wait between merges adapts to what they gain, and a
// failing peer is backed off exponentially, never dropped. The special
// prefixes of healthy peers that have shared events are left to them
// (crawl.Crawler.Delegate): their events are merged instead of polled.
//
// What a merge brings decides what the peer polls, and is checked
// (checks.go, spec section 12): every merged record is a visit for the
// crawler (crawl.Hint), each merge's records are sampled and re-polled, a
// peer whose claims the polls refute is distrusted (never merged again, its
// states re-polled, its records withheld from the day files), and records
// of peers not yet vouched for are not published onward.
//
// Peer.Handler serves the share repository (/robots.shr, /share/), the
// dashboard at /, /api/status and /api/peers as JSON, and Prometheus
// metrics at /metrics, from one registry per peer so several peers can run
// in one process.
//
// With Config.P2P the peer also runs a libp2p node (package p2p), through
// a small interface: its addresses, the community members it finds, a
// client per peer ID, its status. What it finds goes in the peer table as
// libp2p://<peer-id> rows (rows.go), merged over libp2p streams: the peer
// ID is the one the connection authenticated, and a robots.shr naming
// another is refused. Static peers (Config.Peers) are merged over HTTP and
// need no DHT.
package peer
