package measure

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"math"
	"mime"
	"net"
	"net/http"
	"net/url"
	"os"
	"path"
	"path/filepath"
	"sort"
	"strings"
	"sync"
	"time"

	"github.com/cocrawl/cocrawl/crawl"
	"github.com/cocrawl/cocrawl/webevents"
)

// FirstVisitConfig shapes the first-visit experiment.
type FirstVisitConfig struct {
	// Sites are folders of real HTML (a documentation tree, a saved site),
	// each served on its own loopback port, crawled from Start.
	Sites []string
	Start string  // path of the first page; default "/index.html"
	Share float64 // share of each site's URLs the crawl may fetch; default 0.1
	Hot   float64 // share of URLs, by in-links, that are hot; default 0.1
	// Delay is the live crawls' politeness delay; default 20 ms.
	Delay time.Duration
	// MaxURLs bounds the site graph (and the requests that map it);
	// default 50,000.
	MaxURLs  int
	Progress io.Writer
}

func (c *FirstVisitConfig) defaults() {
	if c.Start == "" {
		c.Start = "/index.html"
	}
	if c.Share <= 0 {
		c.Share = 0.1
	}
	if c.Hot <= 0 {
		c.Hot = 0.1
	}
	if c.Delay <= 0 {
		c.Delay = 20 * time.Millisecond
	}
	if c.MaxURLs <= 0 {
		c.MaxURLs = 50000
	}
}

// SiteResult is one site's share of hot pages found by each order.
type SiteResult struct {
	Site      string
	URLs      int // URLs of the site reachable from Start
	Hot       int // those with at least HotLinks in-links
	HotLinks  int
	Budget    int                // requests each order may make
	Simulated map[string]float64 // breadth, backlinks, pagerank: share of hot pages found
	Live      map[string]float64 // the crawler, by its first-visit order
}

// Best is the better of the two simulated importance orderings.
func (r SiteResult) Best() float64 {
	return max(r.Simulated[orderBacklinks], r.Simulated[orderPageRank])
}

const (
	orderBreadth   = "breadth"
	orderBacklinks = "backlinks"
	orderPageRank  = "pagerank"
)

// FirstVisits maps each site's link graph, finds its hot pages, and
// compares the share of them that the crawler finds within a tenth of the
// site (live, over HTTP, politely) with breadth-first, backlink (IB') and
// PageRank (IR') orderings simulated on the same graph (Cho, Garcia-Molina
// and Page, "Efficient crawling through URL ordering", 1998).
func FirstVisits(ctx context.Context, cfg FirstVisitConfig) ([]SiteResult, error) {
	cfg.defaults()
	var out []SiteResult
	for _, dir := range cfg.Sites {
		r, err := firstVisitsOn(ctx, cfg, dir)
		if err != nil {
			return out, fmt.Errorf("%s: %w", dir, err)
		}
		out = append(out, r)
	}
	return out, nil
}

func firstVisitsOn(ctx context.Context, cfg FirstVisitConfig, dir string) (SiteResult, error) {
	srv, err := serveFolder(dir)
	if err != nil {
		return SiteResult{}, err
	}
	defer srv.close()
	start := srv.url + cfg.Start
	g, err := mapSite(ctx, start, cfg.MaxURLs)
	if err != nil {
		return SiteResult{}, err
	}
	res := SiteResult{Site: dir, URLs: len(g.nodes), Simulated: map[string]float64{}, Live: map[string]float64{}}
	res.Budget = int(math.Ceil(cfg.Share * float64(len(g.nodes))))
	hot := g.hotPages(cfg.Hot)
	res.Hot = len(hot)
	for u := range hot {
		if res.HotLinks == 0 || g.inLinks[u] < res.HotLinks {
			res.HotLinks = g.inLinks[u]
		}
	}
	for _, order := range []string{orderBreadth, orderBacklinks, orderPageRank} {
		res.Simulated[order] = foundShare(g.simulate(start, order, res.Budget), hot)
	}
	for _, order := range []string{crawl.FirstByBacklinks, crawl.FirstByBreadth} {
		fetched, err := crawlLive(ctx, cfg, srv, start, order, res.Budget)
		if err != nil {
			return res, err
		}
		res.Live[order] = foundShare(fetched, hot)
		if cfg.Progress != nil {
			fmt.Fprintf(cfg.Progress, "%s: live %s crawl fetched %d URLs\n", filepath.Base(dir), order, len(fetched))
		}
	}
	return res, nil
}

