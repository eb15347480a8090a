package publish

import (
	"bytes"
	"context"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"net/url"
	"os"
	"path/filepath"
	"strconv"
	"sync"
	"time"

	"github.com/cocrawl/cocrawl/protocol"
)

// IndexNow's limits: a submission names at most 10,000 URLs; a key is 8 to
// 128 characters of a-z, A-Z, 0-9 and "-".
const (
	maxPingURLs = 10000
	// maxQueued bounds the URLs waiting for one endpoint; beyond it the
	// oldest are dropped (and counted): the share repository still has them.
	maxQueued = 100000
)

// NewKey returns a random IndexNow key of 32 hexadecimal digits.
func NewKey() string {
	var b [16]byte
	_, _ = rand.Read(b[:]) // crypto/rand.Read does not fail (Go 1.24)
	return hex.EncodeToString(b[:])
}

// WriteKeyFile writes the key file {key}.txt into the document root, where
// receivers fetch it to verify the key, and returns its name relative to
// the root. It is written to a hidden file first and renamed, so a web
// server never serves half a key.
func WriteKeyFile(root, key string) (string, error) {
	if !protocol.ValidIndexNowKey(key) {
		return "", configErrorf("publish: an IndexNow key is 8 to 128 of a-z, A-Z, 0-9 and -; got %q", key)
	}
	name := key + ".txt"
	tmp := filepath.Join(root, ".cocrawl-"+name)
	if err := os.WriteFile(tmp, []byte(key), 0o644); err != nil {
		return "", fmt.Errorf("publish: write the IndexNow key file: %w", err)
	}
	if err := os.Rename(tmp, filepath.Join(root, name)); err != nil {
		os.Remove(tmp)
		return "", fmt.Errorf("publish: write the IndexNow key file: %w", err)
	}
	return name, nil
}

// AttachPinger makes the Pinger that pushes a publisher's changes to
// endpoints, under key, and wires it into cfg (Notify): the key file is
// written into cfg.Root, and skipped by the publisher, unless keyLocation
// says the owner serves it elsewhere.
func AttachPinger(cfg *Config, key, keyLocation string, endpoints []string) (*Pinger, error) {
	base, err := url.Parse(cfg.Base)
	if err != nil || base.Host == "" {
		return nil, configErrorf("publish: base %q is not an absolute URL", cfg.Base)
	}
	p, err := NewPinger(PingConfig{Endpoints: endpoints, Key: key, KeyLocation: keyLocation, Host: base.Host, Logger: cfg.Logger})
	if err != nil {
		return nil, err
	}
	if keyLocation == "" {
		name, err := WriteKeyFile(cfg.Root, key)
		if err != nil {
			return nil, err
		}
		cfg.Skip = append(cfg.Skip, name)
	}
	cfg.Notify = p.Add
	return p, nil
}

// PingConfig configures a Pinger.
type PingConfig struct {
	// Endpoints are the IndexNow URLs changes are pushed to, such as a
	// cocrawl peer's "http://host:port/indexnow".
	Endpoints []string
	Key       string
	// KeyLocation is the key file's URL; empty means {base}{key}.txt,
	// where receivers look by default.
	KeyLocation string
	Host        string        // the site's host, as the submissions name it
	Every       time.Duration // how often queued URLs are sent; default 1 s
	Client      *http.Client  // default: a client with a 10 s timeout
	Logger      *slog.Logger
}

// PingStats counts what a Pinger sent.
type PingStats struct {
	URLs     int64 `json:"urls"`     // URLs accepted by an endpoint (summed over endpoints)
	Posts    int64 `json:"posts"`    // submissions accepted
	Failures int64 `json:"failures"` // submissions refused or failed (retried with backoff)
	Dropped  int64 `json:"dropped"`  // URLs dropped from a full queue
	Queued   int   `json:"queued"`
}

// Pinger pushes the URLs of changes to IndexNow endpoints: batched, at most
// one submission in flight per endpoint, backing off after failures and
// honouring Retry-After.
type Pinger struct {
	cfg       PingConfig
	endpoints []*endpoint
	mu        sync.Mutex
	stats     PingStats
}

type endpoint struct {
	url   string
	queue []string
	set   map[string]bool
	next  time.Time // no submission before
	fails int
}

