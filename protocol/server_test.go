package protocol

import (
	"bytes"
	"compress/gzip"
	"context"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/cocrawl/cocrawl/webevents"
)

// dayEvents makes n valid events on day, with lpds inside it.
func dayEvents(day int64, n, from int) []webevents.Event {
	evs := make([]webevents.Event, n)
	for i := range evs {
		lpd := webevents.DayStart(day) + int64(from+i)%80000
		evs[i] = webevents.Event{
			URL: fmt.Sprintf("http://site%d.example/p/%d", (from+i)%20, from+i), Size: int64(500 + i),
			LMD: lpd - 3600, LPD: lpd, CID: "sharer.example:8080 cocrawl/1.1", Stat: webevents.Create,
		}
	}
	return evs
}

func newTestServer(t *testing.T, st ShareStore) (*Server, *httptest.Server) {
	t.Helper()
	srv, err := NewServer(st, ServerOptions{Control: ShareControl{Crawler: "sharer.example:8080 cocrawl/1.1", Contact: "ops@sharer.example"}})
	if err != nil {
		t.Fatal(err)
	}
	ts := httptest.NewServer(srv)
	t.Cleanup(ts.Close)
	return srv, ts
}

func get(t *testing.T, url string, hdr ...string) (*http.Response, []byte) {
	t.Helper()
	req, _ := http.NewRequest(http.MethodGet, url, nil)
	for i := 0; i+1 < len(hdr); i += 2 {
		req.Header.Set(hdr[i], hdr[i+1])
	}
	tr := &http.Transport{DisableCompression: true}
	resp, err := (&http.Client{Transport: tr}).Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return resp, b
}

func TestServerDayFile(t *testing.T) {
	st := webevents.NewMemStore()
	const day = 19700
	evs := dayEvents(day, 50, 0)
	if err := st.Record(evs); err != nil {
		t.Fatal(err)
	}
	_, ts := newTestServer(t, st)
	url := fmt.Sprintf("%s/share/%d.dat", ts.URL, day)

	var want bytes.Buffer
	w := NewDatWriter(&want)
	for i := range evs {
		w.Write(&evs[i])
	}
	w.Flush()

	resp, body := get(t, url)
	if resp.StatusCode != 200 || !bytes.Equal(body, want.Bytes()) {
		t.Fatalf("full: %d, %d bytes, want %d", resp.StatusCode, len(body), want.Len())
	}
	etag := resp.Header.Get("ETag")
	if etag == "" || resp.Header.Get("Last-Modified") == "" || resp.Header.Get("Content-Length") != fmt.Sprint(want.Len()) {
		t.Fatalf("headers: %v", resp.Header)
	}

	tests := []struct {
		name   string
		hdr    []string
		status int
		body   []byte
	}{
		{"if-none-match", []string{"If-None-Match", etag}, 304, nil},
		{"if-none-match other", []string{"If-None-Match", `"other"`}, 200, want.Bytes()},
		{"if-modified-since", []string{"If-Modified-Since", time.Now().Add(time.Hour).UTC().Format(http.TimeFormat)}, 304, nil},
		{"range mid-record", []string{"Range", "bytes=100-"}, 206, want.Bytes()[100:]},
		{"range at end", []string{"Range", fmt.Sprintf("bytes=%d-", want.Len())}, 416, nil},
		{"closed range ignored", []string{"Range", "bytes=0-10"}, 200, want.Bytes()},
		{"if-range mismatch sends whole", []string{"Range", "bytes=100-", "If-Range", `"old"`}, 200, want.Bytes()},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			resp, body := get(t, url, tt.hdr...)
			if resp.StatusCode != tt.status {
				t.Fatalf("status %d, want %d", resp.StatusCode, tt.status)
			}
			if tt.body != nil && !bytes.Equal(body, tt.body) {
				t.Fatalf("body %d bytes, want %d", len(body), len(tt.body))
			}
		})
	}

	t.Run("gzip", func(t *testing.T) {
		resp, body := get(t, url, "Accept-Encoding", "gzip")
		if resp.Header.Get("Content-Encoding") != "gzip" {
			t.Fatalf("no gzip: %v", resp.Header)
		}
		zr, err := gzip.NewReader(bytes.NewReader(body))
		if err != nil {
			t.Fatal(err)
		}
		plain, _ := io.ReadAll(zr)
		if !bytes.Equal(plain, want.Bytes()) {
			t.Fatal("gzip body differs")
		}
		t.Logf("day file: %d records, %d bytes plain (%.0f B/event), %d gzip (%.0f%%)",
			len(evs), want.Len(), float64(want.Len())/float64(len(evs)), len(body), 100*float64(len(body))/float64(want.Len()))
		// The gzip variant's tag revalidates too.
		resp, _ = get(t, url, "If-None-Match", resp.Header.Get("ETag"))
		if resp.StatusCode != 304 {
			t.Fatalf("gzip etag: %d", resp.StatusCode)
		}
	})

	t.Run("growth changes the etag and range fetches the rest", func(t *testing.T) {
		more := dayEvents(day, 5, 1000)
		st.Record(more)
		resp, body := get(t, url, "Range", fmt.Sprintf("bytes=%d-", want.Len()), "If-None-Match", etag)
		if resp.StatusCode != 206 || resp.Header.Get("ETag") == etag {
			t.Fatalf("status %d etag %s", resp.StatusCode, resp.Header.Get("ETag"))
		}
		got, _, err := decodeAll(t, bytes.NewReader(body), DatOptions{})
		if err != nil || len(got) != 5 || got[0] != more[0] {
			t.Fatalf("range gave %d records: %v", len(got), err)
		}
	})
}

