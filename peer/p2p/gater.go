package p2p

import (
	"github.com/libp2p/go-libp2p/core/connmgr"
	"github.com/libp2p/go-libp2p/core/control"
	"github.com/libp2p/go-libp2p/core/network"
	"github.com/libp2p/go-libp2p/core/peer"
	ma "github.com/multiformats/go-multiaddr"
	manet "github.com/multiformats/go-multiaddr/net"
)

// publicGater refuses to dial non-public addresses (loopback, private,
// link-local...), which a hostile peer or DHT record could otherwise make
// this peer reach inside its own network. Incoming connections are not
// refused: answering a LAN neighbour reaches nothing new. --allow-private
// turns it off (LANs, tests).
type publicGater struct{}

var _ connmgr.ConnectionGater = publicGater{}

func (publicGater) InterceptPeerDial(peer.ID) bool { return true }

func (publicGater) InterceptAddrDial(_ peer.ID, a ma.Multiaddr) bool { return manet.IsPublicAddr(a) }

func (publicGater) InterceptAccept(network.ConnMultiaddrs) bool { return true }

func (publicGater) InterceptSecured(network.Direction, peer.ID, network.ConnMultiaddrs) bool {
	return true
}

func (publicGater) InterceptUpgraded(network.Conn) (bool, control.DisconnectReason) { return true, 0 }
