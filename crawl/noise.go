package crawl

import (
	"time"

	"github.com/cocrawl/cocrawl/crawl/fingerprint"
)

// A host's template noise. The fingerprint leaves out what the markup
// says is template (header, footer, nav, aside, form, link lists), but
// many sites build their template of plain divs: a "generated at" time or
// a visitor count in a <div class="meta"> moves a page's fingerprint by
// as much as a real edit. So the crawler reads the first pages it sees of
// a host twice, one politeness delay apart, and the places (block
// signatures: an element's tag and class, and its parents') whose text
// differs between the two reads of one version are the host's noise: its
// mask. Change detection compares this crawler's own looks by their
// fingerprint without the masked places (URLState.ownFP); the records keep
// the fingerprint every peer computes alike (spec section 7.4.1), and
// comparing those allows for as many bits as the host's noise moved them.
type hostNoise struct {
	mask    fingerprint.Mask
	version uint16 // of the mask: bumped when it grows
	probes  int    // pages read twice so far
	// The first read of the page being read twice, its URL and when.
	first   *fingerprint.Builder
	firstFP uint64
	probing *URLState
	since   time.Time
	// wire is the most bits two reads of one version were apart, unmasked.
	wire int
}

// noiseProbes is how many of a host's pages are read twice.
const noiseProbes = 2

// noiseProbeTimeout gives up on a second read that never came (the URL
// excluded, the host gone).
const noiseProbeTimeout = 10 * time.Minute

// wireNear is how many bits apart two records' fingerprints (unmasked) may
// be and still be one version on this host.
func (n *hostNoise) wireNear() int {
	return max(fingerprint.Near, min(n.wire+2, fingerprint.Far-1))
}

// readNoise learns from a 200 of st what it can of the host's noise and
// returns the page's fingerprint without it. It reports whether to read
// the page again at once (a first read). c.mu held.
func (c *Crawler) readNoise(h *host, st *URLState, res *Result) (again bool) {
	n := &h.noise
	if res.page == nil || !res.HasFingerprint {
		return false
	}
	if n.probing == st && n.first != nil {
		// The second read.
		if d := fingerprint.Distance(n.firstFP, res.Fingerprint); d < fingerprint.Far {
			// Not a real change between the reads: the difference is noise.
			n.wire = max(n.wire, d)
			grew := false
			for _, sig := range fingerprint.Volatile(n.first, res.page) {
				if len(n.mask) < fingerprint.MaxMask && !n.mask.Has(sig) {
					n.mask = append(n.mask, sig)
					grew = true
				}
			}
			if grew {
				n.version++
			}
			n.probes++
		}
		n.first, n.probing = nil, nil
	} else if n.probes < noiseProbes && (n.first == nil || res.End.Sub(n.since) > noiseProbeTimeout) {
		n.first, n.firstFP, n.probing, n.since = res.page, res.Fingerprint, st, res.End
		again = true
	}
	res.Local, res.HasLocal = res.page.SumMasked(n.mask)
	return again
}
