package crawl

import (
	"net/url"
	"strings"
	"testing"
)

func FuzzRepeatedSegments(f *testing.F) {
	for _, s := range []string{"http://a.example/a/a/a/", "http://a.example/x/y/x?x/x/x", "http://a.example/%61/a/a", "http://a.example",
		"http://a.example/p#/p/p", "https://a.example:8080/" + strings.Repeat("s/", 20), "http://u@a.example/a/a", "http://a.example?q=/a/a"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, u string) {
		if _, err := url.Parse(u); err != nil {
			return // refused either way; the shortcut may count a broken URL's loop
		}
		if got, want := repeatedSegments(u), repeatedSegmentsParsed(u); got != want {
			t.Fatalf("%q: %d, by parsing %d", u, got, want)
		}
	})
}

// The host scope's key is the URL's host as url.Parse reads it, for every
// http(s) URL it reads.
func FuzzScopeKey(f *testing.F) {
	for _, s := range []string{"http://a.example/x", "https://A.example:8443?q", "http://[::1]:80/#f", "http://u@h.example/", "http://h%41.example/"} {
		f.Add(s)
	}
	c := &Crawler{cfg: Config{Scope: "host"}}
	f.Fuzz(func(t *testing.T, u string) {
		p, err := url.Parse(u)
		if err != nil || p.Scheme != "http" && p.Scheme != "https" || p.Opaque != "" {
			return
		}
		if got := c.scopeKey(u); got != p.Host {
			t.Fatalf("%q: %q, url.Parse %q", u, got, p.Host)
		}
	})
}
