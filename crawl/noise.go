package crawl

import (
	"slices"
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
	// the first read's validators: a second read whose trusted
	// validators differ saw another version, not noise
	firstETag string
	firstLM   time.Time
	// wire is the most bits two reads of one version were apart, unmasked;
	// local the most they were apart with the mask (the noise in places
	// too large to mask).
	wire, local int
	// held are the pages read while the noise is being learnt, each its
	// URL's last: when the mask grows their own fingerprints are taken
	// again with it, so a host's first pages are not compared across its
	// noise at their first revisit. At most noiseAfter per host and
	// maxHeldReads and maxHeldFeatures in all (Crawler.noiseHeld); freed
	// once learnt, or for other hosts after noiseProbeTimeout.
	held      []heldRead
	heldSince time.Time // when the first of them was held
}

type heldRead struct {
	st   *URLState
	page *fingerprint.Builder
}

// maxHeldReads and maxHeldFeatures bound the pages all hosts hold while
// they learn their noise, in count and in text features (about 9 bytes
// each: 36 MB in all, whatever the pages' size).
const (
	maxHeldReads    = 2048
	maxHeldFeatures = 4 << 20
)

// noiseAfter is how many requests a host answers before its pages are
// read twice, unless a page is revisited before (the first comparison
// that the noise could spoil): a host polled a few times pays nothing,
// and a site's first visits go first.
const noiseAfter = 30

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

// localNear is how many bits apart this crawler's own two looks at a page
// (fingerprints without the mask) may be and still be one version.
func (n *hostNoise) localNear() int {
	if n.local == 0 {
		return fingerprint.Near
	}
	return max(fingerprint.Near, min(n.local+2, fingerprint.Far-1))
}

// validatorsChanged says whether the second read's validators, where the
// host's are trusted, show a new version since the first: the page
// changed between the reads, and what differs is not noise.
func (n *hostNoise) validatorsChanged(h *host, res *Result) bool {
	etag := res.ETag != "" && n.firstETag != "" && res.ETag != n.firstETag && h.validators.trustETag()
	lm := !res.LastModified.IsZero() && !n.firstLM.IsZero() && !res.LastModified.Equal(n.firstLM) && h.validators.trustLM()
	return etag || lm
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
		if d := fingerprint.Distance(n.firstFP, res.Fingerprint); d < fingerprint.Far && !n.validatorsChanged(h, res) {
			// Not a real change between the reads: the difference is noise.
			n.wire = max(n.wire, d)
			grew := false
			for _, p := range fingerprint.MaskOf(n.first, res.page) {
				if len(n.mask) < fingerprint.MaxMask && !n.mask.Has(p.Sig) {
					n.mask = append(n.mask, p)
					grew = true
				}
			}
			if grew {
				n.version++
				c.retakeHeld(n)
			}
			a, okA := n.first.SumMasked(n.mask)
			b, okB := res.page.SumMasked(n.mask)
			if okA && okB {
				n.local = max(n.local, fingerprint.Distance(a, b))
			}
			n.probes++
		}
		n.first, n.probing = nil, nil
	} else if n.probes < noiseProbes && !st.checking && !st.sampling && (st.Polls > 0 || h.fit.sent >= noiseAfter) &&
		(n.first == nil || res.End.Sub(n.since) > noiseProbeTimeout) {
		n.first, n.firstFP, n.probing, n.since = res.page, res.Fingerprint, st, res.End
		n.firstETag, n.firstLM = res.ETag, res.LastModified
		again = true
	}
	res.Local, res.HasLocal = res.page.SumMasked(n.mask)
	if n.probes >= noiseProbes {
		c.releaseHeld(n)
	} else if !again {
		c.holdRead(n, st, res.page, res.End)
	}
	return again
}

// holdRead keeps a page read while the host's noise is unknown, in place
// of its URL's earlier read. c.mu held.
func (c *Crawler) holdRead(n *hostNoise, st *URLState, page *fingerprint.Builder, now time.Time) {
	for i := range n.held {
		if n.held[i].st == st {
			if c.noiseHeldFeatures-n.held[i].page.Size()+page.Size() <= maxHeldFeatures {
				c.noiseHeldFeatures += page.Size() - n.held[i].page.Size()
				n.held[i].page = page
			} else {
				c.noiseHeldFeatures -= n.held[i].page.Size()
				c.noiseHeld--
				n.held = slices.Delete(n.held, i, i+1)
				if len(n.held) == 0 {
					delete(c.noiseHolders, n)
				}
			}
			return
		}
	}
	room := func() bool {
		return c.noiseHeld < maxHeldReads && c.noiseHeldFeatures+page.Size() <= maxHeldFeatures
	}
	if len(n.held) >= noiseAfter {
		return
	}
	if !room() {
		// Hosts that never learnt their noise in noiseProbeTimeout (gone,
		// excluded, or changing at every read) give theirs back.
		for m := range c.noiseHolders {
			if now.Sub(m.heldSince) > noiseProbeTimeout {
				c.releaseHeld(m)
			}
		}
		if !room() {
			return
		}
	}
	if len(n.held) == 0 {
		n.heldSince = now
		if c.noiseHolders == nil {
			c.noiseHolders = map[*hostNoise]bool{}
		}
		c.noiseHolders[n] = true
	}
	n.held = append(n.held, heldRead{st, page})
	c.noiseHeld++
	c.noiseHeldFeatures += page.Size()
}

// retakeHeld takes the own fingerprints of the held pages again with the
// grown mask: those the previous mask took (a URL read since, with a
// 304, keeps its page). c.mu held.
func (c *Crawler) retakeHeld(n *hostNoise) {
	for _, r := range n.held {
		if !r.st.hasOwnFP || r.st.ownMaskVer != n.version-1 {
			continue
		}
		if fp, ok := r.page.SumMasked(n.mask); ok {
			r.st.ownFP, r.st.ownMaskVer = fp, n.version
		}
	}
}

// releaseHeld frees the host's held pages. c.mu held.
func (c *Crawler) releaseHeld(n *hostNoise) {
	for _, r := range n.held {
		c.noiseHeldFeatures -= r.page.Size()
	}
	c.noiseHeld -= len(n.held)
	n.held = nil
	delete(c.noiseHolders, n)
}
