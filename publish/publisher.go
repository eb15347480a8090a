package publish

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"log/slog"
	"net/url"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/fsnotify/fsnotify"

	"github.com/cocrawl/cocrawl/crawl"
	"github.com/cocrawl/cocrawl/protocol"
	"github.com/cocrawl/cocrawl/webevents"
)

// Store is what a Publisher needs of a webevents store: what it published
// before, and a way to record more.
type Store interface {
	Current(fn func(webevents.Event) error) error
	Record(events []webevents.Event) error
}

// Config configures a Publisher. Zero fields take the defaults named.
type Config struct {
	Root string // the document root, required
	// Base is the URL the root is served at, required: the file
	// Root/a/b.html is Base + "a/b.html".
	Base string
	// CID is the cid of every event, "host:port Moniker", required: the
	// crawler field of the publisher's robots.shr, so peers see the events
	// as its own observations.
	CID string
	// Index is the file a folder's URL serves ("index.html", the default);
	// Root/a/index.html is published as Base + "a/". "-" publishes every
	// file under its own name.
	Index string
	// Settle is how long a file must be quiet before it is published;
	// default 250 ms.
	Settle time.Duration
	// Rescan is how often the whole root is compared with what was
	// published, as a safety net; default 1 h. While a folder could not be
	// watched it is one minute.
	Rescan time.Duration
	// ConfirmCycle is how long a pass takes that records every live file
	// again, when unchanged, as a confirmation; default 7 days: a peer's
	// first merge reaches back 7 days, so it learns the whole site, not
	// only what changed. At least one file is confirmed an hour, so peers
	// keep honouring the publisher's special prefix (which needs records
	// of its own observations of the host within 24 hours). Negative:
	// never.
	ConfirmCycle time.Duration
	// Skip names files (slash-separated paths relative to Root) never
	// published, such as the IndexNow key file. Names that begin with "."
	// (and everything under such folders) are never published.
	Skip []string
	// Notify, when set, is given the URLs of each batch of recorded
	// changes (not confirmations), for IndexNow.
	Notify func(urls []string)
	Logger *slog.Logger
	// Now is the clock; default time.Now (tests move it).
	Now func() time.Time
}

// Stats counts what a Publisher did.
type Stats struct {
	Files          int   `json:"files"`   // live files published
	Watches        int   `json:"watches"` // folders watched
	Created        int64 `json:"created"`
	Updated        int64 `json:"updated"`
	Deleted        int64 `json:"deleted"`
	Confirmed      int64 `json:"confirmed"`
	Rescans        int64 `json:"rescans"`
	Overflows      int64 `json:"overflows"`       // inotify queues that overflowed (a rescan followed)
	WatchErrors    int64 `json:"watch_errors"`    // folders that could not be watched
	RecordErrors   int64 `json:"record_errors"`   // store writes that failed (retried)
	ReadErrors     int64 `json:"read_errors"`     // files that could not be read (retried at the next rescan)
	BadDates       int64 `json:"bad_dates"`       // files dated before 1993 or more than an hour ahead, not published (no web-event can carry them)
	BackwardsDates int64 `json:"backwards_dates"` // files whose new date is before the published one
	LastEvent      int64 `json:"last_event,omitempty"`
}

// maxConfirmsPerTick bounds the confirmations of one tick, so a clock jump
// or a huge site cannot stall the watcher.
const maxConfirmsPerTick = 1000

// Publisher watches a document root and records its changes.
type Publisher struct {
	cfg    Config
	prefix string // the base URL as crawlers write it, ending in "/"
	root   string
	st     Store
	log    *slog.Logger
	skip   map[string]bool
	watch  *fsnotify.Watcher

	mu       sync.Mutex
	files    map[string]fileState // by URL: what was last recorded of each live file
	pending  map[string]time.Time // relative paths with unprocessed events, by last event
	stats    Stats
	degraded bool     // a folder could not be watched: rescan every minute
	order    []string // the live URLs of the current confirmation pass
	next     int      // the next of order to confirm
}

