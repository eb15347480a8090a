package crawl

import (
	"fmt"
	"net/url"
	"strings"
	"testing"

	"golang.org/x/net/html"
	"golang.org/x/net/html/atom"
)

func TestExtractLinks(t *testing.T) {
	base, _ := url.Parse("http://site.example/dir/page.html")
	for _, tt := range []struct {
		name, doc string
		want      []string
		noFollow  bool
		noIndex   bool
	}{
		{"anchors and areas", `<a href="a.html">A</a><AREA HREF="/b">`, []string{"http://site.example/dir/a.html", "http://site.example/b"}, false, false},
		{"frames", `<frameset><frame src="f1"><iframe src="//cdn.example/i"></iframe>`, []string{"http://site.example/dir/f1", "http://cdn.example/i"}, false, false},
		{"link alternate only", `<link rel="stylesheet" href="s.css"><link rel="Alternate" href="/feed">`, []string{"http://site.example/feed"}, false, false},
		{"base href", `<base href="http://other.example/x/"><a href="y">`, []string{"http://other.example/x/y"}, false, false},
		{"rel nofollow skipped", `<a rel="nofollow ugc" href="/no"><a href="/yes">`, []string{"http://site.example/yes"}, false, false},
		{"duplicates and fragments", `<a href="/p#1"><a href="/p#2"><a href="/P">`, []string{"http://site.example/p", "http://site.example/P"}, false, false},
		{"non-http skipped", `<a href="mailto:x@y"><a href="javascript:void(0)"><a href="/ok">`, []string{"http://site.example/ok"}, false, false},
		{"meta nofollow", `<meta name="robots" content="noindex, nofollow"><a href="/x">`, nil, true, true},
		{"meta none", `<META NAME="ROBOTS" CONTENT="NONE"><a href="/x">`, nil, true, true},
		{"malformed markup", `<a href='/q1'><a href=/q2 ><a href="/q3`, []string{"http://site.example/q1", "http://site.example/q2"}, false, false},
		{"repeated attributes: the first counts", `<a href="/first" HREF="/second" rel="x" rel="nofollow"><a href="" href="/empty">`, []string{"http://site.example/first"}, false, false},
		{"unbalanced tags", `<small><a HREF="/u">x</SMALL></a>`, []string{"http://site.example/u"}, false, false},
	} {
		t.Run(tt.name, func(t *testing.T) {
			l, err := ExtractLinks(strings.NewReader(tt.doc), base)
			if err != nil {
				t.Fatal(err)
			}
			if fmt.Sprint(l.URLs) != fmt.Sprint(tt.want) || l.NoFollow != tt.noFollow || l.NoIndex != tt.noIndex {
				t.Fatalf("got %v nofollow=%v noindex=%v, want %v %v %v", l.URLs, l.NoFollow, l.NoIndex, tt.want, tt.noFollow, tt.noIndex)
			}
		})
	}
}

func TestExtractLinksHugeTag(t *testing.T) {
	doc := `<a href="/ok"><a href="` + strings.Repeat("x", 2*maxTokenBytes)
	l, err := ExtractLinks(strings.NewReader(doc), nil)
	if err == nil {
		t.Fatal("an endless tag was accepted")
	}
	if len(l.URLs) != 0 { // base is nil: the relative link cannot resolve
		t.Logf("links before the error: %v", l.URLs)
	}
}

func TestExtractLinksCapped(t *testing.T) {
	var b strings.Builder
	for i := range MaxLinksPerPage + 100 {
		fmt.Fprintf(&b, `<a href="/%d">`, i)
	}
	base, _ := url.Parse("http://a.example/")
	l, err := ExtractLinks(strings.NewReader(b.String()), base)
	if err != nil || len(l.URLs) != MaxLinksPerPage {
		t.Fatalf("%d links, %v; want %d", len(l.URLs), err, MaxLinksPerPage)
	}
}

func FuzzExtractLinks(f *testing.F) {
	f.Add(`<base href="/b/"><a href="x">`)
	f.Add(`<a href="http://a.example/%zz"><iframe src="`)
	f.Add(`<meta name=robots content=nofollow>`)
	base, _ := url.Parse("http://fuzz.example/p")
	f.Fuzz(func(t *testing.T, doc string) {
		l, _ := ExtractLinks(strings.NewReader(doc), base)
		for _, u := range l.URLs {
			if n, err := Normalize(nil, u); err != nil || n != u {
				t.Fatalf("link %q is not in normal form (%q, %v)", u, n, err)
			}
		}
	})
}

// FuzzTagAtom checks that the atom read from a tag's raw bytes is the atom
// of the name the tokenizer itself gives, for every start and end tag of
// any document.
func FuzzTagAtom(f *testing.F) {
	for _, s := range []string{`<A HREF=x>`, `</a >`, `<br/>`, `<DiV class=c>t</DIV>`, "<p\x00>", "<ta\x00ble>",
		"<a\thref=x>", "<a\fb>", "</\x00>", `</ a>`, `<script>x</script >`, `<textarea>`, `<annotation-xml>`,
		`<svg><foreignObject></foreignObject></svg>`, `<` + strings.Repeat("a", 40) + `>`, `<!-- <a> -->`, `</>`} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, doc string) {
		z := html.NewTokenizer(strings.NewReader(doc))
		for n := 0; n < 10000; n++ {
			tt := z.Next()
			switch tt {
			case html.ErrorToken:
				return
			case html.StartTagToken, html.EndTagToken, html.SelfClosingTagToken:
				raw := append([]byte(nil), z.Raw()...)
				got := tagAtom(z.Raw())
				name, _ := z.TagName()
				if want := atom.Lookup(name); got != want {
					t.Fatalf("tag %q: atom %v from its raw bytes, %v from the tokenizer's name %q", raw, got, want, name)
				}
			}
		}
	})
}