func foundShare(fetched []string, hot map[string]bool) float64 {
	n := 0
	for _, u := range fetched {
		if hot[u] {
			n++
		}
	}
	return float64(n) / float64(max(len(hot), 1))
}

// folderServer serves a folder as a plain web server does: files as they
// are (with Last-Modified and conditional GET), a folder's index.html for
// the folder, 404 for anything else (no listings, no redirects). It counts
// the requests for pages (not robots.txt) and logs the paths answered 200.
type folderServer struct {
	url  string
	srv  *http.Server
	root string

	mu       sync.Mutex
	requests int
	limit    int // requests past it are not logged (the crawl's budget)
	ok       []string
	done     chan struct{}
}

func serveFolder(root string) (*folderServer, error) {
	if fi, err := os.Stat(root); err != nil || !fi.IsDir() {
		return nil, fmt.Errorf("not a folder: %s", root)
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return nil, err
	}
	s := &folderServer{url: "http://" + ln.Addr().String(), root: root}
	s.srv = &http.Server{Handler: s, ReadHeaderTimeout: 5 * time.Second}
	go s.srv.Serve(ln)
	return s, nil
}

func (s *folderServer) close() { s.srv.Close() }

// watch starts counting requests afresh: done closes after limit.
func (s *folderServer) watch(limit int) <-chan struct{} {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.requests, s.limit, s.ok, s.done = 0, limit, nil, make(chan struct{})
	return s.done
}

func (s *folderServer) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	p := path.Clean("/" + r.URL.Path)
	name := filepath.Join(s.root, filepath.FromSlash(p))
	fi, err := os.Stat(name)
	if err == nil && fi.IsDir() {
		name = filepath.Join(name, "index.html")
		fi, err = os.Stat(name)
	}
	counted := p != "/robots.txt"
	s.mu.Lock()
	if counted {
		s.requests++
	}
	within := s.done != nil && s.requests <= s.limit
	if counted && s.done != nil && s.requests == s.limit {
		close(s.done)
	}
	s.mu.Unlock()
	if err != nil || fi.IsDir() {
		http.NotFound(w, r)
		return
	}
	f, err := os.Open(name)
	if err != nil {
		http.NotFound(w, r)
		return
	}
	defer f.Close()
	if ct := mime.TypeByExtension(filepath.Ext(name)); ct != "" {
		w.Header().Set("Content-Type", ct)
	}
	if counted && within {
		if u, err := crawl.Normalize(nil, s.url+r.URL.RequestURI()); err == nil {
			s.mu.Lock()
			s.ok = append(s.ok, u)
			s.mu.Unlock()
		}
	}
	http.ServeContent(w, r, name, fi.ModTime(), f)
}

func (s *folderServer) fetched() []string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([]string(nil), s.ok...)
}