func TestServerOtherResources(t *testing.T) {
	st := webevents.NewMemStore()
	_, ts := newTestServer(t, st)
	for _, tt := range []struct {
		path   string
		status int
		has    string
	}{
		{"/robots.shr", 200, "repository: " + ts.URL + "/share/"},
		{"/robots.txt", 200, "Disallow: /share/"},
		{"/share/19000.dat", 404, ""},
		{"/share/abc.dat", 404, ""},
		{"/share/-1.dat", 404, ""},
		{"/share/+5.dat", 404, ""},
		{"/share/99999999999999999999.dat", 404, ""},
		{"/elsewhere", 404, ""},
	} {
		resp, body := get(t, ts.URL+tt.path)
		if resp.StatusCode != tt.status || !strings.Contains(string(body), tt.has) {
			t.Errorf("%s: %d %q", tt.path, resp.StatusCode, body)
		}
	}
	resp, err := http.Post(ts.URL+"/robots.shr", "text/plain", nil)
	if err != nil || resp.StatusCode != 405 {
		t.Fatalf("POST: %v %v", resp.StatusCode, err)
	}
	// The robots.shr we serve parses and passes lint.
	_, body := get(t, ts.URL+"/robots.shr")
	sc, err := ParseShareControl(bytes.NewReader(body), Limits{})
	if err != nil || len(sc.Check(nil)) != 0 || sc.Version != CurrentVersion {
		t.Fatalf("served robots.shr: %+v %v %v", sc, err, sc.Check(nil))
	}
}

func TestNewServerRejectsBadRepository(t *testing.T) {
	for _, repo := range []string{"share", "/s?x=1"} {
		if _, err := NewServer(webevents.NewMemStore(), ServerOptions{Control: ShareControl{Repository: repo}}); err == nil {
			t.Errorf("repository %q accepted", repo)
		}
	}
	if _, err := NewServer(webevents.NewMemStore(), ServerOptions{Control: ShareControl{Version: "2.0"}}); err == nil {
		t.Error("version 2.0 accepted")
	}
}

