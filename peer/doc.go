// Package peer will hold a running peer: the poll/merge loop, the peer table, libp2p host and DHT discovery, API, dashboard and metrics.
//
// Not built yet: see issue 4. The folder exists so the layout of DESIGN.md
// shows the architecture from the start.
package peer
