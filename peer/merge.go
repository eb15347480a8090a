package peer

import (
	"context"
	"errors"
	"fmt"
	"net/url"
	"slices"
	"time"

	lpeer "github.com/libp2p/go-libp2p/core/peer"

	"github.com/cocrawl/cocrawl/peer/p2p"
	"github.com/cocrawl/cocrawl/peer/rho"
	"github.com/cocrawl/cocrawl/protocol"
)

// A merge, as a slot runs it, in steps: choose the transport and check the
// peer's identity (mergeFrom), merge, update the peer table and what the
// crawler leaves to peers (recordMerge), tell the controller with the
// peer's probe report (observeMerge), and pay the request budget
// (payForDays). Checks of what a peer claims go beside the identity check.

// tryMerge merges from the next due peer; drawn is the side the slot drew.
func (p *Peer) tryMerge(ctx context.Context, drawn string) (bool, time.Duration) {
	if !p.mergeSlot() {
		return false, 0 // half the slots merge already: the slot polls
	}
	defer p.merging.Add(-1)
	rec, ok, wait := p.peers.next(time.Now())
	if !ok {
		return false, wait
	}
	start := time.Now()
	rep, piece, err := p.mergeFrom(ctx, rec.URL)
	end := time.Now()
	if err != nil && ctx.Err() != nil {
		// Shutting down: not the peer's fault; it is due again at restart.
		p.peers.release(rec.URL)
		return true, 0
	}
	if protocol.IsStoreError(err) {
		// This peer's store failed, not the peer: it is not backed off,
		// and the failure shows as the store's own state.
		p.peers.release(rec.URL)
		p.storeFailed(err, end)
		p.stats.merge(drawn, rep, err, end.Sub(start))
		return true, 0
	}
	o := p.outcomeOf(rec.URL, rep, err, end.Sub(start))
	p.recordMerge(rec.URL, o, end)
	if piece {
		// A piece through a relay: the rest is asked for as soon as a new
		// relayed connection may be opened.
		p.peers.dueBy(rec.URL, end.Add(p2p.RelayPieceGap))
	}
	p.askChecks(rep.Peer)
	p.stats.merge(drawn, rep, err, o.took)
	p.observeMerge(rec.URL, rep, o)
	p.payForDays(rep)
	return true, 0
}

// mergeSlot takes one of the merge places: at most half the slots merge at
// once (one when there is a single slot), so peers that are slow to serve
// cannot hold every slot and stop polling. A peer that never polls (rho
// fixed at 0, a mirror) has nothing to starve and merges on every slot.
func (p *Peer) mergeSlot() bool {
	limit := int32(max(1, p.cfg.Slots/2))
	if p.Rho() == 0 {
		limit = int32(max(1, p.cfg.Slots))
	}
	if p.merging.Add(1) > limit {
		p.merging.Add(-1)
		return false
	}
	return true
}

// mergeFrom runs one merge from the peer of a peer-table row: over libp2p
// when the row names a peer ID, checking that its robots.shr names the
// same peer, else over HTTP. The report is never nil.
func (p *Peer) mergeFrom(ctx context.Context, rowURL string) (rep *protocol.MergeReport, piece bool, err error) {
	id, overP2P := p2pIDOf(rowURL)
	if !overP2P {
		m := p.merger
		m.CheckControl = p.peers.learnControl(rowURL, nil)
		rep, err := m.Merge(ctx, rowURL)
		return reportOf(rep, rowURL), false, err
	}
	// Over libp2p the host names no server (spec 7.5): any will do.
	mergeURL := "http://" + id.String() + "/robots.shr"
	if p.node == nil {
		return &protocol.MergeReport{Peer: mergeURL}, false, errors.New("peer: a libp2p peer, but libp2p is off")
	}
	// Day files go over a direct connection, which a hole punch makes for
	// peers behind NAT; without one, through a relay in pieces: each
	// relayed connection carries what the relay allows, and the cursor
	// keeps what arrived, so the next merge asks for the rest (spec 7.6).
	d, err := p.node.DialMerge(ctx, id)
	if err != nil {
		return reportOf(nil, mergeURL), false, err
	}
	m := p.merger // the same settings, another transport and check
	m.Client = d.Client
	m.CheckControl = p.peers.learnControl(mergeURL, sameIdentity(id))
	rep, err = m.Merge(ctx, mergeURL)
	if d.Relayed {
		broken := err != nil || slices.ContainsFunc(rep.Days, func(d protocol.DayReport) bool { return d.Err != nil })
		if broken && rep.Records > 0 && ctx.Err() == nil {
			// The relay ended the connection after its quota: what came is
			// merged and the cursor holds the place. Not the peer's fault.
			p.log.Debug("merged in part through a relay", "peer", mergeURL, "records", rep.Records, "err", err)
			err, piece = nil, true
		}
	}
	d.Done(rep.WireBytes, err != nil && ctx.Err() == nil)
	return reportOf(rep, mergeURL), piece, err
}

