package peer

import (
	"strings"

	lpeer "github.com/libp2p/go-libp2p/core/peer"
)

// p2pURL is the peer-table key of a peer found over libp2p.
func p2pURL(id lpeer.ID) string { return "libp2p://" + id.String() + "/robots.shr" }

// p2pIDOf returns the peer ID of a libp2p peer-table key.
func p2pIDOf(rowURL string) (lpeer.ID, bool) {
	rest, ok := strings.CutPrefix(rowURL, "libp2p://")
	if !ok {
		return "", false
	}
	id, err := lpeer.Decode(strings.TrimSuffix(rest, "/robots.shr"))
	return id, err == nil
}

// rowKey returns the peer-table key of a source as records are attributed
// to it (webevents.Event.From, the merge cursor's peer): a merge over
// libp2p is attributed to http://<peer-id>/robots.shr, the URL it fetched,
// and its row is libp2p://<peer-id>/robots.shr.
func rowKey(from string) string {
	rest, ok := strings.CutPrefix(from, "http://")
	if !ok {
		return from
	}
	id, ok := strings.CutSuffix(rest, "/robots.shr")
	if !ok || strings.ContainsAny(id, ":/") {
		return from
	}
	if pid, err := lpeer.Decode(id); err == nil {
		return p2pURL(pid)
	}
	return from
}
