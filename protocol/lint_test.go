package protocol

import (
	"context"
	"fmt"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/cocrawl/cocrawl/webevents"
)

func TestLintCleanPeer(t *testing.T) {
	st := webevents.NewMemStore()
	st.Record(dayEvents(testDay, 20, 0))
	st.Record(dayEvents(testDay-2, 20, 100))
	_, ts := newTestServer(t, st)
	l := &Linter{Client: NewHTTPClient(ClientOptions{AllowPrivate: true}), Now: clockAt(testDay)}
	v, err := l.Lint(context.Background(), ts.URL+"/robots.shr")
	if err != nil || len(v) != 0 {
		t.Fatalf("clean peer: %v %v", v, err)
	}
}

func TestLintFindsViolations(t *testing.T) {
	peer := &thesisPeer{files: map[string][]byte{}}
	ts := httptest.NewServer(peer)
	defer ts.Close()
	peer.files["/robots.shr"] = []byte("version: 1.0\ncrawler: nohostport\nrepository: /s/\n")
	wrongDay := dayEvents(testDay-1, 1, 0)[0]
	peer.files[fmt.Sprintf("/s/%d.dat", testDay)] = append(webevents.AppendRecord(nil, &wrongDay), "url: http://x/\nstat: Z\n\n"...)
	l := &Linter{Client: NewHTTPClient(ClientOptions{AllowPrivate: true}), Now: clockAt(testDay)}
	v, err := l.Lint(context.Background(), ts.URL+"/robots.shr")
	if err != nil {
		t.Fatal(err)
	}
	all := strings.Join(v, "\n")
	for _, want := range []string{"crawler \"nohostport\"", "not an absolute URL", "lpd", "line 8", "no ETag"} {
		if !strings.Contains(all, want) {
			t.Errorf("no violation mentioning %q in:\n%s", want, all)
		}
	}
}
