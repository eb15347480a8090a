package measure

import (
	"context"
	"fmt"
	"io"
	"log/slog"
	"math/rand/v2"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"slices"
	"sync"
	"sync/atomic"
	"time"

	"github.com/cocrawl/cocrawl/crawl"
	"github.com/cocrawl/cocrawl/peer"
	"github.com/cocrawl/cocrawl/protocol"
	"github.com/cocrawl/cocrawl/publish"
	"github.com/cocrawl/cocrawl/webevents"
)

// PublishConfig shapes the publisher experiment: a document root served
// on loopback, `cocrawl publish` on it, and a peer that merges from it.
// Zero fields take the defaults named.
type PublishConfig struct {
	Files     int     // default 10,000
	PerMinute float64 // file changes a minute (Poisson); default 100
	Measure   time.Duration
	// MergeMin and MergeMax are the peer's merge schedule; defaults those
	// of `cocrawl run`, 1 s and 30 min.
	MergeMin, MergeMax time.Duration
	// IndexNow makes the publisher ping the peer's /indexnow with each
	// change, which moves the peer's next merge forward.
	IndexNow bool
	Seed     uint64
	Dir      string // where the root and stores go; default a temporary folder
	Progress io.Writer
	Logger   *slog.Logger
}

func (c *PublishConfig) defaults() {
	if c.Files <= 0 {
		c.Files = 10000
	}
	if c.PerMinute <= 0 {
		c.PerMinute = 100
	}
	if c.Measure <= 0 {
		c.Measure = 3 * time.Minute
	}
	if c.MergeMin <= 0 {
		c.MergeMin = peer.DefaultMergeMin
	}
	if c.MergeMax <= 0 {
		c.MergeMax = 30 * time.Minute
	}
	if c.Seed == 0 {
		c.Seed = 1
	}
	if c.Progress == nil {
		c.Progress = io.Discard
	}
	if c.Logger == nil {
		c.Logger = slog.New(slog.DiscardHandler)
	}
}

// PublishReport is what the publisher experiment measured.
type PublishReport struct {
	Config PublishConfig
	// FirstMerge is the time from the peer's start until it held every
	// file, from a publisher that had just published the site.
	FirstMerge time.Duration
	Changes    int // files changed in the measured window
	Arrived    int // of them, held by the peer at the end
	// Delays from a file's change to the event in the publisher's store
	// and in the merging peer's store: quantiles 0.5, 0.9, 0.99 and max.
	PublisherDelay, PeerDelay [4]time.Duration
	// What the peer asked of the site in the measured window: page
	// requests, and of them spot-checks of the publisher's claims.
	SiteRequests, SpotChecks int64
	Merges                   int64 // the peer's merges in the window
	Delegated                int   // prefixes the peer left to the publisher
}

// Publish runs the publisher experiment.
func Publish(ctx context.Context, c PublishConfig) (*PublishReport, error) {
	c.defaults()
	ctx, cancel := context.WithCancel(ctx)
	r := &publishRig{c: c}
	defer r.close(cancel) // stops what runs before closing what it uses
	names, err := r.startSite()
	if err != nil {
		return nil, err
	}
	if err := r.startPublisher(ctx); err != nil {
		return nil, err
	}
	fmt.Fprintf(c.Progress, "published %d files\n", c.Files)
	if err := r.startPeer(ctx); err != nil {
		return nil, err
	}
	start := time.Now()
	err = waitUntil(ctx, 5*time.Minute, func() (bool, error) { return r.peer.Status(false).MergeEvents >= int64(c.Files), nil })
	if err != nil {
		return nil, fmt.Errorf("the peer did not merge the site: %w", err)
	}
	rep := &PublishReport{Config: c, FirstMerge: time.Since(start)}
	fmt.Fprintf(c.Progress, "the peer holds the site after %v; changing %.0f files a minute for %v\n", rep.FirstMerge.Round(time.Millisecond), c.PerMinute, c.Measure)
	before := r.peer.Status(false)
	requestsBefore := r.pageRequests.Load()
	if err := changeFiles(ctx, c, r.root, r.pub.Base(), names, r.pubStore, r.peerStore, rep); err != nil {
		return nil, err
	}
	after := r.peer.Status(false)
	rep.SiteRequests = r.pageRequests.Load() - requestsBefore
	rep.SpotChecks = after.Checks.Asked - before.Checks.Asked
	rep.Merges = after.Merges - before.Merges
	rep.Delegated = after.Delegated
	return rep, nil
}

