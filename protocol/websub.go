package protocol

import (
	"bufio"
	"bytes"
	"context"
	"crypto/hmac"
	"crypto/rand"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/cocrawl/cocrawl/webevents"
)

// The WebSub hub of a share server (W3C WebSub, 2018; spec section 7.9):
// ResourceSync Change Notification (NISO Z39.99-2017's companion, over
// WebSub) for the change list index and its filtered forms.
//
// Written here: no maintained Go WebSub hub is served by the module proxy
// this project builds from (github.com/Jazzmoon/websub and
// tystuyfzand/websub-server were tried and refused), and a hub for one
// family of topics, whose deliveries are read from the store as a live
// stream is, is small.

// WebSubPath is the hub's URL path on the share port.
const WebSubPath = "/websub"

// WebSub bounds and defaults.
const (
	defaultLease    = 24 * time.Hour
	minLease        = time.Minute
	maxLease        = 10 * 24 * time.Hour
	maxSecret       = 200
	maxSubsPerHost  = 4 // subscriptions whose callbacks are on one host
	deliveryTimeout = 10 * time.Second
	deliveryTries   = 3
	// notifyBatch bounds the changes one notification carries.
	notifyBatch = 1000
)

// hub holds a server's WebSub subscriptions.
type hub struct {
	mu      sync.Mutex
	subs    map[subKey]*hubSub
	perHost map[string]int
	client  *http.Client // refuses private addresses unless told (ServerOptions.WebSubClient)
	// verifying bounds the intent checks under way: each is a request
	// to a URL a stranger gave, so a flood of subscribe requests must not
	// become a flood of requests from this peer.
	verifying chan struct{}
}

// maxVerifying is how many intent checks may run at once.
const maxVerifying = 16

type subKey struct{ topic, callback string }

type hubSub struct {
	key    subKey
	secret string
	until  time.Time
	cancel context.CancelFunc
	done   chan struct{}
}

// topicFilter reads a topic: the absolute URL of this server's change
// list index, with at most a prefix query.
func (s *Server) topicFilter(topic string) (*DayFilter, error) {
	u, err := url.Parse(topic)
	if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Path != rsIndex {
		return nil, fmt.Errorf("hub.topic %q is not this server's change list (%s)", topic, rsIndex)
	}
	f, ok, err := ParseDayFilter(u.Query())
	if err != nil || !ok {
		return nil, err
	}
	return &f, nil
}

// serveWebSub takes subscribe and unsubscribe requests (WebSub 5.1):
// 202, then the intent is verified with the subscriber, and a verified
// subscription is served until its lease ends.
func (s *Server) serveWebSub(w http.ResponseWriter, r *http.Request) {
	if r.Method != http.MethodPost {
		w.Header().Set("Allow", "POST")
		http.Error(w, "method not allowed", http.StatusMethodNotAllowed)
		return
	}
	r.Body = http.MaxBytesReader(w, r.Body, 16<<10)
	if err := r.ParseForm(); err != nil {
		http.Error(w, "bad form", http.StatusBadRequest)
		return
	}
	mode, topic, callback := r.PostForm.Get("hub.mode"), r.PostForm.Get("hub.topic"), r.PostForm.Get("hub.callback")
	secret := r.PostForm.Get("hub.secret")
	filter, err := s.topicFilter(topic)
	if err != nil {
		http.Error(w, err.Error(), http.StatusBadRequest)
		return
	}
	cb, err := url.Parse(callback)
	switch {
	case mode != "subscribe" && mode != "unsubscribe":
		http.Error(w, "hub.mode must be subscribe or unsubscribe", http.StatusBadRequest)
		return
	case err != nil || (cb.Scheme != "http" && cb.Scheme != "https") || cb.Host == "" || len(callback) > maxPrefix:
		http.Error(w, "hub.callback must be an absolute http(s) URL", http.StatusBadRequest)
		return
	case len(secret) > maxSecret:
		http.Error(w, "hub.secret longer than 200 bytes", http.StatusBadRequest)
		return
	}
	lease := defaultLease
	if v := r.PostForm.Get("hub.lease_seconds"); v != "" {
		n, err := strconv.ParseInt(v, 10, 64)
		if err != nil || n <= 0 {
			http.Error(w, "bad hub.lease_seconds", http.StatusBadRequest)
			return
		}
		lease = min(max(time.Duration(n)*time.Second, minLease), maxLease)
	}
	key := subKey{topic, callback}
	if mode == "subscribe" && !s.hub.room(key, cb.Hostname(), cap(s.streams)) {
		s.metrics.streamDrop("limit")
		w.Header().Set("Retry-After", "60")
		http.Error(w, "too many subscriptions", http.StatusTooManyRequests)
		return
	}
	select {
	case s.hub.verifying <- struct{}{}:
	default:
		w.Header().Set("Retry-After", "10")
		http.Error(w, "too many subscription checks under way", http.StatusTooManyRequests)
		return
	}
	w.WriteHeader(http.StatusAccepted)
	go func() {
		defer func() { <-s.hub.verifying }()
		s.verifyAndServe(key, cb.Hostname(), mode, secret, lease, filter)
	}()
}