// A client that never finishes its request headers is cut off.
func TestServerDropsSlowloris(t *testing.T) {
	srv, _ := NewServer(webevents.NewMemStore(), ServerOptions{})
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	hs := NewHTTPServer(ln.Addr().String(), srv, Timeouts{ReadHeader: 200 * time.Millisecond})
	go hs.Serve(ln)
	defer hs.Close()
	c, err := net.Dial("tcp", ln.Addr().String())
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	fmt.Fprint(c, "GET /robots.shr HTTP/1.1\r\nHost: x\r\n") // and never the blank line
	c.SetReadDeadline(time.Now().Add(10 * time.Second))
	_, err = io.ReadAll(c)
	if ne, ok := err.(net.Error); ok && ne.Timeout() {
		t.Fatal("the server still held the connection after 10 s")
	}
}

// Issue 18, item 3: one client cannot hold every stream: past its own
// share it gets 503 while another client is still served.
func TestStreamsPerClient(t *testing.T) {
	st := webevents.NewMemStore()
	st.Record(dayEvents(testDay, 200_000, 0)) // about 27 MB: more than socket buffers hold, so a client that reads nothing holds its stream
	srv, err := NewServer(st, ServerOptions{MaxStreams: 8, MaxStreamsPerClient: 1,
		ClientKey: func(r *http.Request) string { return r.Header.Get("X-Client") }})
	if err != nil {
		t.Fatal(err)
	}
	ts := httptest.NewServer(srv)
	defer ts.Close()
	client := &http.Client{Transport: &http.Transport{DisableCompression: true}}
	get := func(who string) *http.Response {
		req, _ := http.NewRequest(http.MethodGet, fmt.Sprintf("%s/share/%d.dat", ts.URL, testDay), nil)
		req.Header.Set("X-Client", who)
		resp, err := client.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		return resp
	}
	held := get("a") // its body is not read: the server blocks writing it
	defer held.Body.Close()
	if held.StatusCode != 200 {
		t.Fatalf("first stream: %d", held.StatusCode)
	}
	second := get("a")
	second.Body.Close()
	if second.StatusCode != http.StatusServiceUnavailable || second.Header.Get("Retry-After") == "" {
		t.Errorf("a second stream for the same client: %d", second.StatusCode)
	}
	other := get("b")
	io.Copy(io.Discard, other.Body)
	other.Body.Close()
	if other.StatusCode != 200 {
		t.Errorf("another client: %d", other.StatusCode)
	}
}

// slowStore blocks reading a day until released, and says when a read
// has begun.
type slowStore struct {
	*webevents.MemStore
	release, reading chan struct{}
}

func (s slowStore) ReadDay(day, from int64, fn func(int64, webevents.Event) error) error {
	select {
	case s.reading <- struct{}{}:
	default:
	}
	<-s.release
	return s.MemStore.ReadDay(day, from, fn)
}

// Issue 18, item 13 (in part): the owner of the store can wait for every
// request still being served before it closes the store.
func TestServerWaitsForRequests(t *testing.T) {
	st := slowStore{webevents.NewMemStore(), make(chan struct{}), make(chan struct{}, 1)}
	st.Record(dayEvents(testDay, 3, 0))
	srv, err := NewServer(st, ServerOptions{})
	if err != nil {
		t.Fatal(err)
	}
	ts := httptest.NewServer(srv)
	defer ts.Close()
	go func() {
		if resp, err := http.Get(fmt.Sprintf("%s/share/%d.dat", ts.URL, testDay)); err == nil {
			resp.Body.Close()
		}
	}()
	<-st.reading // the request is in the store
	ctx, cancel := context.WithTimeout(context.Background(), 100*time.Millisecond)
	defer cancel()
	if err := srv.Wait(ctx); err == nil {
		t.Fatal("Wait returned while a request was reading the store")
	}
	close(st.release)
	ctx2, cancel2 := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel2()
	if err := srv.Wait(ctx2); err != nil {
		t.Fatalf("Wait after the request ended: %v", err)
	}
}
