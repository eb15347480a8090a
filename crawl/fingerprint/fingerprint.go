package fingerprint

import (
	"fmt"
	"math/bits"
	"strconv"
	"strings"
	"sync"
	"unicode"
	"unicode/utf8"

	"golang.org/x/net/html/atom"
)

// Prefix names the algorithm in the protocol's fp field.
const Prefix = "simhash64:"

// Near is the distance (differing bits) at or below which two
// fingerprints are taken as one version: Manku et al. found 3 of 64 bits
// the threshold for near-duplicate web pages.
const Near = 3

// Far is the distance at or above which two fingerprints are surely two
// versions, whatever noise is left: a page whose text changed by a
// tenth is about 10 bits away, by a third 15 to 20.
const Far = 10

// Distance is the number of bits in which a and b differ.
func Distance(a, b uint64) int { return bits.OnesCount64(a ^ b) }

// Same says whether two fingerprints are of one version of a page.
func Same(a, b uint64) bool { return Distance(a, b) <= Near }

// Format writes a fingerprint as the protocol's fp field value.
func Format(fp uint64) string { return fmt.Sprintf("%s%016x", Prefix, fp) }

// Parse reads an fp field value; ok is false for another algorithm or a
// malformed value (a reader ignores those, as the protocol says).
func Parse(s string) (fp uint64, ok bool) {
	h, found := strings.CutPrefix(s, Prefix)
	if !found || len(h) != 16 {
		return 0, false
	}
	v, err := strconv.ParseUint(h, 16, 64)
	return v, err == nil
}

// MaxFeatures bounds the features one page adds, so a hostile page costs
// bounded time; text past it is not read.
const MaxFeatures = 200_000

// minContentWords is how many words of other text a page needs before its
// link-dense blocks are left out as navigation.
const minContentWords = 50

// Builder accumulates a page's text as an HTML tokenizer walks it: the
// caller reports start tags, end tags and text (crawl.ExtractLinks does,
// in the pass that finds the links). The zero value is ready.
type Builder struct {
	stack    []frame // open block elements
	skip     int     // open elements whose text is not content
	inLink   int     // open <a> elements
	cur      int     // 1 + the index of the block being read; 0: none
	blocks   []block // in document order
	feats    []uint64
	numeric  []uint64 // bit i: feats[i] holds a word with a digit
	features int
	// own holds the hashes of the words of the page's own URL; held the
	// words read that match its start so far (dropped when all match).
	own  []uint64
	held []heldWord
	// The fingerprint without a mask, once counted; add clears summed.
	sum            uint64
	hasSum, summed bool
	// scratch holds the buffers blocks, feats and numeric grow in until
	// Seal; sealed: they are the builder's own.
	scratch *scratch
	sealed  bool
}

// scratch is the buffers one page's features grow in, used again by the
// next page: growing them afresh for each page was the crawler's largest
// allocation (15% of its bytes).
type scratch struct {
	blocks  []block
	feats   []uint64
	numeric []uint64
}

var scratches = sync.Pool{New: func() any { return new(scratch) }}

// maxPooledFeatures bounds the buffers kept for the next page: a huge
// page's are left to the collector.
const maxPooledFeatures = 1 << 16

// Seal ends the read of a page: its features move into slices of their
// own size (what a crawler keeps of a page it holds, for its host's noise)
// and the buffers they grew in go to the next page's Builder. Calling it
// is optional (without it the buffers are the builder's); text reported
// after it still counts.
func (b *Builder) Seal() {
	if b.sealed {
		return
	}
	b.sealed = true
	sc := b.scratch
	if sc == nil {
		return
	}
	b.scratch = nil
	sc.blocks, sc.feats, sc.numeric = b.blocks[:0], b.feats[:0], b.numeric[:0]
	b.blocks = append([]block(nil), b.blocks...)
	b.feats = append([]uint64(nil), b.feats...)
	b.numeric = append([]uint64(nil), b.numeric...)
	if cap(sc.feats) <= maxPooledFeatures && cap(sc.blocks) <= maxPooledFeatures {
		scratches.Put(sc)
	}
}

type heldWord struct {
	h         uint64
	link, num bool
}

// maxIgnored bounds the words of a URL that are ignored.
const maxIgnored = 32