// room says whether a subscription may be added: it renews one, or fits
// the limits in all and per callback host.
func (h *hub) room(k subKey, host string, total int) bool {
	h.mu.Lock()
	defer h.mu.Unlock()
	if h.subs[k] != nil {
		return true
	}
	return len(h.subs) < total && h.perHost[host] < maxSubsPerHost
}

// verifyAndServe asks the subscriber to confirm (WebSub 5.3), then adds,
// renews or removes the subscription.
func (s *Server) verifyAndServe(k subKey, host, mode, secret string, lease time.Duration, filter *DayFilter) {
	var b [16]byte
	_, _ = rand.Read(b[:])
	challenge := hex.EncodeToString(b[:])
	q := url.Values{"hub.mode": {mode}, "hub.topic": {k.topic}, "hub.challenge": {challenge}}
	if mode == "subscribe" {
		q.Set("hub.lease_seconds", strconv.Itoa(int(lease.Seconds())))
	}
	u := k.callback
	if strings.Contains(u, "?") {
		u += "&" + q.Encode()
	} else {
		u += "?" + q.Encode()
	}
	ctx, cancel := context.WithTimeout(context.Background(), deliveryTimeout)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, u, nil)
	if err != nil {
		return
	}
	resp, err := s.hub.client.Do(req)
	if err != nil {
		s.log.Debug("websub: intent not verified", "callback", k.callback, "err", err)
		return
	}
	body, _ := io.ReadAll(io.LimitReader(resp.Body, 1024))
	resp.Body.Close()
	if resp.StatusCode/100 != 2 || strings.TrimSpace(string(body)) != challenge {
		s.log.Debug("websub: the subscriber did not confirm", "callback", k.callback, "status", resp.StatusCode)
		return
	}
	s.hub.mu.Lock()
	old := s.hub.subs[k]
	if old != nil {
		delete(s.hub.subs, k)
		s.hub.perHost[host]--
	}
	s.hub.mu.Unlock()
	if old != nil {
		old.cancel()
		<-old.done
	}
	if mode == "unsubscribe" {
		return
	}
	sub := &hubSub{key: k, secret: secret, until: s.now().Add(lease), done: make(chan struct{})}
	var sctx context.Context
	sctx, sub.cancel = context.WithDeadline(context.Background(), sub.until)
	s.hub.mu.Lock()
	if len(s.hub.subs) >= cap(s.streams) || s.hub.perHost[host] >= maxSubsPerHost {
		s.hub.mu.Unlock()
		sub.cancel()
		return
	}
	s.hub.subs[k] = sub
	s.hub.perHost[host]++
	s.hub.mu.Unlock()
	s.inflight.add() // it reads the store: Wait waits for it too
	go func() {
		defer s.inflight.done()
		defer close(sub.done)
		defer func() {
			s.hub.mu.Lock()
			if s.hub.subs[k] == sub {
				delete(s.hub.subs, k)
				s.hub.perHost[host]--
			}
			s.hub.mu.Unlock()
		}()
		s.deliver(sctx, sub, filter)
	}()
}