// crawlLive runs the crawler on the site with the given first-visit order
// until it has made budget page requests, and returns the URLs it fetched.
func crawlLive(ctx context.Context, cfg FirstVisitConfig, srv *folderServer, start, order string, budget int) ([]string, error) {
	done := srv.watch(budget)
	c, err := crawl.New(crawl.Config{
		Seeds: []string{start}, CID: "measure.test:1 cocrawl/1.1", Workers: 1,
		MinDelay: cfg.Delay, DelaySet: true, DelayFactor: 1, FirstVisits: order,
		NoSitemaps: true, // the order of first visits is measured: every request is a page
		RevisitMin: time.Hour, RevisitMax: 24 * time.Hour,
		Fetch:  crawl.FetchConfig{AllowPrivate: true, Timeout: 5 * time.Second},
		Logger: slog.New(slog.DiscardHandler),
	}, webevents.NewMemStore(), &crawl.MemFrontier{})
	if err != nil {
		return nil, err
	}
	cctx, cancel := context.WithTimeout(ctx, time.Duration(budget+10)*(cfg.Delay+time.Second))
	defer cancel()
	go func() {
		select {
		case <-done:
		case <-cctx.Done():
		}
		cancel()
	}()
	if err := c.Run(cctx); err != nil && !errors.Is(err, context.Canceled) && !errors.Is(err, context.DeadlineExceeded) {
		return nil, err
	}
	if ctx.Err() != nil {
		return nil, ctx.Err()
	}
	return srv.fetched(), nil
}

// siteGraph is a site's link graph as the crawler sees it: URLs normalised
// by crawl.Normalize, links extracted by crawl.ExtractLinks, same host only.
type siteGraph struct {
	nodes   []string            // in the order found breadth-first
	out     map[string][]string // links of each HTML page, without itself
	inLinks map[string]int      // distinct pages linking to each URL
}

// mapSite fetches every URL of the site reachable from start (at most
// max), with no delay: the server is the experiment's own, on loopback.
func mapSite(ctx context.Context, start string, maxURLs int) (*siteGraph, error) {
	client := &http.Client{Timeout: 10 * time.Second, CheckRedirect: func(*http.Request, []*http.Request) error {
		return http.ErrUseLastResponse
	}}
	first, err := crawl.Normalize(nil, start)
	if err != nil {
		return nil, err
	}
	host := hostOf(first)
	g := &siteGraph{out: map[string][]string{}, inLinks: map[string]int{}}
	seen := map[string]bool{first: true}
	queue := []string{first}
	for len(queue) > 0 {
		if err := ctx.Err(); err != nil {
			return nil, err
		}
		u := queue[0]
		queue = queue[1:]
		g.nodes = append(g.nodes, u)
		links, err := pageLinks(ctx, client, u)
		if err != nil {
			return nil, err
		}
		for _, l := range links {
			if l == u || hostOf(l) != host {
				continue
			}
			g.out[u] = append(g.out[u], l)
			g.inLinks[l]++
			if !seen[l] && len(seen) < maxURLs {
				seen[l] = true
				queue = append(queue, l)
			}
		}
	}
	return g, nil
}

func hostOf(u string) string {
	p, err := url.Parse(u)
	if err != nil {
		return ""
	}
	return p.Host
}

// pageLinks returns the links of an HTML page (and a redirect's target).
func pageLinks(ctx context.Context, client *http.Client, u string) ([]string, error) {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, u, nil)
	if err != nil {
		return nil, err
	}
	resp, err := client.Do(req)
	if err != nil {
		return nil, err
	}
	defer resp.Body.Close()
	base, _ := url.Parse(u)
	if loc := resp.Header.Get("Location"); loc != "" {
		if n, err := crawl.Normalize(base, loc); err == nil {
			return []string{n}, nil
		}
	}
	if resp.StatusCode != http.StatusOK || !strings.HasPrefix(resp.Header.Get("Content-Type"), "text/html") {
		return nil, nil
	}
	links, err := crawl.ExtractLinks(io.LimitReader(resp.Body, 16<<20), base)
	return links.URLs, err
}

// hotPages are the URLs with at least as many in-links as the one at rank
// share·N (Cho's threshold on IB(p)): ties at the threshold are all hot.
func (g *siteGraph) hotPages(share float64) map[string]bool {
	counts := make([]int, 0, len(g.nodes))
	for _, u := range g.nodes {
		counts = append(counts, g.inLinks[u])
	}
	sort.Sort(sort.Reverse(sort.IntSlice(counts)))
	k := max(1, int(math.Ceil(share*float64(len(counts)))))
	threshold := max(1, counts[min(k, len(counts))-1])
	hot := map[string]bool{}
	for _, u := range g.nodes {
		if g.inLinks[u] >= threshold {
			hot[u] = true
		}
	}
	return hot
}

