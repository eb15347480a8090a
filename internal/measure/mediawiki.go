package measure

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"log"
	"log/slog"
	"math/rand/v2"
	"net"
	"net/http"
	"net/http/httputil"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/cocrawl/cocrawl/crawl"
	"github.com/cocrawl/cocrawl/webevents"
)

// MediaWikiConfig shapes the check of web-events against a real CMS:
// MediaWiki (Debian's package) on SQLite, served by PHP's built-in server
// on loopback, its pages edited and deleted with its own maintenance
// scripts while one crawler polls it.
type MediaWikiConfig struct {
	Pages       int           // articles; default 30
	ChangeEvery time.Duration // mean time between two edits of one article; default 1 min
	Delay       time.Duration // the crawler's politeness delay; default 200 ms
	Run         time.Duration // default 3 min
	DeleteShare float64       // share of the articles deleted during the run; default 0.1
	Seed        uint64
	// Install is MediaWiki's folder; default /usr/share/mediawiki.
	Install  string
	Progress io.Writer
}

func (c *MediaWikiConfig) defaults() {
	if c.Pages <= 0 {
		c.Pages = 30
	}
	if c.ChangeEvery <= 0 {
		c.ChangeEvery = time.Minute
	}
	if c.Delay <= 0 {
		c.Delay = 200 * time.Millisecond
	}
	if c.Run <= 0 {
		c.Run = 3 * time.Minute
	}
	if c.DeleteShare <= 0 {
		c.DeleteShare = 0.1
	}
	if c.Seed == 0 {
		c.Seed = 1
	}
	if c.Install == "" {
		c.Install = "/usr/share/mediawiki"
	}
}

// ErrNoMediaWiki says PHP or MediaWiki is not installed.
var ErrNoMediaWiki = errors.New("measure: MediaWiki or PHP is not installed (Debian: apt-get install mediawiki php-cli php-sqlite3)")

// MediaWikiReport is the check's outcome.
type MediaWikiReport struct {
	Config      MediaWikiConfig
	Articles    EventsKind
	Deleted     EventsDeletion
	LiveDeleted int
	Edits       int
	Deletes     int // articles deleted; Deleted.Seen counts those looked at again after
	Polls       int64
	DeletedBy   map[string]int64
	Start       time.Time
	Missed      []MissedChange // changes seen that no UPDATE reported
}

// wiki is a MediaWiki served on loopback.
type wiki struct {
	cfg     MediaWikiConfig
	dir     string
	php     string
	conf    string
	base    string // the proxy's URL, the wiki's $wgServer
	srv     *exec.Cmd
	proxy   *http.Server
	logMu   sync.Mutex
	looks   map[string][]look // article URL -> what the proxy served
	revRe   *regexp.Regexp
	editsMu sync.Mutex
}

// MediaWiki installs a wiki in a new folder, runs the check, and removes
// it.
func MediaWiki(ctx context.Context, c MediaWikiConfig) (*MediaWikiReport, error) {
	c.defaults()
	php, err := exec.LookPath("php")
	if err != nil {
		return nil, ErrNoMediaWiki
	}
	if _, err := os.Stat(filepath.Join(c.Install, "maintenance", "install.php")); err != nil {
		return nil, ErrNoMediaWiki
	}
	dir, err := os.MkdirTemp("", "cocrawl-mediawiki-")
	if err != nil {
		return nil, err
	}
	defer os.RemoveAll(dir)
	w := &wiki{cfg: c, dir: dir, php: php, conf: filepath.Join(dir, "LocalSettings.php"), looks: map[string][]look{},
		revRe: regexp.MustCompile(`"wgCurRevisionId":([0-9]+)`)}
	if err := w.start(ctx); err != nil {
		w.stop()
		return nil, err
	}
	defer w.stop()
	return w.run(ctx)
}

// freePort is a loopback port nobody listens on now.
func freePort() (int, error) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return 0, err
	}
	defer ln.Close()
	return ln.Addr().(*net.TCPAddr).Port, nil
}

func (w *wiki) start(ctx context.Context) error {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return err
	}
	w.base = "http://" + ln.Addr().String()
	port, err := freePort()
	if err != nil {
		ln.Close()
		return err
	}
	data := filepath.Join(w.dir, "data")
	if err := os.MkdirAll(data, 0o755); err != nil {
		ln.Close()
		return err
	}
	if out, err := exec.CommandContext(ctx, w.php, filepath.Join(w.cfg.Install, "maintenance", "install.php"),
		"--dbtype", "sqlite", "--dbpath", data, "--dbname", "wiki", "--server", w.base, "--scriptpath", "",
		"--confpath", w.dir, "--pass", "cocrawl-measure-pass-2026", "CocrawlWiki", "Admin").CombinedOutput(); err != nil {
		ln.Close()
		return fmt.Errorf("measure: install MediaWiki: %v: %s", err, lastLines(out))
	}
	w.srv = exec.Command(w.php, "-S", fmt.Sprintf("127.0.0.1:%d", port), "-t", w.cfg.Install)
	w.srv.Env = append(os.Environ(), "MW_CONFIG_FILE="+w.conf, "PHP_CLI_SERVER_WORKERS=2")
	w.srv.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	if err := w.srv.Start(); err != nil {
		ln.Close()
		return err
	}
	target, _ := url.Parse(fmt.Sprintf("http://127.0.0.1:%d", port))
	rp := httputil.NewSingleHostReverseProxy(target)
	rp.ModifyResponse = w.logResponse
	rp.ErrorLog = log.New(io.Discard, "", 0) // PHP's server still starting: the wait below retries
	w.proxy = &http.Server{Handler: rp, ReadHeaderTimeout: 5 * time.Second}
	go w.proxy.Serve(ln)
	// Up when the main page answers.
	for i := 0; ; i++ {
		resp, err := http.Get(w.base + "/index.php/Main_Page")
		if err == nil {
			resp.Body.Close()
			break
		}
		if i > 100 {
			return fmt.Errorf("measure: PHP's server did not start: %v", err)
		}
		time.Sleep(50 * time.Millisecond)
	}
	return nil
}