func reportOf(rep *protocol.MergeReport, peerURL string) *protocol.MergeReport {
	if rep == nil {
		return &protocol.MergeReport{Peer: peerURL}
	}
	return rep
}

// sameIdentity refuses a robots.shr that names another peer ID than the
// one the libp2p connection authenticated.
func sameIdentity(id lpeer.ID) func(*protocol.ShareControl) error {
	return func(sc *protocol.ShareControl) error {
		if sc.PeerID != "" && sc.PeerID != id.String() {
			return fmt.Errorf("%w: robots.shr says %s, the connection %s", ErrPeerIDMismatch, sc.PeerID, id)
		}
		return nil
	}
}

// ErrPeerIDMismatch: a peer reached over libp2p published another peer's ID.
var ErrPeerIDMismatch = errors.New("peer: robots.shr claims another peer's ID")

// outcomeOf sums up a merge for the peer table.
func (p *Peer) outcomeOf(rowURL string, rep *protocol.MergeReport, err error, took time.Duration) mergeOutcome {
	o := mergeOutcome{err: err, took: took, records: rep.Records, bytes: rep.WireBytes, gained: int64(rep.Result.Accepted), requests: 1 + len(rep.Days)}
	sc := rep.Control
	if sc == nil {
		return o
	}
	_, overP2P := p2pIDOf(rowURL)
	o.crawler, o.version, o.special, o.rho = sc.Crawler, sc.Version, sc.Special, sc.Rho
	// Itself: over libp2p the connection says who it is; over HTTP, a
	// robots.shr naming this peer's own crawler.
	o.self = !overP2P && sc.Crawler == p.cid
	o.peerID, o.p2pAddrs = sc.PeerID, sc.P2PAddrs
	if base, perr := url.Parse(rep.Peer); perr == nil && !overP2P {
		if ru, err := sc.RepositoryURL(base); err == nil {
			o.repository = ru.String()
		}
	}
	return o
}

// recordMerge updates and saves the peer's row; after a success it keeps
// the crawler off the peer's repository and hands it the prefixes now
// left to peers.
func (p *Peer) recordMerge(rowURL string, o mergeOutcome, end time.Time) {
	row := p.peers.done(rowURL, o, end)
	if err := p.stores.Peers.SavePeer(row); err != nil {
		p.log.Error("save peer table", "err", err)
	}
	if o.err != nil {
		p.log.Warn("merge failed", "peer", rowURL, "failures", row.Consecutive, "next", row.NextDue.Format(time.TimeOnly), "err", o.err)
		return
	}
	p.excludeRepository(rowURL, rowURL, o.repository)
	p.crawler.Delegate(p.peers.delegated(end))
	p.log.Debug("merged", "peer", rowURL, "gained", o.gained, "records", o.records, "bytes", o.bytes, "took", o.took)
}

// observeMerge tells the controller what the merge gained, with the
// peer's probe report for a controller that pools them (seek); a
// malformed report costs the report, not the merge.
func (p *Peer) observeMerge(rowURL string, rep *protocol.MergeReport, o mergeOutcome) {
	mo := rho.Outcome{Merge: true, Events: int(o.gained), Cost: o.took}
	if rep.Control != nil && rep.Control.Probe != "" {
		if r, err := rho.ParseReport(rep.Control.Probe); err != nil {
			p.stats.badProbeReport()
			p.log.Debug("ignored a malformed probe report", "peer", rowURL, "err", err)
		} else {
			mo.From, mo.Report = rowURL, r
		}
	}
	p.observe(mo)
}

// payForDays charges the request budget for a merge's day files: the slot
// paid for the robots.shr; each day file is one request more, paid by the
// operations that follow.
func (p *Peer) payForDays(rep *protocol.MergeReport) {
	if p.budget == nil {
		return
	}
	for range rep.Days {
		p.budget.ReserveN(time.Now(), 1)
	}
}
