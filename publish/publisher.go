package publish

import (
	"errors"
	"fmt"
	"log/slog"
	"net/url"
	"os"
	"path/filepath"
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

// Publisher watches a document root and records its changes. Its parts
// have a file each: watching and rescanning the root (watch.go), a file's
// look becoming its web-event (events.go), the confirmation cycle
// (confirm.go), and file paths as URLs and back (urls.go).
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