// NewPinger checks cfg.
func NewPinger(cfg PingConfig) (*Pinger, error) {
	if !protocol.ValidIndexNowKey(cfg.Key) {
		return nil, configErrorf("publish: an IndexNow key is 8 to 128 of a-z, A-Z, 0-9 and -; got %q", cfg.Key)
	}
	if cfg.Every <= 0 {
		cfg.Every = time.Second
	}
	if cfg.Client == nil {
		cfg.Client = &http.Client{Timeout: 10 * time.Second}
	}
	if cfg.Logger == nil {
		cfg.Logger = slog.New(slog.DiscardHandler)
	}
	p := &Pinger{cfg: cfg}
	for _, e := range cfg.Endpoints {
		u, err := url.Parse(e)
		if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
			return nil, configErrorf("publish: IndexNow endpoint %q is not an http(s) URL", e)
		}
		p.endpoints = append(p.endpoints, &endpoint{url: e, set: map[string]bool{}})
	}
	return p, nil
}

// Add queues URLs for every endpoint (Config.Notify).
func (p *Pinger) Add(urls []string) {
	p.mu.Lock()
	defer p.mu.Unlock()
	for _, ep := range p.endpoints {
		for _, u := range urls {
			if ep.set[u] {
				continue
			}
			if len(ep.queue) >= maxQueued {
				delete(ep.set, ep.queue[0])
				ep.queue = ep.queue[1:]
				p.stats.Dropped++
			}
			ep.queue = append(ep.queue, u)
			ep.set[u] = true
		}
	}
}

// Stats returns a snapshot of the counts.
func (p *Pinger) Stats() PingStats {
	p.mu.Lock()
	defer p.mu.Unlock()
	s := p.stats
	for _, ep := range p.endpoints {
		s.Queued += len(ep.queue)
	}
	return s
}

// Run sends what is queued every Every until ctx ends.
func (p *Pinger) Run(ctx context.Context) {
	t := time.NewTicker(p.cfg.Every)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case now := <-t.C:
			for _, ep := range p.endpoints {
				p.send(ctx, ep, now)
			}
		}
	}
}

// send submits up to maxPingURLs of an endpoint's queue.
func (p *Pinger) send(ctx context.Context, ep *endpoint, now time.Time) {
	p.mu.Lock()
	if len(ep.queue) == 0 || now.Before(ep.next) {
		p.mu.Unlock()
		return
	}
	batch := append([]string(nil), ep.queue[:min(len(ep.queue), maxPingURLs)]...)
	p.mu.Unlock()
	wait, err := p.post(ctx, ep.url, batch)
	p.mu.Lock()
	defer p.mu.Unlock()
	if err != nil {
		ep.fails++
		p.stats.Failures++
		ep.next = now.Add(max(wait, min(time.Duration(1<<min(ep.fails, 12))*time.Second, time.Hour)))
		p.cfg.Logger.Warn("IndexNow submission failed", "endpoint", ep.url, "urls", len(batch), "retry", ep.next.Format(time.TimeOnly), "err", err)
		return
	}
	ep.fails, ep.next = 0, time.Time{}
	p.stats.Posts++
	p.stats.URLs += int64(len(batch))
	// The queue may have been trimmed meanwhile: drop what was sent.
	sent := map[string]bool{}
	for _, u := range batch {
		sent[u] = true
	}
	kept := ep.queue[:0]
	for _, u := range ep.queue {
		if sent[u] {
			delete(ep.set, u)
			continue
		}
		kept = append(kept, u)
	}
	ep.queue = kept
}

// errRefused: the endpoint answered with an error status.
var errRefused = errors.New("refused")

// post sends one submission; a 429 or 503 returns the Retry-After wait.
func (p *Pinger) post(ctx context.Context, endpoint string, urls []string) (time.Duration, error) {
	body, err := json.Marshal(struct {
		Host        string   `json:"host"`
		Key         string   `json:"key"`
		KeyLocation string   `json:"keyLocation,omitempty"`
		URLList     []string `json:"urlList"`
	}{p.cfg.Host, p.cfg.Key, p.cfg.KeyLocation, urls})
	if err != nil {
		return 0, err
	}
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, endpoint, bytes.NewReader(body))
	if err != nil {
		return 0, err
	}
	req.Header.Set("Content-Type", "application/json; charset=utf-8")
	resp, err := p.cfg.Client.Do(req)
	if err != nil {
		return 0, err
	}
	defer resp.Body.Close()
	_, _ = io.Copy(io.Discard, io.LimitReader(resp.Body, 64<<10))
	switch {
	case resp.StatusCode == http.StatusOK || resp.StatusCode == http.StatusAccepted:
		return 0, nil
	case resp.StatusCode == http.StatusTooManyRequests || resp.StatusCode == http.StatusServiceUnavailable:
		wait := time.Minute
		if s, err := strconv.Atoi(resp.Header.Get("Retry-After")); err == nil && s >= 0 {
			wait = min(time.Duration(s)*time.Second, time.Hour)
		}
		return wait, fmt.Errorf("%w: %s", errRefused, resp.Status)
	}
	return 0, fmt.Errorf("%w: %s", errRefused, resp.Status)
}