// simulate visits budget URLs from start in the given order and returns
// them. Known URLs are those linked from visited pages; backlinks counts
// their in-links from visited pages (IB'); pagerank ranks them by
// PageRank over the graph of visited pages and their links (IR'),
// recomputed every step for budgets up to 500, else 500 times in all.
func (g *siteGraph) simulate(start, order string, budget int) []string {
	first, _ := crawl.Normalize(nil, start)
	var visited []string
	isVisited := map[string]bool{}
	known := []string{first} // in the order found
	knownAt := map[string]int{first: 0}
	seenLinks := map[string]int{}
	var rank map[string]float64
	every := max(1, budget/500)
	for step := 0; len(visited) < budget; step++ {
		if order == orderPageRank && step%every == 0 {
			rank = g.pageRank(visited, known)
		}
		best := ""
		for _, u := range known {
			if isVisited[u] {
				continue
			}
			if best == "" {
				best = u
				if order == orderBreadth {
					break
				}
				continue
			}
			switch order {
			case orderBacklinks:
				if seenLinks[u] > seenLinks[best] {
					best = u
				}
			case orderPageRank:
				if rank[u] > rank[best] {
					best = u
				}
			}
		}
		if best == "" {
			break
		}
		visited = append(visited, best)
		isVisited[best] = true
		for _, l := range g.out[best] {
			seenLinks[l]++
			if _, ok := knownAt[l]; !ok {
				knownAt[l] = len(known)
				known = append(known, l)
			}
		}
	}
	return visited
}

// pageRank is PageRank (damping 0.85, 30 iterations) over the known URLs,
// with the links of the visited pages; the others have no known links and
// spread their rank evenly.
func (g *siteGraph) pageRank(visited, known []string) map[string]float64 {
	n := float64(len(known))
	isVisited := make(map[string]bool, len(visited))
	for _, u := range visited {
		isVisited[u] = true
	}
	rank := make(map[string]float64, len(known))
	for _, u := range known {
		rank[u] = 1 / n
	}
	for range 30 {
		next := make(map[string]float64, len(known))
		dangling := 0.0
		for _, u := range known {
			links := g.out[u]
			if !isVisited[u] || len(links) == 0 {
				dangling += rank[u]
				continue
			}
			share := rank[u] / float64(len(links))
			for _, l := range links {
				next[l] += share
			}
		}
		for _, u := range known {
			next[u] = 0.15/n + 0.85*(next[u]+dangling/n)
		}
		rank = next
	}
	return rank
}

// PrintFirstVisits writes the results as a table.
func PrintFirstVisits(out io.Writer, cfg FirstVisitConfig, results []SiteResult) {
	cfg.defaults()
	fmt.Fprintf(out, "first visits: share of hot pages (top %.0f%% by in-links) found after %.0f%% of each site's URLs\n", 100*cfg.Hot, 100*cfg.Share)
	fmt.Fprintf(out, "%-34s %6s %5s %6s | %8s %9s %8s | %9s %8s | %s\n", "site", "URLs", "hot", "budget",
		"sim BFS", "sim IB'", "sim IR'", "live IB'", "live BFS", "live IB' / best sim")
	for _, r := range results {
		fmt.Fprintf(out, "%-34s %6d %5d %6d | %8.3f %9.3f %8.3f | %9.3f %8.3f | %.3f\n", r.Site, r.URLs, r.Hot, r.Budget,
			r.Simulated[orderBreadth], r.Simulated[orderBacklinks], r.Simulated[orderPageRank],
			r.Live[crawl.FirstByBacklinks], r.Live[crawl.FirstByBreadth], r.Live[crawl.FirstByBacklinks]/r.Best())
	}
}
