package protocol

import (
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/cocrawl/cocrawl/webevents"
)

// The share port takes IndexNow submissions in both forms and answers
// with the protocol's codes; what it hands on is checked for form.
func TestIndexNowForm(t *testing.T) {
	var got []IndexNowSubmission
	var answer error
	srv, err := NewServer(webevents.NewMemStore(), ServerOptions{IndexNow: func(s IndexNowSubmission) error {
		got = append(got, s)
		return answer
	}})
	if err != nil {
		t.Fatal(err)
	}
	ts := httptest.NewServer(srv)
	defer ts.Close()
	post := func(body string) int {
		resp, err := http.Post(ts.URL+"/indexnow", "application/json; charset=utf-8", strings.NewReader(body))
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		return resp.StatusCode
	}
	if resp, _ := get(t, ts.URL+"/indexnow?url=https%3A%2F%2Fsite.example%2Fa&key=abcd1234"); resp.StatusCode != http.StatusAccepted {
		t.Errorf("GET: %d", resp.StatusCode)
	}
	if code := post(`{"host":"site.example","key":"abcd1234","keyLocation":"https://site.example/k.txt","urlList":["https://site.example/a","https://site.example/b"]}`); code != http.StatusAccepted {
		t.Errorf("POST: %d", code)
	}
	if len(got) != 2 || got[0].URLs[0] != "https://site.example/a" || got[1].KeyLocation != "https://site.example/k.txt" || len(got[1].URLs) != 2 {
		t.Fatalf("handed on %+v", got)
	}
	for body, want := range map[string]int{
		`{"host":"site.example","key":"short","urlList":["https://site.example/a"]}`:              http.StatusBadRequest,
		`{"host":"site.example","key":"abcd1234","urlList":[]}`:                                   http.StatusBadRequest,
		`{"host":"site.example","key":"abcd1234","urlList":["https://other.example/a"]}`:          http.StatusUnprocessableEntity,
		`{"host":"site.example","key":"abcd1234","urlList":["https://site.example.evil.test/a"]}`: http.StatusUnprocessableEntity,
		`not json`: http.StatusBadRequest,
		`{"host":"site.example","key":"abcd1234","urlList":["https://site.example/` + strings.Repeat("x", 2<<20) + `"]}`: http.StatusBadRequest,
	} {
		if code := post(body); code != want {
			t.Errorf("%.60s: %d, want %d", body, code, want)
		}
	}
	answer = ErrIndexNowScope
	if code := post(`{"key":"abcd1234","urlList":["https://site.example/a"]}`); code != http.StatusUnprocessableEntity {
		t.Errorf("out of scope: %d", code)
	}
	answer = ErrIndexNowBusy
	if code := post(`{"key":"abcd1234","urlList":["https://site.example/a"]}`); code != http.StatusTooManyRequests {
		t.Errorf("busy: %d", code)
	}
	plain, _ := NewServer(webevents.NewMemStore(), ServerOptions{})
	ts2 := httptest.NewServer(plain)
	defer ts2.Close()
	if resp, _ := get(t, ts2.URL+"/indexnow?url=https%3A%2F%2Fsite.example%2Fa&key=abcd1234"); resp.StatusCode != http.StatusForbidden {
		t.Errorf("a server without the hook: %d", resp.StatusCode)
	}
}