// publishRig is what the publish experiment runs: a site on loopback, its
// publisher with a store and share server, and a peer that merges it.
type publishRig struct {
	c                   PublishConfig
	dir, root, siteURL  string
	pageRequests        atomic.Int64 // requests for the site's pages (not robots.txt)
	pubLn, peerLn       net.Listener
	pubStore, peerStore *webevents.BadgerStore
	pub                 *publish.Publisher
	peer                *peer.Peer
	wg                  sync.WaitGroup
	closers             []func() // run last first
}

// close stops the rig: its goroutines first, then their servers, stores
// and folder.
func (r *publishRig) close(cancel context.CancelFunc) {
	cancel()
	r.wg.Wait()
	for i := len(r.closers) - 1; i >= 0; i-- {
		r.closers[i]()
	}
}

// startSite writes the site's files into a folder (Config.Dir, else a
// temporary one) and serves them as a web server does: Last-Modified from
// the files.
func (r *publishRig) startSite() ([]string, error) {
	r.dir = r.c.Dir
	if r.dir == "" {
		d, err := os.MkdirTemp("", "cocrawl-measure-publish-")
		if err != nil {
			return nil, err
		}
		r.closers = append(r.closers, func() { os.RemoveAll(d) })
		r.dir = d
	}
	r.root = filepath.Join(r.dir, "site")
	names, err := writeSite(r.root, r.c.Files)
	if err != nil {
		return nil, err
	}
	files := http.FileServer(http.Dir(r.root))
	site, siteURL, err := serveLoopback(http.HandlerFunc(func(w http.ResponseWriter, req *http.Request) {
		if req.URL.Path != "/robots.txt" {
			r.pageRequests.Add(1)
		}
		files.ServeHTTP(w, req)
	}))
	if err != nil {
		return nil, err
	}
	r.siteURL = siteURL
	r.closers = append(r.closers, func() { site.Close() })
	return names, nil
}

// serveOn serves h on ln until the rig closes.
func (r *publishRig) serveOn(ln net.Listener, h http.Handler) {
	srv := &http.Server{Handler: h, ReadHeaderTimeout: 5 * time.Second}
	go srv.Serve(ln)
	r.closers = append(r.closers, func() { srv.Close() })
}

// startPublisher starts the publisher (and its IndexNow pinger, pushing
// to the peer's address) with its share server, and waits until it has
// published every file.
func (r *publishRig) startPublisher(ctx context.Context) error {
	var err error
	if r.pubStore, err = webevents.OpenBadger(filepath.Join(r.dir, "publisher"), webevents.BadgerOptions{MemTableSize: 8 << 20, Logger: r.c.Logger}); err != nil {
		return err
	}
	r.closers = append(r.closers, func() { r.pubStore.Close() })
	if r.pubLn, err = net.Listen("tcp", "127.0.0.1:0"); err != nil {
		return err
	}
	r.closers = append(r.closers, func() { r.pubLn.Close() })
	if r.peerLn, err = net.Listen("tcp", "127.0.0.1:0"); err != nil {
		return err
	}
	r.closers = append(r.closers, func() { r.peerLn.Close() })
	pc := publish.Config{Root: r.root, Base: r.siteURL, CID: publish.CID(r.pubLn.Addr().String()), Logger: r.c.Logger}
	if r.c.IndexNow {
		pinger, err := publish.AttachPinger(&pc, publish.NewKey(), "", []string{"http://" + r.peerLn.Addr().String() + "/indexnow"})
		if err != nil {
			return err
		}
		r.wg.Add(1)
		go func() { defer r.wg.Done(); pinger.Run(ctx) }()
	}
	if r.pub, err = publish.New(r.pubStore, pc); err != nil {
		return err
	}
	srv, err := protocol.NewServer(r.pubStore, protocol.ServerOptions{Control: r.pub.ShareControl(""), Logger: r.c.Logger})
	if err != nil {
		return err
	}
	r.serveOn(r.pubLn, srv)
	pubDone := make(chan error, 1)
	r.wg.Add(1)
	go func() { defer r.wg.Done(); pubDone <- r.pub.Run(ctx) }()
	return waitUntil(ctx, 0, func() (bool, error) {
		select {
		case err := <-pubDone:
			return false, fmt.Errorf("the publisher stopped: %v", err)
		default:
			return r.pub.Stats().Created >= int64(r.c.Files), nil
		}
	})
}