// deliver sends a subscription the changes recorded from its start, read
// from the store as a live stream's are, each pass's as one notification:
// a ResourceSync change list of capability changelist-notification. A
// subscriber that fails deliveryTries times in a row is dropped.
func (s *Server) deliver(ctx context.Context, sub *hubSub, filter *DayFilter) {
	st := &stream{s: s, filter: filter, readers: map[int64]logReader{}, batch: notifyBatch}
	today := webevents.DayOf(s.now().Unix())
	st.cur = StreamCursor{}
	for _, d := range []int64{today - 1, today} {
		if size, ok := st.size(d); ok {
			st.cur[d] = size
		}
	}
	var pending []webevents.Event
	st.emit = func(_, _ int64, e webevents.Event) error {
		pending = append(pending, e)
		return nil
	}
	st.flush = func() error {
		if len(pending) == 0 {
			return nil
		}
		err := s.notify(ctx, sub, pending)
		pending = pending[:0]
		return err
	}
	ap, _ := s.store.(appender)
	poll := time.NewTicker(streamPoll)
	defer poll.Stop()
	for {
		var wake <-chan struct{}
		if ap != nil {
			wake = ap.Appended()
		}
		if err := st.pass(); err != nil {
			if ctx.Err() == nil {
				s.metrics.streamDrop("slow")
				s.log.Info("websub: a subscriber dropped", "callback", sub.key.callback, "err", err)
			}
			return
		}
		select {
		case <-ctx.Done():
			return
		case <-s.closing:
			return
		case <-wake:
		case <-poll.C:
		}
		select {
		case <-time.After(streamPass):
		case <-ctx.Done():
			return
		}
	}
}

// notify posts one notification, trying deliveryTries times.
func (s *Server) notify(ctx context.Context, sub *hubSub, events []webevents.Event) error {
	var body bytes.Buffer
	body.WriteString(`<?xml version="1.0" encoding="UTF-8"?>` + "\n")
	fmt.Fprintf(&body, "<urlset %s>\n  <rs:ln rel=\"up\" href=\"%s\"/>\n  <rs:md capability=\"changelist-notification\"/>\n", rsNamespaces, escape(sub.key.topic))
	bw := bufio.NewWriter(&body)
	for _, e := range events {
		writeChange(bw, e)
	}
	_ = bw.Flush()
	body.WriteString("</urlset>\n")
	hubURL := sub.key.topic[:strings.Index(sub.key.topic, rsIndex)] + WebSubPath
	var err error
	for try := range deliveryTries {
		if try > 0 {
			select {
			case <-ctx.Done():
				return ctx.Err()
			case <-time.After(time.Duration(try) * time.Second):
			}
		}
		if err = s.post(ctx, sub, hubURL, body.Bytes()); err == nil {
			s.metrics.websubSent(len(events))
			return nil
		}
	}
	return err
}

func (s *Server) post(ctx context.Context, sub *hubSub, hubURL string, body []byte) error {
	ctx, cancel := context.WithTimeout(ctx, deliveryTimeout)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, sub.key.callback, bytes.NewReader(body))
	if err != nil {
		return err
	}
	req.Header.Set("Content-Type", "application/xml; charset=utf-8")
	req.Header.Set("Link", fmt.Sprintf("<%s>; rel=\"hub\", <%s>; rel=\"self\"", hubURL, sub.key.topic))
	if sub.secret != "" {
		m := hmac.New(sha256.New, []byte(sub.secret))
		m.Write(body)
		req.Header.Set("X-Hub-Signature", "sha256="+hex.EncodeToString(m.Sum(nil)))
	}
	resp, err := s.hub.client.Do(req)
	if err != nil {
		return err
	}
	_, _ = io.Copy(io.Discard, io.LimitReader(resp.Body, 4096))
	resp.Body.Close()
	if resp.StatusCode == http.StatusGone {
		return errors.New("websub: the subscriber is gone (410)")
	}
	if resp.StatusCode/100 != 2 {
		return fmt.Errorf("websub: the subscriber answered %s", resp.Status)
	}
	return nil
}

// WebSubscriptions counts the hub's live subscriptions.
func (s *Server) WebSubscriptions() int {
	s.hub.mu.Lock()
	defer s.hub.mu.Unlock()
	return len(s.hub.subs)
}
