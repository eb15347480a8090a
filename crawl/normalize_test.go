package crawl

import (
	"net/url"
	"strings"
	"testing"
)

func TestNormalize(t *testing.T) {
	base, _ := url.Parse("http://Example.COM/a/b/c.html?x=1")
	for _, tt := range []struct {
		name, in, want string
	}{
		{"absolute, case", "HTTP://WWW.Example.ORG/Path", "http://www.example.org/Path"},
		{"default port", "http://a.example:80/x", "http://a.example/x"},
		{"https default port", "https://a.example:443/x", "https://a.example/x"},
		{"other port kept", "http://a.example:8080/x", "http://a.example:8080/x"},
		{"fragment dropped", "http://a.example/x#top", "http://a.example/x"},
		{"empty path", "http://a.example", "http://a.example/"},
		{"trailing dot host", "http://a.example./x", "http://a.example/x"},
		{"user info dropped", "http://u:p@a.example/x", "http://a.example/x"},
		{"relative", "d.html", "http://example.com/a/b/d.html"},
		{"dot segments", "../../x/./y/../z", "http://example.com/x/z"},
		{"too many ..", "/../../x", "http://example.com/x"},
		{"unreserved escape decoded", "http://a.example/%7Euser/%41", "http://a.example/~user/A"},
		{"reserved escape upper-cased", "http://a.example/a%2fb%3a", "http://a.example/a%2Fb%3A"},
		{"session query removed", "http://a.example/p?id=3&PHPSESSID=abc&x=y", "http://a.example/p?id=3&x=y"},
		{"only session query", "http://a.example/p?jsessionid=1", "http://a.example/p"},
		{"session path param", "http://a.example/p;jsessionid=ABC?q=1", "http://a.example/p?q=1"},
		{"empty query", "http://a.example/p?", "http://a.example/p"},
		{"idna", "http://BÜCHER.example/", "http://xn--bcher-kva.example/"},
		{"ipv6", "http://[::1]:80/x", "http://[::1]/x"},
		{"protocol-relative", "//other.example/y", "http://other.example/y"},
		{"spaces trimmed", "  /s  ", "http://example.com/s"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			got, err := Normalize(base, tt.in)
			if err != nil || got != tt.want {
				t.Fatalf("Normalize(%q) = %q, %v; want %q", tt.in, got, err, tt.want)
			}
		})
	}
	for _, bad := range []string{"mailto:a@b", "javascript:alert(1)", "ftp://x/", "http://", "http://%zz/"} {
		if got, err := Normalize(nil, bad); err == nil {
			t.Errorf("Normalize(%q) = %q, want an error", bad, got)
		}
	}
}

// A page's links through one memo of the last host: each as Normalize
// alone has it, an IDNA host and a refused one among them.
func TestNormalizeWithTheHostMemo(t *testing.T) {
	base, _ := url.Parse("http://bücher.example/a/")
	var memo hostMemo
	for _, ref := range []string{"x", "http://BÜCHER.example/y", "//a-.example/z", "//a-.example/z2", "http://other.example/", "q",
		"http://xn--bcher-kva.example/", "//x--y.example/", "/a/./b/../c", "/.hidden/x", "./", "..", "http://a.example/p/."} {
		want, wantErr := Normalize(base, ref)
		got, err := normalize(base, ref, &memo)
		if got != want || (err == nil) != (wantErr == nil) {
			t.Errorf("%q: %q, %v with the memo; %q, %v without", ref, got, err, want, wantErr)
		}
	}
}

func FuzzNormalize(f *testing.F) {
	for _, s := range []string{"http://a.example/%7e/../x?sid=1&a=%2f#f", "HTTP://[::1]:80", "/x;jsessionid=1/y", "https://xn--bcher-kva.example./a/./b/"} {
		f.Add(s)
	}
	base, _ := url.Parse("http://base.example/dir/page")
	f.Fuzz(func(t *testing.T, in string) {
		once, err := Normalize(base, in)
		if err != nil {
			return
		}
		twice, err := Normalize(nil, once)
		if err != nil {
			t.Fatalf("normal form %q does not normalise: %v", once, err)
		}
		if twice != once {
			t.Fatalf("not idempotent: %q -> %q -> %q", in, once, twice)
		}
		// With the memo of a page's last host, after another host and
		// after this one: the same.
		var memo hostMemo
		for _, first := range []string{"http://Other.example./x", in} {
			_, _ = normalize(base, first, &memo)
			if m, err := normalize(base, in, &memo); m != once || err != nil {
				t.Fatalf("with the memo after %q: %q, %v; without: %q", first, m, err, once)
			}
		}
		if !strings.HasPrefix(once, "http://") && !strings.HasPrefix(once, "https://") {
			t.Fatalf("normal form %q is not http(s)", once)
		}
	})
}