// startPeer starts a peer as `cocrawl run` would, with the publisher as
// its one peer.
func (r *publishRig) startPeer(ctx context.Context) error {
	var err error
	if r.peerStore, err = webevents.OpenBadger(filepath.Join(r.dir, "peer"), webevents.BadgerOptions{MemTableSize: 8 << 20, Logger: r.c.Logger}); err != nil {
		return err
	}
	r.closers = append(r.closers, func() { r.peerStore.Close() })
	r.peer, err = peer.New(peer.Config{
		Addr: r.peerLn.Addr().String(), Share: true, Mode: "sharing-hybrid",
		Crawl: crawl.Config{Seeds: []string{r.siteURL}, Workers: 4, Agent: "cocrawl",
			Fetch: crawl.FetchConfig{AllowPrivate: true, Timeout: 5 * time.Second}},
		Peers: []string{"http://" + r.pubLn.Addr().String() + "/robots.shr"}, AllowPrivate: true,
		Schedule: peer.MergeSchedule{MergeMin: r.c.MergeMin, MergeMax: r.c.MergeMax},
		Grace:    time.Second, Logger: r.c.Logger,
	}, peer.StoresIn(r.peerStore))
	if err != nil {
		return err
	}
	r.serveOn(r.peerLn, r.peer.Handler())
	r.wg.Add(1)
	go func() { defer r.wg.Done(); _ = r.peer.Run(ctx) }()
	return nil
}

// waitUntil polls cond every 50 ms until it holds, fails, ctx ends or
// limit (0: none) passes.
func waitUntil(ctx context.Context, limit time.Duration, cond func() (bool, error)) error {
	start := time.Now()
	for {
		ok, err := cond()
		if ok || err != nil {
			return err
		}
		if limit > 0 && time.Since(start) > limit {
			return fmt.Errorf("not within %v", limit)
		}
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-time.After(50 * time.Millisecond):
		}
	}
}

// writeSite writes n small HTML files in folders of 100, dated a day ago,
// and returns their names.
func writeSite(root string, n int) ([]string, error) {
	old := time.Now().Add(-24 * time.Hour)
	names := make([]string, 0, n)
	for i := range n {
		name := fmt.Sprintf("s%03d/p%05d.html", i/100, i)
		p := filepath.Join(root, filepath.FromSlash(name))
		if i%100 == 0 {
			if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
				return nil, err
			}
		}
		if err := os.WriteFile(p, fmt.Appendf(nil, "<html><body><p>page %d</p></body></html>\n", i), 0o644); err != nil {
			return nil, err
		}
		if err := os.Chtimes(p, old, old); err != nil {
			return nil, err
		}
		names = append(names, name)
	}
	return names, nil
}

// serveLoopback serves h on a loopback port.
func serveLoopback(h http.Handler) (*http.Server, string, error) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return nil, "", err
	}
	srv := &http.Server{Handler: h, ReadHeaderTimeout: 5 * time.Second}
	go srv.Serve(ln)
	return srv, "http://" + ln.Addr().String() + "/", nil
}

// change is one file changed, waiting to reach the stores.
type change struct {
	url        string
	lmd        int64
	at         time.Time
	pub, inPub time.Duration // publisher delay, and whether seen (inPub > 0)
}

