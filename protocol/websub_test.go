package protocol

import (
	"crypto/hmac"
	"crypto/sha256"
	"encoding/hex"
	"io"
	"net/http"
	"net/http/httptest"
	"net/url"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/cocrawl/cocrawl/webevents/storetest"
)

// callback is a WebSub subscriber for tests: it confirms what it asked
// for and keeps the notifications it gets.
type callback struct {
	mu      sync.Mutex
	confirm bool
	checks  []url.Values
	notes   []string
	sigs    []string
	links   []string
	at      []time.Time
}

func (c *callback) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if r.Method == http.MethodGet {
		c.checks = append(c.checks, r.URL.Query())
		if c.confirm {
			io.WriteString(w, r.URL.Query().Get("hub.challenge"))
			return
		}
		http.NotFound(w, r)
		return
	}
	b, _ := io.ReadAll(r.Body)
	c.notes = append(c.notes, string(b))
	c.sigs = append(c.sigs, r.Header.Get("X-Hub-Signature"))
	c.links = append(c.links, r.Header.Get("Link"))
	c.at = append(c.at, time.Now())
}

func (c *callback) notifications() []string {
	c.mu.Lock()
	defer c.mu.Unlock()
	return append([]string(nil), c.notes...)
}

// A subscriber of one site's change list, verified with a challenge, gets
// that site's changes pushed within a second, signed with its secret;
// after it unsubscribes it gets none. A callback that does not confirm
// gets nothing, and bad requests are refused.
func TestWebSubHub(t *testing.T) {
	st := storetest.OpenBadger(t)
	srv, err := NewServer(st, ServerOptions{WebSubClient: NewHTTPClient(ClientOptions{AllowPrivate: true})})
	if err != nil {
		t.Fatal(err)
	}
	ts := httptest.NewServer(srv)
	defer ts.Close()
	cb := &callback{confirm: true}
	cbs := httptest.NewServer(cb)
	defer cbs.Close()
	topic := ts.URL + "/resourcesync/changelist.xml?prefix=" + url.QueryEscape("http://a.example/")

	// The change list names its hub.
	r, _ := get(t, topic)
	if !strings.Contains(r.Header.Get("Link"), ts.URL+WebSubPath+`>; rel="hub"`) {
		t.Errorf("change list Link: %q", r.Header.Get("Link"))
	}
	form := func(mode, topic, callback, secret string) int {
		resp, err := http.PostForm(ts.URL+WebSubPath, url.Values{"hub.mode": {mode}, "hub.topic": {topic}, "hub.callback": {callback}, "hub.secret": {secret}, "hub.lease_seconds": {"5"}})
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		return resp.StatusCode
	}
	for _, bad := range [][3]string{{"subscribe", ts.URL + "/share/1.dat", cbs.URL}, {"watch", topic, cbs.URL}, {"subscribe", topic, "ftp://x/"}, {"subscribe", topic + "&prefix=x", cbs.URL}} {
		if code := form(bad[0], bad[1], bad[2], ""); code != http.StatusBadRequest {
			t.Errorf("%v: %d, want 400", bad, code)
		}
	}
	if code := form("subscribe", topic, cbs.URL+"/cb?x=1", "s3cret"); code != http.StatusAccepted {
		t.Fatalf("subscribe: %d", code)
	}
	waitFor(t, "the hub's subscription", func() bool { return srv.WebSubscriptions() == 1 })
	cb.mu.Lock()
	check := cb.checks[0]
	cb.mu.Unlock()
	if check.Get("hub.mode") != "subscribe" || check.Get("hub.topic") != topic || check.Get("hub.lease_seconds") != "60" || check.Get("x") != "1" {
		t.Errorf("intent check %v (the lease is clamped to a minute)", check)
	}
	time.Sleep(200 * time.Millisecond)
	at := time.Now()
	if err := st.Record(append(todayEvents(3, 0, "b.example"), todayEvents(2, 0, "a.example")...)); err != nil {
		t.Fatal(err)
	}
	waitFor(t, "a notification", func() bool { return len(cb.notifications()) > 0 })
	cb.mu.Lock()
	note, sig, link, delay := cb.notes[0], cb.sigs[0], cb.links[0], cb.at[0].Sub(at)
	cb.mu.Unlock()
	if strings.Count(note, "<url>") != 2 || strings.Contains(note, "b.example") || !strings.Contains(note, `capability="changelist-notification"`) {
		t.Errorf("notification:\n%s", note)
	}
	m := hmac.New(sha256.New, []byte("s3cret"))
	m.Write([]byte(note))
	if sig != "sha256="+hex.EncodeToString(m.Sum(nil)) || !strings.Contains(link, `rel="self"`) {
		t.Errorf("signature %q, Link %q", sig, link)
	}
	if delay > time.Second {
		t.Errorf("pushed %v after the record", delay)
	}
	// Unsubscribed: nothing more.
	if code := form("unsubscribe", topic, cbs.URL+"/cb?x=1", ""); code != http.StatusAccepted {
		t.Fatalf("unsubscribe: %d", code)
	}
	waitFor(t, "the unsubscription", func() bool { return srv.WebSubscriptions() == 0 })
	if err := st.Record(todayEvents(2, 10, "a.example")); err != nil {
		t.Fatal(err)
	}
	time.Sleep(500 * time.Millisecond)
	if n := len(cb.notifications()); n != 1 {
		t.Errorf("%d notifications after the unsubscription, want the 1 before", n)
	}
	// A callback that does not confirm is not subscribed.
	cb.mu.Lock()
	cb.confirm = false
	cb.mu.Unlock()
	form("subscribe", topic, cbs.URL+"/other", "")
	time.Sleep(500 * time.Millisecond)
	if n := srv.WebSubscriptions(); n != 0 {
		t.Errorf("%d subscriptions after an unconfirmed subscribe", n)
	}
}