// A page's links through its pageBase are what Normalize makes of them,
// on bases the fast join takes and bases it leaves to the general way.
func FuzzNormalizeLink(f *testing.F) {
	for _, s := range []string{"a.html", "/p/12.html", "dir/x", "/", "a//b", "~u/x-y_z.html", "//other.example/x", "./x", "../x", "a/..", "x?y=1", "x#f", " /s ", "%41", "a;jsessionid=1", "mailto:x", "A:b",
		"http://site.example/a/b", "https://site.example/x?p=1", "http://site.example:80/x", "http://site.example.evil/x", "HTTP://SITE.example/x",
		"https://xn--bcher-kva.example/x#top", "#top", "?", "?q=1&sid=2", "#%zz", "x?a=%zz&b", "x?a b", "/p?PHPSESSID=1&x=1#f", "//site.example/x",
		"https://other.example/a/b?x=1#f", "http://127.0.0.1/p/1.html", "https://-a.example/x", "http://a--b.example/", "https://xn--zz.example/x", "http://other.example./x", "https://other.example"} {
		f.Add(s, 0)
	}
	bases := []string{"http://Site.Example:80/dir/page.html", "http://site.example", "https://bücher.example/a/b/", "http://site.example/%7Ea/b", "http://site.example/a/./b", "http://u@site.example/x?q=1#f", "http://site.example./a-b/c~d"}
	f.Fuzz(func(t *testing.T, ref string, bi int) {
		base, err := url.Parse(bases[uint(bi)%uint(len(bases))])
		if err != nil {
			t.Fatal(err)
		}
		want, wantErr := Normalize(base, ref)
		got, err := newPageBase(base).normalize(ref)
		if got != want || (err == nil) != (wantErr == nil) {
			t.Fatalf("%q on %v: %q, %v; Normalize: %q, %v", ref, base, got, err, want, wantErr)
		}
	})
}

// The links most pages are made of take the short way (pageBase.join),
// and give what Normalize gives; the others are left to Normalize.
func TestPageBaseJoinsCommonLinks(t *testing.T) {
	base, _ := url.Parse("https://example.org/blog/2024/post.html?lang=en")
	pb := newPageBase(base)
	for _, c := range []struct {
		ref   string
		short bool
	}{
		{"/wiki/Page", true}, {"page-2.html", true}, {"https://example.org/2020/01/post/", true},
		{"https://example.org/?p=123", true}, {"page.html?x=1&b=2#frag", true}, {"#comments", true},
		{"?replytocom=5", true}, {"/feed/?PHPSESSID=abc&x=1", true},
		{"https://other.example/x", true}, {"http://cdn.example.net/lib.js?ver=6.4", true}, {"https://xn--bcher-kva.example/b", true},
		{"https://Other.example/x", false}, {"https://other.example:8080/x", false}, {"https://u@other.example/x", false},
		{"https://other.example", false}, {"https://xn--zz.example/x", false}, {"../up.html", false}, {"HTTPS://EXAMPLE.org/x", false},
		{"https://example.org:443/x", false}, {"/a%20b", false}, {"x#%zz", false}, {"mailto:a@example.org", false},
	} {
		want, wantErr := Normalize(base, c.ref)
		got, short := pb.join(c.ref)
		if short != c.short {
			t.Errorf("%q: short way %v, want %v", c.ref, short, c.short)
		}
		if short && (got != want || wantErr != nil) {
			t.Errorf("%q: %q by the short way, Normalize gives %q (%v)", c.ref, got, want, wantErr)
		}
		if n, err := pb.normalize(c.ref); n != want || (err == nil) != (wantErr == nil) {
			t.Errorf("%q: normalize gives %q (%v), Normalize %q (%v)", c.ref, n, err, want, wantErr)
		}
	}
}
