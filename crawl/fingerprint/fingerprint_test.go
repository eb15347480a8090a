package fingerprint

import (
	"fmt"
	"io"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/cocrawl/cocrawl/internal/testweb"
)

func of(t testing.TB, s string) uint64 {
	t.Helper()
	fp, ok, err := Of(strings.NewReader(s), "")
	if err != nil || !ok {
		t.Fatalf("Of: %v %v", ok, err)
	}
	return fp
}

func ofPage(t testing.TB, s, path string) uint64 {
	t.Helper()
	fp, ok, err := Of(strings.NewReader(s), path)
	if err != nil || !ok {
		t.Fatalf("Of: %v %v", ok, err)
	}
	return fp
}

func get(t testing.TB, url string) string {
	t.Helper()
	resp, err := http.Get(url)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return string(b)
}

func read(t testing.TB, s string) *Builder {
	t.Helper()
	b, err := Read(strings.NewReader(s), "")
	if err != nil {
		t.Fatal(err)
	}
	return b
}

func sum(t testing.TB, b *Builder, m Mask) uint64 {
	t.Helper()
	fp, ok := b.SumMasked(m)
	if !ok {
		t.Fatal("no fingerprint")
	}
	return fp
}

// On a web whose dynamic pages carry template noise at every response,
// two responses of one version have one fingerprint, and every update (a
// third of the text rewritten) moves it beyond Near. Where the template's
// markup says where it is (header, aside, footer, form) the fingerprint
// alone ignores the noise; where it does not (plain divs), the mask that
// two reads of one page learn (MaskOf) does, on the host's other pages,
// and where the noise is a count inside every paragraph, the mask of
// those paragraphs' numbers.
func TestNoiseIgnoredChangesSeen(t *testing.T) {
	w, err := testweb.Start(testweb.Config{Hosts: 6, PagesPerHost: 20, Seed: 3,
		Kinds: []testweb.PageKind{testweb.Static, testweb.Dynamic, testweb.LastModifiedNow, testweb.WeakETagPerResponse, testweb.DynamicPlain, testweb.DynamicInline}})
	if err != nil {
		t.Fatal(err)
	}
	defer w.Close()
	for _, h := range w.Hosts() {
		// The mask from two reads of the host's first page.
		mask := MaskOf(read(t, get(t, h.URL+"/p/0.html")), read(t, get(t, h.URL+"/p/0.html")))
		var minChange, maxNoise, maxWire int = 64, 0, 0
		for i := 1; i < 20; i++ {
			u := fmt.Sprintf("%s/p/%d.html", h.URL, i)
			a, b := get(t, u), get(t, u)
			if (h.Kind() == testweb.Dynamic || h.Kind() == testweb.DynamicPlain || h.Kind() == testweb.DynamicInline) && a == b {
				t.Fatalf("%s: a dynamic page without noise", u)
			}
			ra, rb := read(t, a), read(t, b)
			maxWire = max(maxWire, Distance(sum(t, ra, nil), sum(t, rb, nil)))
			maxNoise = max(maxNoise, Distance(sum(t, ra, mask), sum(t, rb, mask)))
			w.Update(u)
			minChange = min(minChange, Distance(sum(t, rb, mask), sum(t, read(t, get(t, u)), mask)))
		}
		t.Logf("%s: %d places masked; noise at most %d bits (%d unmasked); an update at least %d bits", h.Kind(), len(mask), maxNoise, maxWire, minChange)
		if maxNoise > 0 {
			t.Errorf("%s: two responses of one version differ by %d bits", h.Kind(), maxNoise)
		}
		if h.Kind() != testweb.DynamicPlain && h.Kind() != testweb.DynamicInline && (maxWire > 0 || len(mask) > 0) {
			t.Errorf("%s: %d places masked, unmasked noise %d bits: the markup should have been enough", h.Kind(), len(mask), maxWire)
		}
		if minChange <= Near {
			t.Errorf("%s: an update moved the fingerprint by only %d bits (Near is %d)", h.Kind(), minChange, Near)
		}
	}
}

// A soft 404 page is far from the host's pages, and near the soft 404 of
// another missing path.
func TestSoft404Fingerprint(t *testing.T) {
	w, err := testweb.Start(testweb.Config{Hosts: 2, PagesPerHost: 10, Seed: 4,
		Kinds: []testweb.PageKind{testweb.Dynamic}, Deletions: []testweb.DeletionStyle{testweb.Soft404}})
	if err != nil {
		t.Fatal(err)
	}
	defer w.Close()
	h := w.Hosts()[0]
	nf := ofPage(t, get(t, h.URL+"/no-such-page-4711"), "/no-such-page-4711")
	nf2 := ofPage(t, get(t, h.URL+"/p/999.html"), "/p/999.html")
	page := ofPage(t, get(t, h.URL+"/p/3.html"), "/p/3.html")
	t.Logf("not found vs not found: %d bits; vs a page: %d", Distance(nf, nf2), Distance(nf, page))
	if Distance(nf, nf2) > Near || Distance(nf, page) < Far {
		t.Errorf("soft 404s %d bits apart, a page %d bits from them", Distance(nf, nf2), Distance(nf, page))
	}
}