// fileState is what was last recorded of a live file.
type fileState struct {
	lmd, size int64
	mtime     int64 // nanoseconds, when this process saw the file; 0 when loaded from the store
	digest    string
	stat      webevents.Stat
}

// New checks cfg and returns a Publisher over st.
func New(st Store, cfg Config) (*Publisher, error) {
	if cfg.Root == "" || cfg.Base == "" || cfg.CID == "" {
		return nil, configErrorf("publish: Root, Base and CID are required")
	}
	root, err := filepath.Abs(cfg.Root)
	if err != nil {
		return nil, fmt.Errorf("publish: root: %w", err)
	}
	if fi, err := os.Stat(root); errors.Is(err, os.ErrNotExist) {
		return nil, configErrorf("publish: root: %w", err)
	} else if err != nil {
		return nil, fmt.Errorf("publish: root: %w", err)
	} else if !fi.IsDir() {
		return nil, configErrorf("publish: root %s is not a folder", root)
	}
	base, err := url.Parse(cfg.Base)
	if err != nil || (base.Scheme != "http" && base.Scheme != "https") || base.Host == "" || base.RawQuery != "" || base.Fragment != "" || base.User != nil {
		return nil, configErrorf("publish: base %q is not an absolute http(s) URL without query", cfg.Base)
	}
	if !strings.HasSuffix(base.Path, "/") {
		base.Path += "/"
		base.RawPath = ""
	}
	prefix, err := crawl.Normalize(nil, base.String())
	if err != nil {
		return nil, configErrorf("publish: base %q: %w", cfg.Base, err)
	}
	if cfg.Index == "" {
		cfg.Index = "index.html"
	}
	if cfg.Settle <= 0 {
		cfg.Settle = 250 * time.Millisecond
	}
	if cfg.Rescan <= 0 {
		cfg.Rescan = time.Hour
	}
	if cfg.ConfirmCycle == 0 {
		cfg.ConfirmCycle = 7 * 24 * time.Hour
	}
	if cfg.Logger == nil {
		cfg.Logger = slog.New(slog.DiscardHandler)
	}
	if cfg.Now == nil {
		cfg.Now = time.Now
	}
	p := &Publisher{cfg: cfg, prefix: prefix, root: root, st: st, log: cfg.Logger,
		skip: map[string]bool{}, files: map[string]fileState{}, pending: map[string]time.Time{}}
	for _, s := range cfg.Skip {
		p.skip[filepath.ToSlash(filepath.Clean(s))] = true
	}
	return p, nil
}

// Base is the site's URL, ending in "/": the prefix every published URL
// starts with.
func (p *Publisher) Base() string { return p.prefix }

// CID is the cid of a publisher whose share repository is reached at
// addr ("host:port"): "host:port cocrawl-publish/<protocol version>".
func CID(addr string) string { return addr + " cocrawl-publish/" + protocol.CurrentVersion }

// ShareControl is the robots.shr a publisher serves: its cid, its site as
// its one special prefix (it speaks for its own site alone, spec 15), its
// day files under /share/.
func (p *Publisher) ShareControl(contact string) protocol.ShareControl {
	return protocol.ShareControl{Crawler: p.cfg.CID, Contact: contact, Special: []string{p.prefix}, Repository: "/share/"}
}

// Stats returns a snapshot of the counts.
func (p *Publisher) Stats() Stats {
	p.mu.Lock()
	defer p.mu.Unlock()
	s := p.stats
	s.Files = len(p.files)
	if p.watch != nil {
		s.Watches = len(p.watch.WatchList()) // counted here, not at each watch: a walk adds thousands
	}
	return s
}