func (w *wiki) stop() {
	if w.proxy != nil {
		w.proxy.Close()
	}
	if w.srv != nil && w.srv.Process != nil {
		_ = syscall.Kill(-w.srv.Process.Pid, syscall.SIGKILL)
		_ = w.srv.Wait()
	}
}

// logResponse notes what the wiki served an article's URL: its revision
// (MediaWiki writes wgCurRevisionId into every article view), 0 for no
// article.
func (w *wiki) logResponse(resp *http.Response) error {
	path := resp.Request.URL.Path
	if !strings.HasPrefix(path, "/index.php/Article_") || resp.Request.URL.RawQuery != "" {
		return nil
	}
	body, err := io.ReadAll(io.LimitReader(resp.Body, 4<<20))
	resp.Body.Close()
	resp.Body = io.NopCloser(bytes.NewReader(body))
	if err != nil {
		return err
	}
	rev := 0
	if resp.StatusCode == 200 {
		if m := w.revRe.FindSubmatch(body); m != nil {
			rev, _ = strconv.Atoi(string(m[1]))
		}
	}
	w.logMu.Lock()
	u := w.base + path
	w.looks[u] = append(w.looks[u], newLook(time.Now(), rev, resp.StatusCode))
	w.logMu.Unlock()
	return nil
}

// maintenance runs one of MediaWiki's maintenance scripts.
func (w *wiki) maintenance(ctx context.Context, stdin string, script string, args ...string) error {
	cmd := exec.CommandContext(ctx, w.php, append([]string{filepath.Join(w.cfg.Install, "maintenance", script)}, args...)...)
	cmd.Env = append(os.Environ(), "MW_CONFIG_FILE="+w.conf)
	cmd.Stdin = strings.NewReader(stdin)
	if out, err := cmd.CombinedOutput(); err != nil {
		return fmt.Errorf("measure: %s: %v: %s", script, err, lastLines(out))
	}
	return nil
}

func lastLines(b []byte) string {
	s := strings.TrimSpace(string(b))
	if len(s) > 400 {
		s = s[len(s)-400:]
	}
	return s
}

// articleText is the wikitext of an article's version: three paragraphs,
// an edit rewrites one of them (as testweb's pages).
func articleText(i, version int) string {
	var b strings.Builder
	fmt.Fprintf(&b, "'''Article %d''' is a test article.\n\n", i)
	for k := range paragraphs {
		rng := rand.New(rand.NewPCG(uint64(i)<<20|uint64(k), uint64((version+paragraphs-1-k)/paragraphs)))
		for n := range 40 {
			if n > 0 {
				b.WriteByte(' ')
			}
			b.WriteString(wikiWords[rng.IntN(len(wikiWords))])
		}
		b.WriteString("\n\n")
	}
	fmt.Fprintf(&b, "See also [[Article_%d]].\n", (i+1)%1000)
	return b.String()
}

const paragraphs = 3

var wikiWords = strings.Fields(`river market station village church history war life family report
council center early season work national public line street building local research book power
field music album game road centre group land company party development known based government
state world people school city north south east west part water house park series team film`)

