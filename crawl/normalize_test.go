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
		if !strings.HasPrefix(once, "http://") && !strings.HasPrefix(once, "https://") {
			t.Fatalf("normal form %q is not http(s)", once)
		}
	})
}