// Run loads what was published before, watches the root, publishes what
// changed since, then every change until ctx ends.
func (p *Publisher) Run(ctx context.Context) error {
	if err := p.load(); err != nil {
		return err
	}
	w, err := fsnotify.NewBufferedWatcher(4096)
	if err != nil {
		return fmt.Errorf("publish: watch: %w", err)
	}
	p.mu.Lock()
	p.watch = w // Stats reads it
	p.mu.Unlock()
	defer w.Close()
	first := len(p.files) == 0
	// Watches go on before the files are compared, so a change made during
	// the walk is either seen by it or reported by the watch.
	tick := time.NewTicker(p.cfg.Settle / 2)
	defer tick.Stop()
	lastRescan, lastConfirm, lastTick := p.cfg.Now(), p.cfg.Now(), p.cfg.Now()
	owed := 0.0 // confirmations due, by ConfirmCycle
	// A rescan that could not record (a full disk) is tried again soon.
	failed := !p.rescan(!first)
	for {
		select {
		case <-ctx.Done():
			return nil
		case ev, ok := <-w.Events:
			if !ok {
				return errors.New("publish: the watcher closed")
			}
			p.noteEvent(ev)
		case err, ok := <-w.Errors:
			if !ok {
				return errors.New("publish: the watcher closed")
			}
			if errors.Is(err, fsnotify.ErrEventOverflow) {
				p.mu.Lock()
				p.stats.Overflows++
				p.mu.Unlock()
				p.log.Warn("the file system's event queue overflowed; rescanning", "root", p.root)
				failed = !p.rescan(true)
				lastRescan = p.cfg.Now()
				continue
			}
			p.log.Warn("watch error", "err", err)
		case <-tick.C:
			now := p.cfg.Now()
			p.settle(now)
			every := p.cfg.Rescan
			if p.isDegraded() {
				every = min(every, time.Minute)
			}
			if failed {
				every = min(every, 10*time.Second)
			}
			if now.Sub(lastRescan) >= every {
				failed = !p.rescan(true)
				lastRescan = now
			}
			if p.cfg.ConfirmCycle > 0 {
				owed += float64(p.Stats().Files) * now.Sub(lastTick).Seconds() / p.cfg.ConfirmCycle.Seconds()
				if now.Sub(lastConfirm) >= time.Hour {
					owed = max(owed, 1)
				}
				owed = min(owed, 10*maxConfirmsPerTick)
				if n := min(int(owed), maxConfirmsPerTick); n > 0 {
					p.confirm(n)
					owed -= float64(n)
					lastConfirm = now
				}
			}
			lastTick = now
		}
	}
}

func (p *Publisher) isDegraded() bool {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.degraded
}

// load reads what the store holds of the site: the live files published
// before, so a restart publishes only what changed meanwhile.
func (p *Publisher) load() error {
	prefix := p.prefix
	p.mu.Lock()
	defer p.mu.Unlock()
	err := p.st.Current(func(e webevents.Event) error {
		if strings.HasPrefix(e.URL, prefix) && e.Stat != webevents.Delete {
			p.files[e.URL] = fileState{lmd: e.LMD, size: e.Size, digest: e.Digest, stat: e.Stat}
		}
		return nil
	})
	if err != nil {
		return fmt.Errorf("publish: read the store: %w", err)
	}
	return nil
}

// noteEvent queues the path of a watch event; it is looked at once quiet.
func (p *Publisher) noteEvent(ev fsnotify.Event) {
	rel, ok := p.relative(ev.Name)
	if !ok {
		return
	}
	p.mu.Lock()
	p.pending[rel] = p.cfg.Now()
	p.mu.Unlock()
}

// relative is path's slash-separated name under the root; false for the
// root itself, paths outside it, hidden and skipped names.
func (p *Publisher) relative(path string) (string, bool) {
	rel, err := filepath.Rel(p.root, path)
	if err != nil || rel == "." || strings.HasPrefix(rel, "..") {
		return "", false
	}
	rel = filepath.ToSlash(rel)
	for _, seg := range strings.Split(rel, "/") {
		if strings.HasPrefix(seg, ".") {
			return "", false
		}
	}
	return rel, !p.skip[rel]
}