// changeFiles changes random files (Poisson, PerMinute) for Measure and
// times each change's arrival in the publisher's and the peer's stores,
// looking every 20 ms; it waits up to 3 merge waits for the last ones.
func changeFiles(ctx context.Context, c PublishConfig, root, base string, names []string, pubStore, peerStore *webevents.BadgerStore, rep *PublishReport) error {
	rng := rand.New(rand.NewPCG(c.Seed, 7))
	var pending, done []*change
	busy := map[string]bool{}
	var pubDelays, peerDelays []time.Duration
	end := time.Now().Add(c.Measure)
	next := time.Now()
	look := time.NewTicker(20 * time.Millisecond)
	defer look.Stop()
	for {
		now := time.Now()
		for now.Before(end) && !now.Before(next) {
			name := names[rng.IntN(len(names))]
			if busy[name] {
				continue
			}
			p := filepath.Join(root, filepath.FromSlash(name))
			if err := os.WriteFile(p, fmt.Appendf(nil, "<html><body><p>%s changed at %s</p></body></html>\n", name, now.Format(time.RFC3339Nano)), 0o644); err != nil {
				return err
			}
			busy[name] = true
			pending = append(pending, &change{url: base + name, lmd: now.Unix(), at: now})
			rep.Changes++
			next = next.Add(time.Duration(rng.ExpFloat64() * float64(time.Minute) / c.PerMinute))
		}
		kept := pending[:0]
		for _, ch := range pending {
			if ch.inPub == 0 {
				if e, ok, err := pubStore.Get(ch.url); err == nil && ok && e.LMD >= ch.lmd {
					ch.inPub = time.Since(ch.at)
					pubDelays = append(pubDelays, ch.inPub)
				}
			}
			if e, ok, err := peerStore.Get(ch.url); err == nil && ok && e.LMD >= ch.lmd {
				peerDelays = append(peerDelays, time.Since(ch.at))
				rep.Arrived++
				delete(busy, ch.url[len(base):])
				done = append(done, ch)
				continue
			}
			kept = append(kept, ch)
		}
		pending = kept
		if !now.Before(end) && (len(pending) == 0 || now.After(end.Add(3*c.MergeMin+10*time.Second))) {
			break
		}
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-look.C:
		}
	}
	rep.PublisherDelay, rep.PeerDelay = quantiles(pubDelays), quantiles(peerDelays)
	return nil
}

// quantiles gives 0.5, 0.9, 0.99 and the maximum.
func quantiles(d []time.Duration) [4]time.Duration {
	var q [4]time.Duration
	if len(d) == 0 {
		return q
	}
	slices.Sort(d)
	at := func(f float64) time.Duration { return d[min(len(d)-1, int(f*float64(len(d))))] }
	return [4]time.Duration{at(0.5), at(0.9), at(0.99), d[len(d)-1]}
}

// Print writes the report.
func (r *PublishReport) Print(w io.Writer) {
	c := r.Config
	ping := ""
	if c.IndexNow {
		ping = "; the publisher pings the peer with IndexNow"
	}
	fmt.Fprintf(w, "publisher: %d files, %.0f changes a minute for %v; peer merges every %v to %v%s\n", c.Files, c.PerMinute, c.Measure, c.MergeMin, c.MergeMax, ping)
	fmt.Fprintf(w, "first merge of the whole site: %v\n", r.FirstMerge.Round(time.Millisecond))
	fmt.Fprintf(w, "changes: %d, reached the peer: %d\n", r.Changes, r.Arrived)
	q := func(d [4]time.Duration) string {
		return fmt.Sprintf("median %v, p90 %v, p99 %v, max %v", d[0].Round(time.Millisecond), d[1].Round(time.Millisecond), d[2].Round(time.Millisecond), d[3].Round(time.Millisecond))
	}
	fmt.Fprintf(w, "delay, file change to the publisher's store: %s\n", q(r.PublisherDelay))
	fmt.Fprintf(w, "delay, file change to the merging peer's store: %s\n", q(r.PeerDelay))
	fmt.Fprintf(w, "the peer's requests to the site in the window: %d pages, %d of them spot-checks asked; %d merges; %d prefix left to the publisher\n",
		r.SiteRequests, r.SpotChecks, r.Merges, r.Delegated)
}
