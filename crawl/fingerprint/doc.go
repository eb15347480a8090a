// Package fingerprint reduces an HTML page to a 64-bit simhash of its
// visible text without boilerplate, so that two polls of a page can be
// compared by what a reader sees rather than by their bytes.
//
// Why: on the real web a page's bytes change at every response while its
// content does not: a "generated at" time, a CSRF token, a box of related
// links that rotates, session ids in URLs. A digest of the bytes calls
// every such response an UPDATE (issue "web-events that are true": 92% of
// the update events on such pages were false). The fingerprint keeps only
// the text a reader sees as the page's content:
//
//   - text inside script, style, noscript, template, svg, math, iframe,
//     object, select and button is not text a reader reads as content;
//   - header, footer, nav, aside and form, and elements whose role is
//     navigation, banner, contentinfo or complementary, are the site's
//     template (Kohlschütter et al.'s boilerplate), the same on every page
//     of a host, and where template noise lives;
//   - attribute values (a CSRF token in a hidden input, a session id in a
//     link) are never text;
//   - a block of text that is mostly link text (a list of related links)
//     is left out when the page has enough other text (50 words), so an
//     index page made of links keeps its links.
//
// What is left is split into words (letters and digits, lower-cased), and
// every three consecutive words in a block make a feature; a 64-bit
// simhash of the features (Charikar 2002; Manku, Jain and Das Sarma, WWW
// 2007) gives pages whose text differs a little fingerprints that differ
// in a few bits, and pages whose text differs by a third about 15 to 20 of
// 64 bits apart. Same tells whether two fingerprints are one version.
//
// Written here rather than taken from a module: the Go simhash packages
// (go-dedup/simhash, mfonda/simhash) hash a document's words as one bag,
// with no notion of an HTML block, link text or boilerplate, and the sum
// itself is a few dozen lines (it counts eight bits of a feature with one
// addition; fingerprints are pinned by TestGoldenFingerprints, since every
// peer must compute the same). A crawler calls Builder.Seal when a page is
// read, which hands the buffers its features grew in to the next page.
package fingerprint