// settle publishes the pending paths that have been quiet for Settle.
func (p *Publisher) settle(now time.Time) {
	p.mu.Lock()
	var ready []string
	for rel, t := range p.pending {
		if now.Sub(t) >= p.cfg.Settle {
			ready = append(ready, rel)
			delete(p.pending, rel)
		}
	}
	p.mu.Unlock()
	if len(ready) == 0 {
		return
	}
	var b batch
	// Paths gone first: a folder moved within the root is gone under its
	// old name and new under its new one, and its watches must be dropped
	// before they are added again under the new name (inotify keeps one
	// watch per folder, with the name it was added under).
	var present []string
	for _, rel := range ready {
		if _, err := os.Lstat(filepath.Join(p.root, filepath.FromSlash(rel))); errors.Is(err, fs.ErrNotExist) {
			p.unwatch(rel)
			p.removed(rel, &b)
		} else {
			present = append(present, rel)
		}
	}
	for _, rel := range present {
		p.look(rel, &b)
	}
	p.commit(&b, ready, true)
}

// batch gathers the events of one look at the root and the state they
// leave, applied once the store has them.
type batch struct {
	events []webevents.Event
	set    map[string]fileState
	gone   []string
}

func (b *batch) put(e webevents.Event, s fileState) {
	b.events = append(b.events, e)
	if b.set == nil {
		b.set = map[string]fileState{}
	}
	b.set[e.URL] = s
}

// look compares one path with what was published: a file, a folder (a
// new one is watched and walked: a folder moved in brings its files), or
// nothing (a file or folder removed or moved away).
func (p *Publisher) look(rel string, b *batch) {
	abs := filepath.Join(p.root, filepath.FromSlash(rel))
	fi, err := os.Lstat(abs)
	switch {
	case errors.Is(err, fs.ErrNotExist):
		p.removed(rel, b)
	case err != nil:
		p.countRead(rel, err)
	case fi.IsDir():
		p.walk(abs, b, nil)
	default:
		p.file(rel, b)
	}
}

// removed publishes the deletion of the file at rel, or of every file
// under it when it was a folder.
func (p *Publisher) removed(rel string, b *batch) {
	now := p.cfg.Now().Unix()
	u, ok := p.urlOf(rel)
	if !ok {
		return
	}
	p.mu.Lock()
	var gone []string
	if _, live := p.files[u]; live {
		gone = append(gone, u) // a file (an index file: its folder's URL)
	} else if dir, ok := p.urlOf(rel + "/"); ok {
		for fu := range p.files {
			if strings.HasPrefix(fu, dir) {
				gone = append(gone, fu)
			}
		}
	}
	p.mu.Unlock()
	for _, g := range gone {
		b.events = append(b.events, webevents.Event{URL: g, LMD: now, LPD: now, CID: p.cfg.CID, Stat: webevents.Delete})
		b.gone = append(b.gone, g)
	}
}

// file compares the file at rel with what was published of its URL, and
// returns that URL when the file is one to publish.
func (p *Publisher) file(rel string, b *batch) (string, bool) {
	u, ok := p.urlOf(rel)
	if !ok {
		return "", false
	}
	abs := filepath.Join(p.root, filepath.FromSlash(rel))
	fi, err := os.Stat(abs) // a symlink publishes what it points to, as a web server serves it
	if err != nil {
		if errors.Is(err, fs.ErrNotExist) {
			p.removed(rel, b)
			return "", false
		}
		p.countRead(rel, err)
		return "", false
	}
	if !fi.Mode().IsRegular() {
		return "", false
	}
	now := p.cfg.Now()
	lmd, size := fi.ModTime().Unix(), fi.Size()
	if lmd < webevents.MinSaneDate || fi.ModTime().After(now.Add(time.Hour)) {
		// Before 1993 (an archive's or a reproducible build's epoch) or
		// more than an hour ahead: mergers would refuse the record.
		p.mu.Lock()
		p.stats.BadDates++
		p.mu.Unlock()
		return "", false
	}
	p.mu.Lock()
	old, known := p.files[u]
	p.mu.Unlock()
	mtime := fi.ModTime().UnixNano()
	if known && old.lmd == lmd && old.size == size && (old.mtime == 0 || old.mtime == mtime) {
		if old.mtime == 0 {
			p.mu.Lock()
			old.mtime = mtime
			p.files[u] = old
			p.mu.Unlock()
		}
		return u, true
	}
	digest, err := digestOf(abs)
	if err != nil {
		p.countRead(rel, err)
		return "", false
	}
	if known && old.lmd == lmd && old.digest == digest {
		p.mu.Lock()
		old.mtime = mtime
		p.files[u] = old
		p.mu.Unlock()
		return u, true
	}
	e := webevents.Event{URL: u, Size: size, LMD: lmd, LPD: max(now.Unix(), lmd), CID: p.cfg.CID, Stat: webevents.Create, Digest: digest}
	if known {
		e.Stat = webevents.Update
		if lmd <= old.lmd {
			// Restored from an older copy: published as the web server
			// dates it, though mergers keep the later state they hold.
			p.mu.Lock()
			p.stats.BackwardsDates++
			p.mu.Unlock()
		}
	}
	// Two versions within one second share an lmd (HTTP dates have
	// seconds); mergers keep the first, as a poller would see either.
	b.put(e, fileState{lmd: lmd, size: size, mtime: mtime, digest: digest, stat: e.Stat})
	return u, true
}