// IgnoreWordsOf leaves where a page's text quotes its own URL (its path
// and query, as a run of words) out of its text. A not-found page often
// echoes the path asked for ("no page at /p/12.html"): without it, the
// soft 404 pages of one host are one text, which the host's probe for a
// path that cannot exist learns. Every peer does the same, so fingerprints
// stay comparable.
func (b *Builder) IgnoreWordsOf(pathAndQuery string) {
	t := []byte(pathAndQuery)
	for len(t) > 0 && len(b.own) < maxIgnored {
		i := 0
		for i < len(t) && !isWordRune(rune(t[i])) {
			i++
		}
		j := i
		for j < len(t) && isWordRune(rune(t[j])) {
			j++
		}
		if j > i {
			b.own = append(b.own, hashLower(t[i:j]))
		}
		t = t[j:]
	}
}

type frame struct {
	a    atom.Atom
	skip bool
	sig  uint64 // the element's place in the page: its tag and class, and its parent's
}

// block is the text of one block element (up to the next block start or
// end): its features are feats[start:start+n-2], and its word counts.
type block struct {
	sig       uint64 // the innermost open element's (frame.sig)
	text      uint64 // a hash of its words in order
	prose     uint64 // the same of its words without a digit
	start     int
	words     int
	linkWords int
	w1, w2    uint64 // the last two words' hashes, for shingles
	d1, d2    bool   // whether they hold a digit
	anyNum    bool   // whether any word does
	n         int    // words so far in the shingle window
}

// maxDepth bounds the open-element stack (a hostile page can nest forever).
const maxDepth = 256

// Start reports a start tag with its role and class attributes (may be
// ""; only those of block elements matter: LandmarkHolder says which are
// read for role, BlockElement for class).
func (b *Builder) Start(a atom.Atom, role, class string, selfClosing bool) {
	if a == atom.A {
		if !selfClosing {
			b.inLink++
		}
		return
	}
	if inline(a) || void(a) || selfClosing {
		if a == atom.Br {
			b.endBlock() // a line break ends a shingle window
		}
		return
	}
	// Elements whose end tag HTML lets a page leave out close the one of
	// their kind that is open.
	if implicitEnd(a) && len(b.stack) > 0 && b.stack[len(b.stack)-1].a == a {
		b.pop()
	}
	if len(b.stack) >= maxDepth {
		return
	}
	skip := boilerplate(a) || boilerRole(role)
	var parent uint64
	if len(b.stack) > 0 {
		parent = b.stack[len(b.stack)-1].sig
	}
	b.stack = append(b.stack, frame{a: a, skip: skip, sig: mix(parent, uint64(a)^hashLower([]byte(class)))})
	if skip {
		b.skip++
	}
	b.endBlock()
}

// End reports an end tag.
func (b *Builder) End(a atom.Atom) {
	if a == atom.A {
		if b.inLink > 0 {
			b.inLink--
		}
		return
	}
	if inline(a) || void(a) {
		return
	}
	for i := len(b.stack) - 1; i >= 0; i-- {
		if b.stack[i].a == a {
			for len(b.stack) > i {
				b.pop()
			}
			break
		}
	}
	b.endBlock()
}

func (b *Builder) pop() {
	if b.stack[len(b.stack)-1].skip {
		b.skip--
	}
	b.stack = b.stack[:len(b.stack)-1]
	b.endBlock()
}

// Text reports text between tags (raw text of script and style too: it is
// skipped here).
func (b *Builder) Text(t []byte) {
	if b.skip > 0 || b.features >= MaxFeatures {
		return
	}
	for len(t) > 0 {
		// Next word: a run of letters and digits. ASCII, most of the
		// web's markup and much of its text, is read a byte at a time.
		i := 0
		for i < len(t) {
			if c := t[i]; c < utf8.RuneSelf {
				if asciiWord[c] {
					break
				}
				i++
				continue
			}
			r, n := utf8.DecodeRune(t[i:])
			if isWordRune(r) {
				break
			}
			i += n
		}
		t = t[i:]
		j := 0
		for j < len(t) {
			if c := t[j]; c < utf8.RuneSelf {
				if !asciiWord[c] {
					break
				}
				j++
				continue
			}
			r, n := utf8.DecodeRune(t[j:])
			if !isWordRune(r) {
				break
			}
			j += n
		}
		if j == 0 {
			return
		}
		b.word(t[:j])
		t = t[j:]
	}
}

// asciiWord[c] says whether the ASCII byte c is part of a word.
var asciiWord = func() (t [utf8.RuneSelf]bool) {
	for c := range t {
		t[c] = isWordRune(rune(c))
	}
	return t
}()