func waitFor(t *testing.T, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("no %s in 10 s", what)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// A subscriber whose callback keeps failing is dropped after three tries
// of a notification; nothing is queued for it meanwhile.
func TestWebSubDropsAFailingSubscriber(t *testing.T) {
	st := storetest.OpenBadger(t)
	srv, err := NewServer(st, ServerOptions{WebSubClient: NewHTTPClient(ClientOptions{AllowPrivate: true}), Metrics: NewMetrics()})
	if err != nil {
		t.Fatal(err)
	}
	ts := httptest.NewServer(srv)
	defer ts.Close()
	var posts atomic.Int32
	cbs := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Method == http.MethodGet {
			io.WriteString(w, r.URL.Query().Get("hub.challenge"))
			return
		}
		posts.Add(1)
		http.Error(w, "down", http.StatusInternalServerError)
	}))
	defer cbs.Close()
	resp, err := http.PostForm(ts.URL+WebSubPath, url.Values{"hub.mode": {"subscribe"}, "hub.topic": {ts.URL + "/resourcesync/changelist.xml"}, "hub.callback": {cbs.URL}})
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	waitFor(t, "the subscription", func() bool { return srv.WebSubscriptions() == 1 })
	// The subscription's deliverer takes its starting point after the
	// subscription counts: records made before it are not its to send.
	// So record until a notification comes.
	for i := 0; posts.Load() == 0; i++ {
		if i == 100 {
			t.Fatal("no notification in 10 s")
		}
		if err := st.Record(todayEvents(1, i, "a.example")); err != nil {
			t.Fatal(err)
		}
		time.Sleep(100 * time.Millisecond)
	}
	waitFor(t, "the drop", func() bool { return srv.WebSubscriptions() == 0 && srv.metrics.streamDropsFor("slow") == 1 })
	if n := posts.Load(); n != deliveryTries {
		t.Errorf("%d posts of a failing notification, want %d tries", n, deliveryTries)
	}
}