func (p *Publisher) countRead(rel string, err error) {
	p.mu.Lock()
	p.stats.ReadErrors++
	p.mu.Unlock()
	p.log.Debug("cannot read", "path", rel, "err", err)
}

// digestOf is the file's SHA-256, as a crawler's digest of the body the
// web server sends ("sha256:hex").
func digestOf(path string) (string, error) {
	f, err := os.Open(path)
	if err != nil {
		return "", err
	}
	defer f.Close()
	h := sha256.New()
	if _, err := io.Copy(h, f); err != nil {
		return "", err
	}
	return "sha256:" + hex.EncodeToString(h.Sum(nil)), nil
}

// walk watches every folder under abs and compares every file in it; seen,
// when given, collects the URLs found.
func (p *Publisher) walk(abs string, b *batch, seen map[string]bool) {
	_ = filepath.WalkDir(abs, func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			p.countRead(path, err)
			if d != nil && d.IsDir() {
				return filepath.SkipDir
			}
			return nil
		}
		rel, ok := p.relative(path)
		if path != p.root && !ok {
			if d.IsDir() {
				return filepath.SkipDir
			}
			return nil
		}
		if d.IsDir() {
			p.watchDir(path)
			return nil
		}
		if u, ok := p.file(rel, b); ok && seen != nil {
			seen[u] = true
		}
		return nil
	})
}

// watchDir adds an inotify watch; one that fails (the kernel's limit of
// watches per user) leaves the publisher on minute rescans.
func (p *Publisher) watchDir(path string) {
	if p.watch == nil {
		return
	}
	if err := p.watch.Add(path); err != nil {
		p.mu.Lock()
		p.stats.WatchErrors++
		p.degraded = true
		p.mu.Unlock()
		p.log.Warn("cannot watch a folder; rescanning every minute", "path", path, "err", err)
	}
}

// unwatch drops the watches of a folder that is gone and of the folders
// under it.
func (p *Publisher) unwatch(rel string) {
	if p.watch == nil {
		return
	}
	abs := filepath.Join(p.root, filepath.FromSlash(rel))
	for _, w := range p.watch.WatchList() {
		if w == abs || strings.HasPrefix(w, abs+string(filepath.Separator)) {
			_ = p.watch.Remove(w) // the kernel may have dropped it already
		}
	}
}

// rescan compares the whole root with what was published. notify says
// whether its changes go to Notify: not on the first publication of a
// site, which would push every file. It reports whether the changes were
// recorded.
func (p *Publisher) rescan(notify bool) bool {
	var b batch
	seen := map[string]bool{}
	p.walk(p.root, &b, seen)
	now := p.cfg.Now().Unix()
	p.mu.Lock()
	p.stats.Rescans++
	for u := range p.files {
		if !seen[u] {
			b.events = append(b.events, webevents.Event{URL: u, LMD: now, LPD: now, CID: p.cfg.CID, Stat: webevents.Delete})
			b.gone = append(b.gone, u)
		}
	}
	p.mu.Unlock()
	return p.commit(&b, nil, notify)
}