func isWordRune(r rune) bool {
	return r < utf8.RuneSelf && (r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z' || r >= '0' && r <= '9') ||
		r >= utf8.RuneSelf && (unicode.IsLetter(r) || unicode.IsDigit(r))
}

// word adds one word: its hash joins the shingle window, and each full
// window of three words is a feature of the current block.
func (b *Builder) word(w []byte) {
	h, num := hashLower(w), hasDigit(w)
	if len(b.own) > 0 {
		if h == b.own[len(b.held)] {
			b.held = append(b.held, heldWord{h, b.inLink > 0, num})
			if len(b.held) == len(b.own) {
				b.held = b.held[:0] // the URL quoted: left out
			}
			return
		}
		b.flushHeld()
		if h == b.own[0] {
			b.held = append(b.held, heldWord{h, b.inLink > 0, num})
			if len(b.own) == 1 {
				b.held = b.held[:0]
			}
			return
		}
	}
	b.add(h, b.inLink > 0, num)
}

// hasDigit says whether a word holds a digit: a count, a time, a token.
func hasDigit(w []byte) bool {
	ascii := true
	for _, c := range w {
		if c >= '0' && c <= '9' {
			return true
		}
		ascii = ascii && c < utf8.RuneSelf
	}
	if !ascii && utf8.Valid(w) {
		for _, r := range string(w) {
			if r >= utf8.RuneSelf && unicode.IsDigit(r) {
				return true
			}
		}
	}
	return false
}

// flushHeld adds the words held as a possible quote of the URL that were
// not one.
func (b *Builder) flushHeld() {
	for _, w := range b.held {
		b.add(w.h, w.link, w.num)
	}
	b.held = b.held[:0]
}

func (b *Builder) add(h uint64, link, num bool) {
	b.summed = false
	if b.scratch == nil && !b.sealed {
		b.scratch = scratches.Get().(*scratch)
		b.blocks, b.feats, b.numeric = b.scratch.blocks[:0], b.scratch.feats[:0], b.scratch.numeric[:0]
	}
	if b.cur == 0 {
		var sig uint64
		if len(b.stack) > 0 {
			sig = b.stack[len(b.stack)-1].sig
		}
		b.blocks = append(b.blocks, block{start: len(b.feats), sig: sig})
		b.cur = len(b.blocks)
	}
	c := &b.blocks[b.cur-1]
	c.text = mix(c.text, h)
	if !num {
		c.prose = mix(c.prose, h)
	}
	c.anyNum = c.anyNum || num
	c.words++
	if link {
		c.linkWords++
	}
	c.n++
	if c.n >= 3 {
		i := len(b.feats)
		b.feats = append(b.feats, mix(mix(c.w2, c.w1), h))
		if i%64 == 0 {
			b.numeric = append(b.numeric, 0)
		}
		if num || c.d1 || c.d2 {
			b.numeric[i/64] |= 1 << (i % 64)
		}
		b.features++
	}
	c.w2, c.w1 = c.w1, h
	c.d2, c.d1 = c.d1, num
}

// tally counts, for each of a fingerprint's 64 bits, the features that
// have it set. It counts eight bits with one addition: byte j of packed[k]
// counts bit 8k+j, and a byte holds 255 before it must be carried into
// ones. Eight times fewer additions than a loop over the bits, for the same
// counts (TestTallyCountsEveryBit; BenchmarkSum).
type tally struct {
	ones    [64]int32
	packed  [8]uint64
	pending int // features in packed
	n       int // features in all
}

// spread[b] has byte j set to bit j of b.
var spread = func() (t [256]uint64) {
	for b := range t {
		for j := range 8 {
			t[b] |= uint64(b>>j&1) << (8 * j)
		}
	}
	return t
}()

func (t *tally) add(f uint64) {
	for k := range t.packed {
		t.packed[k] += spread[byte(f>>(8*k))]
	}
	t.n++
	if t.pending++; t.pending == 255 {
		t.carry()
	}
}

func (t *tally) carry() {
	for k, p := range t.packed {
		for j := range 8 {
			t.ones[8*k+j] += int32(byte(p >> (8 * j)))
		}
	}
	t.packed, t.pending = [8]uint64{}, 0
}

// sum is the simhash: bit i is set where more than half the features
// have it.
func (t *tally) sum() uint64 {
	t.carry()
	var fp uint64
	for i, o := range t.ones {
		if 2*int(o) > t.n {
			fp |= 1 << i
		}
	}
	return fp
}

// Sum returns the page's fingerprint, and false when the page has no
// words to fingerprint (an image page, a frameset, an empty body).
func (b *Builder) Sum() (uint64, bool) { return b.SumMasked(nil) }

// SumMasked is Sum without the blocks whose place the mask holds (a
// host's template noise, learnt by Volatile), or, where the mask holds
// only a place's numbers, without their shingles that hold a digit. Its
// value is a peer's own: another peer may have learnt another mask.
func (b *Builder) SumMasked(m Mask) (uint64, bool) {
	b.flushHeld()
	content, masks := 0, false
	for i := range b.blocks {
		c := &b.blocks[i]
		if !linkDense(c) {
			content += c.words
		}
		if len(m) > 0 && !masks {
			masks, _ = m.at(c.sig)
		}
	}
	if !masks {
		// The page's whole fingerprint, which a crawler asks for again
		// with a mask that holds none of its places (every page of a host
		// without noise): counted once.
		if !b.summed {
			b.sum, b.hasSum = b.sumMasked(nil, content)
			b.summed = true
		}
		return b.sum, b.hasSum
	}
	return b.sumMasked(m, content)
}

// sumMasked is SumMasked once content, the words outside link-dense
// blocks, is counted.
func (b *Builder) sumMasked(m Mask, content int) (uint64, bool) {
	var v tally
	for i := range b.blocks {
		c := &b.blocks[i]
		if content >= minContentWords && linkDense(c) || c.n == 0 {
			continue
		}
		masked, numbers := m.at(c.sig)
		if masked && !numbers {
			continue
		}
		if c.n < 3 {
			// A block of one or two words is one feature of its own.
			if !numbers || !c.anyNum {
				v.add(mix(mix(c.w2, c.w1), uint64(c.n)))
			}
			continue
		}
		for i, f := range b.feats[c.start : c.start+c.n-2] {
			if j := c.start + i; numbers && b.numeric[j/64]>>(j%64)&1 == 1 {
				continue
			}
			v.add(f)
		}
	}
	if v.n == 0 {
		return 0, false
	}
	return v.sum(), true
}

func linkDense(c *block) bool { return c.linkWords*2 > c.words }

// hashLower is FNV-1a of the word in lower case: fixed, so every peer
// computes the same fingerprint of the same page.
func hashLower(w []byte) uint64 {
	h := uint64(14695981039346656037)
	for len(w) > 0 {
		if c := w[0]; c < utf8.RuneSelf {
			if c >= 'A' && c <= 'Z' {
				c += 'a' - 'A'
			}
			h = (h ^ uint64(c)) * 1099511628211
			w = w[1:]
			continue
		}
		r, n := utf8.DecodeRune(w)
		w = w[n:]
		r = unicode.ToLower(r)
		var buf [utf8.UTFMax]byte
		for _, c := range buf[:utf8.EncodeRune(buf[:], r)] {
			h = (h ^ uint64(c)) * 1099511628211
		}
	}
	return h
}

// mix combines two hashes into one well-spread 64-bit value (splitmix64's
// finaliser), so a shingle's bits are independent of its words' order
// statistics.
func mix(a, b uint64) uint64 {
	z := a*0x9e3779b97f4a7c15 + b + 0x632be59bd9b4e019
	z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9
	z = (z ^ (z >> 27)) * 0x94d049bb133111eb
	return z ^ (z >> 31)
}

// boilerplate elements hold no content of the page's own: code, embedded
// objects, controls, and the site's template.
func boilerplate(a atom.Atom) bool {
	switch a {
	case atom.Script, atom.Style, atom.Noscript, atom.Template, atom.Svg, atom.Math,
		atom.Iframe, atom.Object, atom.Select, atom.Button, atom.Textarea,
		atom.Header, atom.Footer, atom.Nav, atom.Aside, atom.Form:
		return true
	}
	return false
}

// boilerRole is an ARIA landmark role of the template.
func boilerRole(role string) bool {
	switch strings.ToLower(strings.TrimSpace(role)) {
	case "navigation", "banner", "contentinfo", "complementary", "search":
		return true
	}
	return false
}

// inline elements do not start a block: their text continues the one
// around them.
func inline(a atom.Atom) bool {
	switch a {
	case atom.B, atom.I, atom.Em, atom.Strong, atom.Span, atom.Code, atom.Small, atom.Abbr,
		atom.Sup, atom.Sub, atom.Time, atom.Label, atom.Mark, atom.U, atom.S, atom.Q, atom.Cite,
		atom.Kbd, atom.Var, atom.Samp, atom.Font, atom.Tt, atom.Big, atom.Strike, atom.Bdi, atom.Bdo,
		atom.Data, atom.Dfn, atom.Ins, atom.Del, atom.Nobr:
		return true
	}
	return false
}

// void elements have no end tag.
func void(a atom.Atom) bool {
	switch a {
	case atom.Area, atom.Base, atom.Br, atom.Col, atom.Embed, atom.Hr, atom.Img, atom.Input,
		atom.Link, atom.Meta, atom.Source, atom.Track, atom.Wbr, atom.Param:
		return true
	}
	return false
}

// implicitEnd elements may leave out their end tag before another of
// their kind.
func implicitEnd(a atom.Atom) bool {
	switch a {
	case atom.P, atom.Li, atom.Dt, atom.Dd, atom.Tr, atom.Td, atom.Th, atom.Option:
		return true
	}
	return false
}

// endBlock ends the current block of text: the next word starts another.
func (b *Builder) endBlock() {
	b.flushHeld()
	b.cur = 0
}

// Mask is a set of places in a host's pages (block signatures) whose text
// is noise: it differs between two responses of one version. The zero
// value masks nothing.
type Mask []Place

// A Place is one place of a host's pages that is noise: all of its text,
// or only its words with a digit (a count or a time inside the content:
// "read 1234 times").
type Place struct {
	Sig     uint64
	Numbers bool
}

// MaxMask bounds the places a mask holds.
const MaxMask = 32

// Has says whether the mask holds a place, whole or its numbers.
func (m Mask) Has(sig uint64) bool {
	masked, _ := m.at(sig)
	return masked
}

// at says whether the mask holds a place, and whether only its numbers.
func (m Mask) at(sig uint64) (masked, numbers bool) {
	for _, p := range m {
		if p.Sig == sig {
			return true, p.Numbers
		}
	}
	return false, false
}

// Volatile returns the places whose text differs between two reads of
// one version of a page (a and b), at most MaxMask: a host's template
// noise. Blocks that share a place are compared together; a place whose
// words without a digit are the same in both reads is noisy only in its
// numbers (Place.Numbers).
func Volatile(a, b *Builder) []Place {
	type sums struct{ text, prose uint64 }
	read := func(x *Builder) map[uint64]sums {
		m := map[uint64]sums{}
		for _, c := range x.blocks {
			s := m[c.sig] // order-free within a place
			s.text += mix(c.text, uint64(c.words))
			s.prose += mix(c.prose, 1)
			m[c.sig] = s
		}
		return m
	}
	sa, sb := read(a), read(b)
	var out []Place
	add := func(p Place) {
		if len(out) < MaxMask && !Mask(out).Has(p.Sig) {
			out = append(out, p)
		}
	}
	for sig, v := range sa {
		if w := sb[sig]; w.text != v.text {
			add(Place{sig, w.prose == v.prose})
		}
	}
	for sig := range sb {
		if _, ok := sa[sig]; !ok {
			add(Place{Sig: sig})
		}
	}
	return out
}

// Size is how many features the page's text holds: what keeping the
// Builder costs (about 8 bytes each, once sealed).
func (b *Builder) Size() int { return b.features }

// Share is the share of the page's words that sit at a place.
func (b *Builder) Share(sig uint64) float64 {
	at, all := 0, 0
	for _, c := range b.blocks {
		all += c.words
		if c.sig == sig {
			at += c.words
		}
	}
	if all == 0 {
		return 0
	}
	return float64(at) / float64(all)
}

// MaxMaskedShare is the largest share of a page's words a place masked
// whole may hold: a place that holds more is the page's content too, and
// masked whole its changes would go unseen.
const MaxMaskedShare = 0.3

// MaskOf is the mask two reads of one version of a page (a, b) teach:
// their volatile places, small ones whole, large ones by their numbers
// only where only those differed (a count inside each paragraph), other
// large ones not at all (left to an allowance of bits).
func MaskOf(a, b *Builder) Mask {
	var m Mask
	for _, p := range Volatile(a, b) {
		if b.Share(p.Sig) <= MaxMaskedShare {
			p.Numbers = false // whole: a token may lack digits next time
		} else if !p.Numbers {
			continue
		}
		m = append(m, p)
	}
	return m
}
