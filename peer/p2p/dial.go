package p2p

import (
	"context"
	"net/http"

	"github.com/libp2p/go-libp2p/core/peer"
)

// A Dial is a connection readied for one merge from a peer (Node.DialMerge).
type Dial struct {
	// Client's requests go to the peer over libp2p streams, whatever host
	// their URL names; the connection authenticates the peer ID.
	Client *http.Client
	// Relayed: there is no direct connection, and the merge goes through
	// a relay, in the pieces the relay's limits allow (spec 7.6).
	Relayed bool

	n       *Node
	id      peer.ID
	release func()
}

// DialMerge readies a connection for a merge from id. Day files go over a
// direct connection, which a hole punch makes for peers behind NAT;
// without one, through a relay. Call Done when the merge ends.
func (n *Node) DialMerge(ctx context.Context, id peer.ID) (*Dial, error) {
	d := &Dial{n: n, id: id, release: func() {}}
	direct := n.ensureDirect(ctx, id, nil)
	if d.Relayed = !direct && n.connected(id); d.Relayed {
		d.release = n.throughRelay(id)
	}
	c, err := n.client(id)
	if err != nil {
		// No merge was made: nothing is counted as relayed.
		if ctx.Err() == nil {
			n.forget(id)
			n.dropRelayed(id)
		}
		d.release()
		return nil, err
	}
	d.Client = c
	return d, nil
}

// Done ends the merge. moved is the bytes it brought; failed says it
// failed for a reason of the connection's or the peer's (not the caller's
// context), so the next merge dials anew, with the addresses known then.
func (d *Dial) Done(moved int64, failed bool) {
	if d.Relayed {
		d.n.countRelayed(moved)
	}
	if failed {
		d.n.forget(d.id)
		// A relayed connection carries no merge; the hole punch that would
		// make a direct one starts when the other side sees a new relayed
		// connection, so the next attempt comes through a fresh one.
		d.n.dropRelayed(d.id)
	}
	d.release()
}
