package testweb

import (
	"io"
	"net/http"
	"strings"
	"testing"
)

func get(t *testing.T, url string, hdr ...string) (*http.Response, string) {
	t.Helper()
	req, _ := http.NewRequest("GET", url, nil)
	for i := 0; i+1 < len(hdr); i += 2 {
		req.Header.Set(hdr[i], hdr[i+1])
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	b, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	return resp, string(b)
}

func TestWeb(t *testing.T) {
	w, err := Start(Config{Hosts: 3, PagesPerHost: 4, RobotsEvery: 3, CrawlDelay: 2e9, RobotsDownHost: false, Traps: true, NoLastModifiedEvery: 2})
	if err != nil {
		t.Fatal(err)
	}
	defer w.Close()
	h0, h1, h2 := w.Hosts()[0], w.Hosts()[1], w.Hosts()[2]
	_, home := get(t, h0.URL+"/")
	if !strings.Contains(home, `href="/p/3.html"`) || !strings.Contains(home, `/cal/0`) {
		t.Fatalf("home page: %s", home)
	}
	page := h0.URL + "/p/1.html"
	resp, body := get(t, page)
	tag := resp.Header.Get("ETag")
	if resp.StatusCode != 200 || tag == "" || resp.Header.Get("Last-Modified") == "" || !strings.Contains(body, "version 1") {
		t.Fatalf("page: %d %v", resp.StatusCode, resp.Header)
	}
	if resp, _ := get(t, page, "If-None-Match", tag); resp.StatusCode != 304 {
		t.Fatalf("conditional: %d", resp.StatusCode)
	}
	if r, _ := get(t, h1.URL+"/p/0.html"); r.Header.Get("Last-Modified") != "" {
		t.Fatal("host 1 should send no Last-Modified")
	}
	w.Update(page)
	if resp, body := get(t, page, "If-None-Match", tag); resp.StatusCode != 200 || !strings.Contains(body, "version 2") {
		t.Fatalf("after update: %d", resp.StatusCode)
	}
	created := w.Create(0)
	if _, home := get(t, h0.URL+"/"); !strings.Contains(home, created[len(h0.URL):]) {
		t.Fatal("home page does not list the created page")
	}
	w.Delete(page)
	if resp, _ := get(t, page); resp.StatusCode != 404 && resp.StatusCode != 410 {
		t.Fatalf("deleted page: %d", resp.StatusCode)
	}
	tr := w.Truth()
	if tr[page].Live || tr[page].Version != 2 || !tr[created].Live || tr[h0.URL+"/"].Version != 3 {
		t.Fatalf("truth: page %+v created %+v home %+v", tr[page], tr[created], tr[h0.URL+"/"])
	}
	if _, r := get(t, h2.URL+"/robots.txt"); !strings.Contains(r, "Disallow: /private/") || !strings.Contains(r, "Crawl-delay: 2") {
		t.Fatalf("robots: %q", r)
	}
	if _, b := get(t, h0.URL+"/cal/41"); !strings.Contains(b, "/cal/42") {
		t.Fatal("calendar trap")
	}
	if n := len(h0.Log()); n != 7 || h0.MaxConcurrent() != 1 {
		t.Fatalf("log has %d requests, max concurrency %d", n, h0.MaxConcurrent())
	}
	if s := w.Stats(); s.Updates != 1 || s.Creates != 1 || s.Deletes != 1 {
		t.Fatalf("stats %+v", s)
	}
}
