package fingerprint

import (
	"fmt"
	"math/rand/v2"
	"strings"
	"testing"
)

// goldenPages are pages whose fingerprints are pinned: every peer must
// compute the same fingerprint of the same page (the protocol's fp
// field), so a faster way to count them must give the same bits.
var goldenPages = []struct {
	name, page, path string
	want             uint64
}{
	{"prose", `<html><body><h1>On cooperation</h1><p>Independent crawlers that poll the same sites can share what they saw instead of polling it again, and each spends its budget where nobody else looks.</p><p>Second paragraph, with 12 numbers and 2026 dates.</p></body></html>`, "", 0xe383ad6668f04e9b},
	{"unicode", `<html><body><div class="x"><p>Größere Straßen führen über İstanbul und Ελλάδα; ΣΊΣΥΦΟΣ trägt den Stein, ça va.</p><p>数字１２３ and ５ more ٣ digits.</p></div></body></html>`, "", 0x999e227816eaa239},
	{"navigation", `<html><body><nav><a href="/a">Home</a></nav><div><a href="/1">one link</a> <a href="/2">two link</a> <a href="/3">three</a></div><div class="c">` + strings.Repeat("plain words of content here ", 20) + `</div><p>two words</p><p>x</p></body></html>`, "", 0xccb4449cf9bc39db},
	{"own-url", `<html><body><p>No page at /p/12.html here, sorry: the page p 12 html is not found on this site at all.</p></body></html>`, "/p/12.html", 0x9513fb3791655c50},
}

// The masked sums of each page: for each of its blocks in order, without
// that block's numbers, and (0 where no fingerprint is left) without the
// whole block.
var goldenMasked = map[string][][2]uint64{
	"prose":      {{0xe383ad6668f04e9b, 0xe383294660f04c8b}, {0xe383284068604e9b, 0x05b6d62aec0043d0}, {0xe383284068604e9b, 0x05b6d62aec0043d0}},
	"unicode":    {{0x8c4e223176e8e309, 0}, {0x8c4e223176e8e309, 0}},
	"navigation": {{0xccb4449cf9bc39db, 0xccb4449cf9bc39db}, {0xccb4449cf9bc39db, 0x9d84c02500481901}, {0xccb4449cf9bc39db, 0xccb4449cf9bc39db}, {0xccb4449cf9bc39db, 0xccb4449cf9bc39db}},
	"own-url":    {{0x073b7b35ade01cb4, 0}},
}

func TestGoldenFingerprints(t *testing.T) {
	for _, g := range goldenPages {
		fp, ok, err := Of(strings.NewReader(g.page), g.path)
		if err != nil || !ok {
			t.Fatalf("%s: %v %v", g.name, ok, err)
		}
		if fp != g.want {
			t.Errorf("%s: fingerprint %#016x, want %#016x", g.name, fp, g.want)
		}
		b := read(t, g.page)
		want := goldenMasked[g.name]
		if len(b.blocks) != len(want) {
			t.Fatalf("%s: %d blocks, want %d", g.name, len(b.blocks), len(want))
		}
		for i, bl := range b.blocks {
			if got := sum(t, b, Mask{{Sig: bl.sig, Numbers: true}}); got != want[i][0] {
				t.Errorf("%s block %d: without its numbers %#016x, want %#016x", g.name, i, got, want[i][0])
			}
			got, _ := b.SumMasked(Mask{{Sig: bl.sig}})
			if got != want[i][1] {
				t.Errorf("%s block %d: without it %#016x, want %#016x", g.name, i, got, want[i][1])
			}
		}
		// Asked again without a mask, after masked sums: the same.
		if again, _ := b.Sum(); again != fp && g.path == "" {
			t.Errorf("%s: Sum again %#016x, want %#016x", g.name, again, fp)
		}
	}
}

// The tally counts each bit as a loop over the 64 bits would, across the
// carries of its packed counters (255 features each).
func TestTallyCountsEveryBit(t *testing.T) {
	rng := rand.New(rand.NewPCG(1, 2))
	for _, n := range []int{1, 2, 254, 255, 256, 1000, 5000} {
		var tl tally
		var naive [64]int32
		for range n {
			f := rng.Uint64()
			if rng.IntN(4) == 0 {
				f &= 0xff00ff00ff00ff00 // skewed bits, so some counts pass half
			}
			tl.add(f)
			for i := range 64 {
				naive[i] += int32(f>>i&1)*2 - 1
			}
		}
		var want uint64
		for i := range 64 {
			if naive[i] > 0 {
				want |= 1 << i
			}
		}
		if got := tl.sum(); got != want {
			t.Errorf("%d features: %#016x, want %#016x", n, got, want)
		}
		for i := range 64 {
			if 2*tl.ones[i]-int32(n) != naive[i] {
				t.Fatalf("%d features: bit %d counted %d, want %d", n, i, 2*tl.ones[i]-int32(n), naive[i])
			}
		}
	}
}

// BenchmarkSum reports the cost of counting a page's fingerprint once it
// is read (Sum), and of counting it again with a mask of one place.
func BenchmarkSum(b *testing.B) {
	var sb strings.Builder
	for i := range 400 {
		fmt.Fprintf(&sb, `<div class="item"><p>Paragraph %d with bold text and a link to somewhere else entirely.</p></div>`, i)
	}
	page := read(b, "<html><body>"+sb.String()+"</body></html>")
	b.Run("Sum", func(b *testing.B) {
		for b.Loop() {
			page.summed = false
			page.Sum()
		}
	})
	b.Run("SumMasked", func(b *testing.B) {
		m := Mask{{Sig: page.blocks[3].sig, Numbers: true}}
		for b.Loop() {
			page.SumMasked(m)
		}
	})
}

// A sealed page keeps its fingerprints while later pages grow theirs in
// the buffers it handed on, and text read after Seal still counts.
func TestSealHandsOnItsBuffers(t *testing.T) {
	pages := make([]*Builder, len(goldenPages))
	for i, g := range goldenPages {
		pages[i] = read(t, g.page) // Read seals
	}
	for round := range 3 {
		for i, g := range goldenPages {
			if g.path != "" {
				continue
			}
			if fp, _ := pages[i].Sum(); fp != g.want {
				t.Fatalf("round %d, %s: %#016x, want %#016x", round, g.name, fp, g.want)
			}
			for j, bl := range pages[i].blocks {
				if got := sum(t, pages[i], Mask{{Sig: bl.sig, Numbers: true}}); got != goldenMasked[g.name][j][0] {
					t.Fatalf("round %d, %s block %d: %#016x", round, g.name, j, got)
				}
			}
		}
		for _, g := range goldenPages { // more pages through the pool
			read(t, strings.Repeat(g.page, round+2))
		}
	}
	var sealed, open Builder
	for _, b := range []*Builder{&sealed, &open} {
		b.Start(0, "", "", false)
		b.Text([]byte("one two three four"))
	}
	sealed.Seal()
	for _, b := range []*Builder{&sealed, &open} {
		b.Text([]byte("five six 7 eight"))
	}
	a, _ := sealed.Sum()
	o, _ := open.Sum()
	if a != o {
		t.Errorf("text after Seal: %#016x, without Seal %#016x", a, o)
	}
}
