// Package p2p is a peer's libp2p node: a persistent identity key, a host
// with a connection manager and resource limits, the share repository
// served over libp2p streams (go-libp2p's HTTP transport, under
// ShareProtocol), and a Kademlia DHT private to a community (protocol
// prefix /cocrawl/<community>, spec 7.5). Sharing peers advertise
// themselves under the community's namespace; every node looks the
// namespace up again and again and hands what it finds to OnFound's
// function.
//
// Behind NAT (nat.go) AutoNAT finds the node's reachability, the DHT
// serves only while it is public, AutoRelay holds slots on relays, and
// DCUtR punches holes; DialMerge readies a connection for one merge:
// direct when a punch makes one, else through a relay in pieces (spec
// 7.6). Without AllowPrivate the node neither dials nor announces loopback
// and private addresses (gater.go).
//
// Package peer, the cooperation logic, uses a Node through an interface
// of its own; nothing here knows of peer tables, merges' records or trust.
package p2p