func (w *wiki) run(ctx context.Context) (*MediaWikiReport, error) {
	c := w.cfg
	rep := &MediaWikiReport{Config: c}
	versions := make([]int, c.Pages)
	var main strings.Builder
	main.WriteString("The articles of this wiki:\n\n")
	for i := range c.Pages {
		versions[i] = 1
		if err := w.maintenance(ctx, articleText(i, 1), "edit.php", "-u", "Admin", "-s", "create", fmt.Sprintf("Article_%d", i)); err != nil {
			return nil, err
		}
		fmt.Fprintf(&main, "* [[Article_%d]]\n", i)
	}
	if err := w.maintenance(ctx, main.String(), "edit.php", "-u", "Admin", "-s", "list", "Main_Page"); err != nil {
		return nil, err
	}
	store := &recordingStore{MemStore: webevents.NewMemStore()}
	cr, err := crawl.New(crawl.Config{
		Seeds: []string{w.base + "/index.php/Main_Page"}, CID: "measure.test:1 cocrawl/1.1", MinDelay: c.Delay, DelaySet: true,
		Fetch:  crawl.FetchConfig{AllowPrivate: true, Timeout: 10 * time.Second},
		Logger: slog.New(slog.DiscardHandler),
	}, store, &crawl.MemFrontier{})
	if err != nil {
		return nil, err
	}
	runCtx, cancel := context.WithTimeout(ctx, c.Run)
	defer cancel()
	done := make(chan struct{})
	go func() { defer close(done); cr.Run(runCtx) }()
	rng := rand.New(rand.NewPCG(c.Seed, 29))
	deletes := int(c.DeleteShare*float64(c.Pages) + 0.5)
	deletedAt := map[int]int64{}
	start := time.Now()
	// Edits: Poisson over the articles, a mean of ChangeEvery per article.
	gap := c.ChangeEvery / time.Duration(c.Pages)
	next := start.Add(time.Duration(rng.ExpFloat64() * float64(gap)))
	for runCtx.Err() == nil {
		if d := time.Until(next); d > 0 {
			select {
			case <-runCtx.Done():
			case <-time.After(d):
			}
			continue
		}
		next = next.Add(time.Duration(rng.ExpFloat64() * float64(gap)))
		el := time.Since(start)
		// Deletions early (from an eighth of the run to its half): a deleted
		// article must be looked at again before the end to count, and a
		// slow machine's crawler reaches each article less often.
		if el > c.Run/8 && len(deletedAt) < deletes && float64(len(deletedAt)) < float64(deletes)*(el-c.Run/8).Seconds()/(c.Run*3/8).Seconds() {
			i := len(deletedAt) * (c.Pages / max(deletes, 1))
			if err := w.maintenance(runCtx, fmt.Sprintf("Article_%d\n", i), "deleteBatch.php", "-u", "Admin", "-r", "measure"); err != nil && runCtx.Err() == nil {
				return nil, err
			}
			deletedAt[i] = time.Now().Unix()
			continue
		}
		i := rng.IntN(c.Pages)
		if _, gone := deletedAt[i]; gone {
			continue
		}
		versions[i]++
		if err := w.maintenance(runCtx, articleText(i, versions[i]), "edit.php", "-u", "Admin", "-s", "edit", fmt.Sprintf("Article_%d", i)); err != nil && runCtx.Err() == nil {
			return nil, err
		}
		rep.Edits++
		if c.Progress != nil && rep.Edits%20 == 0 {
			fmt.Fprintf(c.Progress, "%5.0fs  %d edits, %d articles deleted, %d polls\n", time.Since(start).Seconds(), rep.Edits, len(deletedAt), cr.Stats().Polls)
		}
	}
	<-done
	st := cr.Stats()
	rep.Polls, rep.DeletedBy, rep.Deletes = st.Polls, st.DeletedBy, len(deletedAt)
	w.logMu.Lock()
	defer w.logMu.Unlock()
	j := newUpdateJudge(w.looks, func(string) string { return "article" })
	for _, e := range store.events {
		if _, ok := w.looks[e.URL]; ok {
			j.event(e)
		}
	}
	if ks := j.finish(); len(ks) > 0 {
		rep.Articles = ks[0]
	}
	rep.Start, rep.Missed = start, j.missed
	rep.Deleted.Style = "MediaWiki deletion (404)"
	for i := range c.Pages {
		u := fmt.Sprintf("%s/index.php/Article_%d", w.base, i)
		e, ok, _ := store.Get(u)
		held := ok && e.Stat == webevents.Delete
		at, gone := deletedAt[i]
		switch {
		case !gone && held:
			rep.LiveDeleted++
		case gone && seenLiveThenGone(w.looks[u], at):
			rep.Deleted.Seen++
			if held {
				rep.Deleted.Held++
			}
		}
	}
	return rep, nil
}

// Print writes the report.
func (r *MediaWikiReport) Print(out io.Writer) {
	k := r.Articles
	fmt.Fprintf(out, "MediaWiki (SQLite, PHP's built-in server on loopback), %d articles edited every %v on average (a third of the text rewritten), %.0f%% deleted; one crawler on cocrawl crawl's defaults, --delay %v, for %v: %d polls, %d edits\n",
		r.Config.Pages, r.Config.ChangeEvery, 100*r.Config.DeleteShare, r.Config.Delay, r.Config.Run, r.Polls, r.Edits)
	fmt.Fprintf(out, "articles: %d updates reported, %d true; %d changes seen, %d detected: precision %.3f, recall %.3f\n",
		k.Reported, k.True, k.Changes, k.Detected, k.Precision(), k.Recall())
	fmt.Fprintf(out, "deletions: %d articles deleted, %d looked at again after, %d of those held deleted; live articles held deleted: %d; deletions decided by %v\n",
		r.Deletes, r.Deleted.Seen, r.Deleted.Held, r.LiveDeleted, r.DeletedBy)
	printMissed(out, r.Missed, r.Start)
}