func TestBoilerplateAndMarkup(t *testing.T) {
	body := "<p>The quick brown fox jumps over the lazy dog near the river bank today</p>"
	base := of(t, "<html><body>"+body+"</body></html>")
	for _, s := range []string{
		"<html><head><script>var t = 123456;</script><style>p{}</style></head><body>" + body + "</body></html>",
		"<html><body><header>Site generated 12:00</header>" + body + "<footer>at 12:01:02.123</footer></body></html>",
		"<html><body><nav>a b c d</nav>" + body + "<aside>related one two three</aside><form><input name=csrf value=zz9><button>Go now please</button></form></body></html>",
		"<html><body><div role=navigation>menu items here</div>" + body + "</body></html>",
		"<html><body><p>The quick <b>brown</b> fox jumps over the <a href=/x>lazy</a> dog near the river bank today</body></html>",
		"<HTML><BODY><P>THE QUICK BROWN FOX JUMPS OVER THE LAZY DOG NEAR THE RIVER BANK TODAY</BODY></HTML>",
	} {
		if d := Distance(base, of(t, s)); d > Near {
			t.Errorf("%d bits from the bare text: %s", d, s)
		}
	}
	if d := Distance(base, of(t, "<p>The quick brown fox jumps over the lazy cat near the river bank today</p>")); d <= Near {
		t.Errorf("a changed word moved a short text by %d bits only", d)
	}
	if _, ok, _ := Of(strings.NewReader("<html><body><img src=x></body></html>"), ""); ok {
		t.Error("a page without words has a fingerprint")
	}
}

// An index page made of links keeps its links; a page with text leaves
// its link lists out.
func TestLinkDenseBlocks(t *testing.T) {
	links := func(n int) string {
		var b strings.Builder
		b.WriteString("<ul>")
		for i := range n {
			fmt.Fprintf(&b, "<li><a href=/%d>Page number %d</a></li>", i, i)
		}
		return b.String() + "</ul>"
	}
	if Distance(of(t, links(10)), of(t, links(11))) <= Near {
		t.Error("an index page's new link was not seen")
	}
	text := "<p>" + strings.Repeat("river market station village church history ", 12) + "</p>"
	if d := Distance(of(t, text+links(10)), of(t, text+links(3))); d > Near {
		t.Errorf("a page's link list moved its fingerprint by %d bits", d)
	}
}

func TestFormatParse(t *testing.T) {
	for _, fp := range []uint64{0, 1, 0xdeadbeefcafef00d, ^uint64(0)} {
		s := Format(fp)
		if got, ok := Parse(s); !ok || got != fp {
			t.Errorf("Parse(%q) = %x, %v", s, got, ok)
		}
	}
	for _, s := range []string{"", "simhash64:", "simhash64:xyz", "simhash64:0123456789abcdef0", "md5:0123456789abcdef"} {
		if _, ok := Parse(s); ok {
			t.Errorf("Parse(%q) accepted", s)
		}
	}
}

func FuzzOf(f *testing.F) {
	f.Add("<p>a b c d</p>")
	f.Add("<div role=navigation><p>x<a>y</div></p><script>z")
	f.Add(strings.Repeat("<div>", 1000) + "words here and there")
	f.Fuzz(func(t *testing.T, s string) {
		start := time.Now()
		fp, ok, _ := Of(strings.NewReader(s), "/a/b?c")
		fp2, ok2, _ := Of(strings.NewReader(s), "/a/b?c")
		if fp != fp2 || ok != ok2 {
			t.Fatal("not deterministic")
		}
		// Two reads of one text teach no noise, and a mask of all its
		// places' numbers leaves a fingerprint or none, never a panic.
		a, errA := Read(strings.NewReader(s), "")
		b, errB := Read(strings.NewReader(s), "")
		if errA == nil && errB == nil {
			if m := MaskOf(a, b); len(m) != 0 {
				t.Fatalf("two reads of one text differ in %d places", len(m))
			}
			var m Mask
			for _, c := range a.blocks {
				m = append(m, Place{Sig: c.sig, Numbers: true})
			}
			a.SumMasked(m)
		}
		if time.Since(start) > 5*time.Second {
			t.Fatal("slow")
		}
	})
}

// A place's share of the page's words tells the template's small volatile
// box (a "generated at" line) from the content's paragraphs that carry a
// time of their own: the crawler masks the first, never the second.
func TestShareOfAVolatilePlace(t *testing.T) {
	page := func(at string) string {
		para := "the river rose again in the night and the town woke to water in the lower streets"
		return `<html><body><div class="meta">generated at ` + at + `</div>` +
			`<div class="para">` + para + ` seen ` + at + `</div>` +
			`<div class="para">` + para + ` reported ` + at + `</div>` +
			`<div class="para">` + para + ` noted ` + at + `</div></body></html>`
	}
	a, b := read(t, page("09:14:02")), read(t, page("09:14:03"))
	vol := Volatile(a, b)
	if len(vol) != 2 {
		t.Fatalf("%d volatile places, want 2 (meta and para)", len(vol))
	}
	small, large := 0, 0
	for _, p := range vol {
		if !p.Numbers {
			t.Errorf("a place whose words without digits are the same is not marked numbers-only")
		}
		switch s := b.Share(p.Sig); {
		case s < 0.1:
			small++
		case s > 0.8:
			large++
		default:
			t.Errorf("a place holds %.2f of the words", s)
		}
	}
	if small != 1 || large != 1 {
		t.Errorf("shares: %d small, %d large; want one of each", small, large)
	}
	if s := b.Share(12345); s != 0 {
		t.Errorf("a place not on the page holds %.2f of it", s)
	}
}