// commit records a batch; on success the published state follows it, on
// failure (a full disk) its paths are looked at again after a second.
func (p *Publisher) commit(b *batch, retry []string, notify bool) bool {
	if len(b.events) == 0 {
		return true
	}
	err := p.st.Record(b.events)
	p.mu.Lock()
	defer p.mu.Unlock()
	if err != nil {
		p.stats.RecordErrors++
		p.log.Error("cannot record the site's changes; retrying", "events", len(b.events), "err", err)
		later := p.cfg.Now().Add(time.Second - p.cfg.Settle)
		for _, rel := range retry {
			p.pending[rel] = later
		}
		return false
	}
	urls := make([]string, 0, len(b.events))
	for _, e := range b.events {
		urls = append(urls, e.URL)
		switch e.Stat {
		case webevents.Create:
			p.stats.Created++
		case webevents.Update:
			p.stats.Updated++
		case webevents.Delete:
			p.stats.Deleted++
		}
	}
	for u, s := range b.set {
		p.files[u] = s
	}
	for _, u := range b.gone {
		delete(p.files, u)
	}
	p.stats.LastEvent = p.cfg.Now().Unix()
	if notify && p.cfg.Notify != nil {
		p.cfg.Notify(urls)
	}
	return true
}

// confirm checks the next n live files in URL order; each unchanged one is
// recorded again with a new lpd: a confirmation (spec section 12.1).
func (p *Publisher) confirm(n int) {
	var b batch
	var confirms []webevents.Event
	var retry []string
	for range n {
		p.mu.Lock()
		if p.next >= len(p.order) {
			// A new pass over the files, in URL order.
			p.order = p.order[:0]
			for u := range p.files {
				p.order = append(p.order, u)
			}
			slices.Sort(p.order)
			p.next = 0
		}
		if len(p.order) == 0 {
			p.mu.Unlock()
			break
		}
		u := p.order[p.next]
		p.next++
		s, ok := p.files[u]
		p.mu.Unlock()
		if !ok {
			continue // gone since the pass began
		}
		rel := p.relOf(u)
		before := len(b.events)
		p.look(rel, &b)
		if len(b.events) > before {
			retry = append(retry, rel) // it had changed: that is the news
			continue
		}
		now := p.cfg.Now().Unix()
		confirms = append(confirms, webevents.Event{URL: u, Size: s.size, LMD: s.lmd, LPD: max(now, s.lmd), CID: p.cfg.CID, Stat: s.stat, Digest: s.digest})
	}
	p.commit(&b, retry, true)
	if len(confirms) == 0 {
		return
	}
	err := p.st.Record(confirms)
	p.mu.Lock()
	defer p.mu.Unlock()
	if err != nil {
		p.stats.RecordErrors++
		return
	}
	p.stats.Confirmed += int64(len(confirms))
}

// urlOf is the URL a file is served at, written as crawlers write URLs
// (crawl.Normalize), so peers compare the same strings.
func (p *Publisher) urlOf(rel string) (string, bool) {
	path := escapePath(rel)
	if p.cfg.Index != "-" {
		if rel == p.cfg.Index {
			path = ""
		} else if strings.HasSuffix(rel, "/"+p.cfg.Index) {
			path = escapePath(strings.TrimSuffix(rel, p.cfg.Index))
		}
	}
	u, err := crawl.Normalize(nil, p.prefix+path)
	return u, err == nil
}

// relOf inverts urlOf for a published URL.
func (p *Publisher) relOf(u string) string {
	path := strings.TrimPrefix(u, p.prefix)
	if un, err := url.PathUnescape(path); err == nil {
		path = un
	}
	if p.cfg.Index != "-" && (path == "" || strings.HasSuffix(path, "/")) {
		path += p.cfg.Index
	}
	return path
}

// escapePath escapes each segment of a slash-separated path.
func escapePath(rel string) string {
	segs := strings.Split(rel, "/")
	for i, s := range segs {
		segs[i] = url.PathEscape(s)
	}
	return strings.Join(segs, "/")
}
