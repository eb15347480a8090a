package measure

import (
	"bufio"
	"cmp"
	"context"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"log/slog"
	"math"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"runtime/metrics"
	"runtime/pprof"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/cocrawl/cocrawl/crawl"
	"github.com/cocrawl/cocrawl/internal/fpmap"
	"github.com/cocrawl/cocrawl/internal/memlimit"
	"github.com/cocrawl/cocrawl/peer"
	"github.com/cocrawl/cocrawl/webevents"
)

// ScaleConfig shapes the scale experiment. Zero fields take the defaults
// named.
type ScaleConfig struct {
	Hosts, Pages int           // the web: hosts, pages each; default 1,000 x 1,000
	Links        int           // links per page within its host; default testweb's 5
	Run          time.Duration // crawl time; default 4 min
	Every        time.Duration // between samples; default 10 s
	Workers      int           // fetches in flight; default 64
	PortBase     int           // the web's hosts on 127.0.0.1:PortBase+i; default 30000
	// RevisitMin bounds revisits; default the crawler's own. The web does
	// not change: an hour makes the crawl find new URLs rather than
	// revisit the ones it polled, which is what grows a frontier.
	RevisitMin time.Duration
	// Exe is the cocrawl binary whose testweb command serves the web, in
	// a process of its own so that its memory is not the crawler's;
	// default this process's own binary.
	Exe string
	Dir string // the crawler's data folder; default a temporary one
	// HeapProfile, when set, is a file the crawl's Go heap profile is
	// written to at its end (pprof format): where the memory per URL goes.
	HeapProfile string
	// CPUProfile, when set, is a file the CPU profile of the crawl's last
	// minute (or quarter, when shorter) is written to, up to the run's
	// deadline (not the stop after it): where a slowing crawl spends its
	// time.
	CPUProfile string
	// EarlyCPUProfile, when set, is a file the CPU profile of a minute of
	// the baseline window is written to: from the first sample with
	// EarlyKnown URLs known (default 1.5 million, the middle of the 1-2
	// million window the late rates are compared with). With CPUProfile it
	// shows what a poll costs more late, function by function.
	EarlyCPUProfile string
	EarlyKnown      int64
	// WebCPUProfile, when set, is a file the web's process writes its CPU
	// profile to, from its start to its stop.
	WebCPUProfile string
	// RestartProfile, when set, is a file the CPU profile of the restart
	// (the store opened, the frontier loaded, the first poll) is written to.
	RestartProfile string
	// RestartOnly skips the crawl: the crawler restarts from the store
	// already in Dir (a crawl's before), on the web Hosts, Pages, Links and
	// PortBase describe, and only the restart is timed.
	RestartOnly bool
	// HeapHeadroom is the collector's headroom as a share of the live heap,
	// as `cocrawl run --heap-headroom` keeps it (internal/memlimit);
	// default memlimit.Default's, negative: Go's own (the heap doubles).
	HeapHeadroom float64
	// Head is how many first visits, and how many revisits, a host keeps
	// in memory (crawl.Config's FirstVisitsInMemory and RevisitsInMemory);
	// default the crawler's.
	Head int
	// FreshBaseline, when set, crawls the same web once more after the
	// restart, from nothing in a new data folder beside Dir (removed
	// after), until it knows 2 million URLs or for FreshRun (default 6
	// minutes; Run when shorter) at most: the baseline window of 1 to 2
	// million URLs known, measured again minutes after the late windows.
	// The machine's speed drifts in the course of a long run (the web's
	// CPU a poll, which does not change with the frontier, has moved by a
	// third within one), and the run's own baseline is half an hour older
	// than its late windows. Two baselines bracket the machine's speed;
	// they do not pin it (it has moved by a fifth within minutes).
	FreshBaseline bool
	FreshRun      time.Duration
	// stopKnown, when positive, ends the crawl at the first sample with
	// that many URLs known (the fresh crawl's).
	stopKnown int64
	Progress  io.Writer
}

func (c *ScaleConfig) defaults() {
	c.Hosts = cmp.Or(max(c.Hosts, 0), 1000)
	c.Pages = cmp.Or(max(c.Pages, 0), 1000)
	c.Workers = cmp.Or(max(c.Workers, 0), 64)
	c.PortBase = cmp.Or(max(c.PortBase, 0), 30000)
	if c.Run <= 0 {
		c.Run = 4 * time.Minute
	}
	if c.Every <= 0 {
		c.Every = 10 * time.Second
	}
	if c.Progress == nil {
		c.Progress = io.Discard
	}
	if c.HeapHeadroom == 0 {
		c.HeapHeadroom = memlimit.Default.Share
	}
	if c.EarlyKnown <= 0 {
		c.EarlyKnown = 1_500_000
	}
	if c.FreshRun <= 0 {
		c.FreshRun = 6 * time.Minute
	}
}

// ScaleSample is the crawler at one time.
type ScaleSample struct {
	At         time.Duration // since the crawl started
	Known      int64         // URLs in the frontier
	Spilled    int64         // of them, first visits in the backlog on disk
	Parked     int64         // and revisits parked on disk
	Polls      int64
	PollsPerS  float64 // since the sample before
	RSS        int64   // resident bytes of this process
	RSSAnon    int64   // of them, anonymous: without the store's mapped files
	HeapInUse  int64   // of Go's heap, garbage not yet collected included
	HeapLive   int64   // of Go's heap, live at the last collection
	StoreBytes int64   // the data folder on disk
	// GCShare is the share of the process's CPU time the collector took
	// since the sample before (its background workers and the assists
	// that make allocating goroutines help it).
	GCShare float64
	// ScanHeap is the heap the collector scans for pointers (what it
	// marks in a cycle costs with it; maps of integers are not in it),
	// and GCCycles the collections since the sample before.
	ScanHeap int64
	GCCycles int64
	// Connections is how many the crawler has opened since it started.
	Connections int64
	// Stalled counts the polls put off since the crawl began because the
	// store lagged behind (crawl.Config.MaxBacklog).
	Stalled int64
	// Goroutines is how many the process runs: the collector scans each
	// one's stack in every cycle.
	Goroutines int
	// CPU and WebCPU are the cores the crawler's process and the web's
	// took since the sample before (from /proc; 0 where there is none),
	// and Compacted the bytes Badger's compactions wrote in that time: a
	// slow sample with the crawler's CPU low waited, with it high and
	// much compacted, the store took the time.
	CPU, WebCPU float64
	Compacted   int64
	// OffHeap is what the frontier's fingerprint maps hold outside Go's
	// heap (internal/fpmap): in the anonymous resident memory, in no heap
	// figure.
	OffHeap int64
	// MajorFaults and DiskRead are the crawler's page faults that waited
	// for the disk and the bytes it had read from the disk since the
	// sample before (from /proc; 0 where there is none): the store's
	// mapped tables and value logs, read again once the kernel has
	// dropped them from its page cache. MemAvailable is the machine's
	// memory the kernel says it could give without swapping (page cache
	// included), and WebRSS the web's resident memory: the loopback web
	// holds its pages in memory on the same machine, and what it holds
	// is page cache the store does not get.
	MajorFaults, DiskRead int64
	MemAvailable, WebRSS  int64
	// TreePut is what the writes put in Badger's tree and ByLevel what
	// its compactions wrote to each level, since the sample before;
	// TreeBytes the tree's tables on disk (the value logs are not in it).
	TreePut   int64
	ByLevel   [webevents.TreeLevels]int64
	TreeBytes int64
}

// ScaleReport is what the scale experiment measured.
type ScaleReport struct {
	Config  ScaleConfig
	Samples []ScaleSample
	// RSSPerURL and HeapPerURL are the slopes, by least squares over the
	// second half of the frontier's growth, of resident memory and Go's
	// heap in use against URLs known: what one more known URL costs.
	RSSPerURL, HeapPerURL float64
	// AnonPerURL and LivePerURL are the same for the anonymous resident
	// memory (what the kernel cannot drop: the mapped store's pages are
	// not in it) and the live heap (what the frontier keeps, not the
	// garbage the collector has yet to free).
	AnonPerURL, LivePerURL float64
	// LivePerResident and LivePerOnDisk split the live heap's slope, by
	// least squares on both counts: what one more URL in memory (in a
	// host's heads) keeps, and one more on disk (in the backlog, or
	// parked).
	LivePerResident, LivePerOnDisk float64
	// Grew is how many URLs the frontier learnt over the samples the
	// slopes are fitted to. A crawl that goes on from a store of a web
	// already known whole (--data of an earlier run) learns next to none,
	// and its slopes are noise divided by almost nothing: slopesMeaningful.
	Grew        int64
	StorePerURL float64 // the data folder's bytes per known URL at the end
	// FirstRate and LastRate are polls per second over the first and the
	// last minute of the crawl (or a quarter of it, when shorter).
	FirstRate, LastRate float64
	// ByMillion is polls per second while the URLs known went from each
	// million to the next: the speed by the frontier's size, whatever
	// the time it took to get there.
	ByMillion []KnownWindow
	// PastTenMillion is polls per second from the first sample with ten
	// million URLs known or more to the crawl's last: the speed past 10
	// million over all of it, beside its windows; 0 if it never got there.
	PastTenMillion float64
	// Restart: how long the stored frontier took to load, and until the
	// first poll after it.
	RestartLoad, RestartFirstPoll time.Duration
	RestartKnown                  int
	// Fresh is the fresh crawl's samples (ScaleConfig.FreshBaseline), and
	// FreshBase its window from 1 to 2 million URLs known: the baseline
	// again, at the run's end; its Rate is 0 when it did not get there.
	Fresh     []ScaleSample
	FreshBase KnownWindow
}

// Scale crawls a loopback web of many hosts as fast as it allows (no
// politeness delay), as `cocrawl crawl --delay 0` would with its Badger
// store, and samples its memory, speed and store; then it restarts the
// crawler from the store and times it.
func Scale(ctx context.Context, cfg ScaleConfig) (*ScaleReport, error) {
	cfg.defaults()
	if cfg.Exe == "" {
		exe, err := os.Executable()
		if err != nil {
			return nil, err
		}
		cfg.Exe = exe
	}
	if cfg.Dir == "" {
		if cfg.RestartOnly {
			return nil, errors.New("measure: a restart alone needs the data folder of a crawl before")
		}
		d, err := os.MkdirTemp("", "cocrawl-measure-scale-")
		if err != nil {
			return nil, err
		}
		defer os.RemoveAll(d)
		cfg.Dir = d
	}
	web, err := startWebProcess(ctx, cfg)
	if err != nil {
		return nil, err
	}
	defer web.stop()
	seeds := web.seeds
	rep := &ScaleReport{Config: cfg}
	hctx, stopHeadroom := context.WithCancel(ctx)
	defer stopHeadroom()
	h := memlimit.Default
	h.Share = cfg.HeapHeadroom
	memlimit.Keep(hctx, h) // for a restart alone too, as the crawl's restart has it
	if cfg.RestartOnly {
		fmt.Fprintf(cfg.Progress, "a web of %d hosts x %d pages serves from its own process; restarting from %s\n", cfg.Hosts, cfg.Pages, cfg.Dir)
		return rep, scaleRestart(ctx, cfg, seeds, rep)
	}
	fmt.Fprintf(cfg.Progress, "a web of %d hosts x %d pages serves from its own process; crawling %v\n", cfg.Hosts, cfg.Pages, cfg.Run)
	if err := scaleCrawl(ctx, cfg, web, rep); err != nil {
		return nil, err
	}
	if err := scaleRestart(ctx, cfg, seeds, rep); err != nil {
		return nil, err
	}
	if cfg.FreshBaseline {
		// The run's own figures stand without it: a fresh crawl that
		// fails says so, and the report gives no second baseline.
		if err := scaleFresh(ctx, cfg, web, rep); err != nil {
			fmt.Fprintf(cfg.Progress, "%v\n", err)
		}
	}
	rep.summarise()
	return rep, nil
}

// webProcess is the `cocrawl testweb` a scale crawl polls.
type webProcess struct {
	seeds []string
	pid   int // its CPU is sampled with the crawler's
	stop  func()
}

// webGOGC is the web process's GOGC: the heap it may grow to beyond what
// is live, in percent.
const webGOGC = 50

// startWebProcess runs `cocrawl testweb` for a static web and reads its
// seeds from what it prints.
func startWebProcess(ctx context.Context, cfg ScaleConfig) (*webProcess, error) {
	cmd := exec.Command(cfg.Exe, "testweb", "--hosts", strconv.Itoa(cfg.Hosts), "--pages", strconv.Itoa(cfg.Pages),
		"--update-every", "0", "--churn-every", "0", "--port-base", strconv.Itoa(cfg.PortBase), "--links", strconv.Itoa(cmp.Or(cfg.Links, 5)))
	if cfg.WebCPUProfile != "" {
		cmd.Args = append(cmd.Args, "--cpu-profile", cfg.WebCPUProfile)
	}
	// The web holds every page in its heap on the crawler's machine, and
	// with Go's default the heap grows to twice what is live between
	// collections: at 30 million pages about 13 GB of 24, page cache the
	// crawler's store then lacks. Half again what is live costs the web
	// collections about twice as often (docs/performance.md, issue 30).
	cmd.Env = append(os.Environ(), "GOGC="+strconv.Itoa(webGOGC))
	dieWithParent(cmd)
	out, err := cmd.StdoutPipe()
	if err != nil {
		return nil, err
	}
	cmd.Stderr = os.Stderr
	if err := cmd.Start(); err != nil {
		return nil, fmt.Errorf("start the web: %w", err)
	}
	stop := func() {
		_ = cmd.Process.Signal(os.Interrupt)
		done := make(chan struct{})
		go func() { _ = cmd.Wait(); close(done) }()
		select {
		case <-done:
		case <-time.After(10 * time.Second):
			_ = cmd.Process.Kill()
			<-done
		}
	}
	var seeds []string
	sc := bufio.NewScanner(out)
	for len(seeds) < cfg.Hosts && sc.Scan() {
		if line := strings.TrimSpace(sc.Text()); strings.HasPrefix(line, "http://") {
			seeds = append(seeds, line)
		}
	}
	if len(seeds) < cfg.Hosts {
		stop()
		return nil, fmt.Errorf("the web printed %d of %d seeds (ports from %d taken? try --port-base)", len(seeds), cfg.Hosts, cfg.PortBase)
	}
	go func() { _, _ = io.Copy(io.Discard, out) }()
	return &webProcess{seeds: seeds, pid: cmd.Process.Pid, stop: stop}, nil
}

// scaleConfig is the crawler's configuration: `cocrawl crawl`'s defaults
// with no delay, many workers, and no sitemaps (the web has none).
func scaleConfig(cfg ScaleConfig, seeds []string) crawl.Config {
	return crawl.Config{Seeds: seeds, CID: "scale.test:0 cocrawl/1.1", Workers: cfg.Workers,
		MinDelay: 0, DelaySet: true, DelayFactor: 1, NoSitemaps: true, RevisitMin: cfg.RevisitMin, RevisitMax: max(cfg.RevisitMin, crawl.Defaults().RevisitMax),
		// Every host of the web is on 127.0.0.1, one "domain" to the
		// crawler's cap on hosts per registrable domain (1,000 by
		// default, against wildcard subdomains): without this, a web of
		// more hosts was crawled on 1,000 of them only, and every run
		// stopped at 5 million URLs (1,000 x 5,000 pages).
		MaxHosts: max(100000, 2*cfg.Hosts), MaxHostsPerDomain: max(1000, 2*cfg.Hosts),
		FirstVisitsInMemory: cfg.Head, RevisitsInMemory: cfg.Head,
		Fetch:  crawl.FetchConfig{AllowPrivate: true, Timeout: 10 * time.Second},
		Logger: slog.New(slog.DiscardHandler)}
}

// openScaleCrawler opens the data folder's store and a crawler over it,
// as `cocrawl crawl` does.
func openScaleCrawler(cfg ScaleConfig, seeds []string) (*crawl.Crawler, func(), error) {
	// The store's own log (compactions, write stalls) goes to a file of
	// the data folder: what explains a slow minute.
	if err := os.MkdirAll(cfg.Dir, 0o755); err != nil {
		return nil, nil, err
	}
	logf, err := os.OpenFile(filepath.Join(cfg.Dir, "store.log"), os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o644)
	if err != nil {
		return nil, nil, err
	}
	lg := slog.New(slog.NewTextHandler(logf, &slog.HandlerOptions{Level: slog.LevelInfo}))
	st, err := webevents.OpenBadger(filepath.Join(cfg.Dir, "db"), webevents.BadgerOptions{Logger: lg})
	if err != nil {
		logf.Close()
		return nil, nil, err
	}
	c, err := crawl.New(scaleConfig(cfg, seeds), st, peer.StoresIn(st).Frontier)
	if err != nil {
		st.Close()
		logf.Close()
		return nil, nil, err
	}
	return c, func() { st.Close(); logf.Close() }, nil
}

// scaleCrawl crawls for cfg.Run, sampling every cfg.Every.
func scaleCrawl(ctx context.Context, cfg ScaleConfig, web *webProcess, rep *ScaleReport) error {
	c, closeStore, err := openScaleCrawler(cfg, web.seeds)
	if err != nil {
		return err
	}
	defer closeStore()
	rctx, cancel := context.WithTimeout(ctx, cfg.Run)
	defer cancel()
	start := time.Now()
	done := make(chan error, 1)
	go func() { done <- c.Run(rctx) }()
	defer func() {
		writeHeapProfile(cfg.HeapProfile, cfg.Progress)
		runtime.KeepAlive(c) // its frontier is what the profile is for
	}()
	tick := time.NewTicker(cfg.Every)
	defer tick.Stop()
	profile := &cpuProfile{path: cfg.CPUProfile, from: cfg.Run - min(time.Minute, cfg.Run/4), progress: cfg.Progress}
	defer profile.stop()
	early := &cpuProfile{path: cfg.EarlyCPUProfile, known: cfg.EarlyKnown, length: time.Minute, progress: cfg.Progress, what: "the baseline window"}
	defer early.stop()
	var last ScaleSample
	lastCPU, lastGC := cpuSeconds()
	lastCycles := gcCycles()
	webPID := strconv.Itoa(web.pid)
	lastOwn, lastWeb := processCPUSeconds("self"), processCPUSeconds(webPID)
	lastFaults, lastRead := majorFaults("self"), diskReadBytes()
	lastLevels, lastPut := webevents.CompactedBytesByLevel(), webevents.TreeWrittenBytes()
	// The late profile ends at the run's deadline: the crawler's stop that
	// follows (it writes the held moves) is not a poll's cost.
	deadline := rctx.Done()
	for {
		select {
		case <-deadline:
			profile.stop()
			deadline = nil
		case err := <-done:
			if len(rep.Samples) == 0 {
				return fmt.Errorf("the crawl stopped after %v, before a sample (%v; ctx %v, rctx %v, run %v)", time.Since(start).Round(time.Millisecond), err, ctx.Err(), rctx.Err(), cfg.Run)
			}
			return err
		case now := <-tick.C:
			s := c.Stats()
			smp := ScaleSample{At: now.Sub(start), Known: int64(s.Known), Spilled: int64(s.Spilled), Parked: int64(s.Parked), Polls: s.Polls, Connections: s.Connections, Stalled: s.Stalled, Goroutines: runtime.NumGoroutine()}
			smp.RSS, smp.RSSAnon = residentBytes()
			var ms runtime.MemStats
			runtime.ReadMemStats(&ms)
			smp.HeapInUse = int64(ms.HeapInuse)
			smp.HeapLive = liveHeapBytes()
			smp.OffHeap = fpmap.MappedBytes()
			smp.ScanHeap = scanHeapBytes()
			cycles := gcCycles()
			smp.GCCycles, lastCycles = cycles-lastCycles, cycles
			smp.PollsPerS = float64(smp.Polls-last.Polls) / (smp.At - last.At).Seconds()
			cpu, gc := cpuSeconds()
			if cpu > lastCPU {
				smp.GCShare = (gc - lastGC) / (cpu - lastCPU)
			}
			lastCPU, lastGC = cpu, gc
			own, webCPU := processCPUSeconds("self"), processCPUSeconds(webPID)
			interval := (smp.At - last.At).Seconds()
			smp.CPU, smp.WebCPU = (own-lastOwn)/interval, (webCPU-lastWeb)/interval
			lastOwn, lastWeb = own, webCPU
			faults, read := majorFaults("self"), diskReadBytes()
			smp.MajorFaults, smp.DiskRead = faults-lastFaults, read-lastRead
			lastFaults, lastRead = faults, read
			smp.MemAvailable, smp.WebRSS = memAvailable(), processRSS(webPID)
			levels, put := webevents.CompactedBytesByLevel(), webevents.TreeWrittenBytes()
			for i := range levels {
				smp.ByLevel[i] = levels[i] - lastLevels[i]
				smp.Compacted += smp.ByLevel[i]
			}
			smp.TreePut = put - lastPut
			lastLevels, lastPut = levels, put
			smp.StoreBytes, smp.TreeBytes = dirBytes(cfg.Dir)
			rep.Samples = append(rep.Samples, smp)
			last = smp
			if cfg.stopKnown > 0 && smp.Known >= cfg.stopKnown {
				cancel() // Run writes what it learnt and returns
			}
			early.at(smp.At, smp.Known)
			profile.at(smp.At, smp.Known)
			fmt.Fprintf(cfg.Progress, "%5.0fs %9d URLs known (%9d on disk, %9d of them parked) %9d polls %6.0f/s  RSS %6.0f MB (anon %6.0f)  heap %6.0f MB (live %5.0f)  store %6.0f MB  GC %3.0f%% (%2d cycles, scan %4.0f MB)  conns %d  goroutines %d  stalled %d  cpu %.2f (web %.2f)  compacted %.0f MB  disk read %.0f MB (%d major faults)  web RSS %.0f MB  available %.0f MB\n",
				smp.At.Seconds(), smp.Known, smp.Spilled+smp.Parked, smp.Parked, smp.Polls, smp.PollsPerS, mb(smp.RSS), mb(smp.RSSAnon), mb(smp.HeapInUse), mb(smp.HeapLive), mb(smp.StoreBytes), 100*smp.GCShare, smp.GCCycles, mb(smp.ScanHeap), smp.Connections, smp.Goroutines, smp.Stalled, smp.CPU, smp.WebCPU, mb(smp.Compacted), mb(smp.DiskRead), smp.MajorFaults, mb(smp.WebRSS), mb(smp.MemAvailable))
		}
	}
}

// cpuProfile profiles the crawl from a time on, or from a number of URLs
// known, when a path is set; for a length, or to the end when 0.
type cpuProfile struct {
	path     string
	from     time.Duration
	known    int64
	length   time.Duration
	progress io.Writer
	f        *os.File
	started  time.Duration
	tried    bool
	what     string // what it profiles; default the crawl's end
}

// at starts the profile once the crawl has run from and knows p.known
// URLs, and stops it once it has run its length. Go runs one CPU profile
// at a time: a second one that would overlap says so and is not written.
func (p *cpuProfile) at(el time.Duration, known int64) {
	if p.f != nil && p.length > 0 && el-p.started >= p.length {
		p.stop()
		return
	}
	if p.path == "" || p.tried || el < p.from || known < p.known {
		return
	}
	p.tried = true
	p.started = el
	f, err := os.Create(p.path)
	if err == nil {
		if err = pprof.StartCPUProfile(f); err != nil {
			f.Close()
		}
	}
	if err != nil {
		fmt.Fprintf(p.progress, "cpu profile: %v\n", err)
		return
	}
	p.f = f
}

func (p *cpuProfile) stop() {
	if p.f == nil {
		return
	}
	pprof.StopCPUProfile()
	p.f.Close()
	p.f = nil
	what := p.what
	if what == "" {
		what = "the crawl's end"
	}
	fmt.Fprintf(p.progress, "cpu profile of %s written to %s\n", what, p.path)
}

// writeHeapProfile writes the heap profile to path, when set, while the
// crawler's state is still reachable.
func writeHeapProfile(path string, progress io.Writer) {
	if path == "" {
		return
	}
	runtime.GC()
	f, err := os.Create(path)
	if err == nil {
		err = pprof.WriteHeapProfile(f)
		if cerr := f.Close(); err == nil {
			err = cerr
		}
	}
	if err != nil {
		fmt.Fprintf(progress, "heap profile: %v\n", err)
		return
	}
	fmt.Fprintf(progress, "heap profile written to %s\n", path)
}

// scaleRestart opens the store again and times the crawler's load of its
// frontier and its first poll.
func scaleRestart(ctx context.Context, cfg ScaleConfig, seeds []string, rep *ScaleReport) error {
	profile := &cpuProfile{path: cfg.RestartProfile, progress: cfg.Progress, what: "the restart"}
	profile.at(0, 0)
	defer profile.stop()
	start := time.Now()
	c, closeStore, err := openScaleCrawler(cfg, seeds)
	if err != nil {
		return err
	}
	defer closeStore()
	if rep.RestartKnown, err = c.Load(); err != nil {
		return err
	}
	rep.RestartLoad = time.Since(start)
	rctx, cancel := context.WithTimeout(ctx, time.Minute)
	defer cancel()
	done := make(chan error, 1)
	go func() { done <- c.Run(rctx) }()
	for c.Stats().Polls == 0 && rctx.Err() == nil {
		time.Sleep(10 * time.Millisecond)
	}
	rep.RestartFirstPoll = time.Since(start)
	cancel()
	if err := <-done; err != nil && !errors.Is(err, context.Canceled) {
		return err
	}
	fmt.Fprintf(cfg.Progress, "restart: %d URLs loaded in %v, first poll after %v\n", rep.RestartKnown,
		rep.RestartLoad.Round(time.Millisecond), rep.RestartFirstPoll.Round(time.Millisecond))
	return nil
}

// freshKnown is where the fresh crawl stops: the end of the baseline
// window, the first of byMillion's.
const freshKnown = 2_000_000

// scaleFresh crawls the web again from nothing, in a new data folder
// beside cfg.Dir, to freshKnown URLs known or for cfg.FreshRun, and keeps
// its samples in rep.Fresh.
func scaleFresh(ctx context.Context, cfg ScaleConfig, web *webProcess, rep *ScaleReport) error {
	d, err := os.MkdirTemp(filepath.Dir(filepath.Clean(cfg.Dir)), "cocrawl-measure-fresh-")
	if err != nil {
		return fmt.Errorf("the fresh crawl: %w", err)
	}
	defer os.RemoveAll(d)
	fc := cfg
	fc.Dir, fc.Run, fc.stopKnown = d, min(cfg.FreshRun, cfg.Run), freshKnown // a short run's web may not hold 2 million
	fc.HeapProfile, fc.CPUProfile, fc.EarlyCPUProfile = "", "", ""
	fmt.Fprintf(cfg.Progress, "a fresh crawl of the same web in a new data folder, to %d URLs known or for %v: the baseline window again\n", freshKnown, fc.Run)
	fr := &ScaleReport{Config: fc}
	if err := scaleCrawl(ctx, fc, web, fr); err != nil {
		return fmt.Errorf("the fresh crawl: %w", err)
	}
	rep.Fresh = fr.Samples
	return nil
}

// summarise fits the slopes and the rates.
func (r *ScaleReport) summarise() {
	n := len(r.Samples)
	if n == 0 {
		return
	}
	// The growth's second half: from the sample where half the URLs
	// known at the end were known, to the last that still added some (a
	// web crawled whole adds no more, and memory then tells nothing of
	// URLs).
	final := r.Samples[n-1].Known
	lo, hi := 0, n
	for lo < n-1 && r.Samples[lo].Known < final/2 {
		lo++
	}
	for hi > lo+2 && r.Samples[hi-2].Known >= final {
		hi--
	}
	half := r.Samples[lo:hi]
	r.Grew = half[len(half)-1].Known - half[0].Known
	xs := make([]float64, len(half))
	inMem, onDisk := make([]float64, len(half)), make([]float64, len(half))
	rss, anon := make([]float64, len(half)), make([]float64, len(half))
	heap, live := make([]float64, len(half)), make([]float64, len(half))
	for i, s := range half {
		xs[i], rss[i], anon[i] = float64(s.Known), float64(s.RSS), float64(s.RSSAnon)
		heap[i], live[i] = float64(s.HeapInUse), float64(s.HeapLive)
		inMem[i], onDisk[i] = float64(s.Known-s.Spilled-s.Parked), float64(s.Spilled+s.Parked)
	}
	r.RSSPerURL, r.HeapPerURL = slope(xs, rss), slope(xs, heap)
	r.AnonPerURL, r.LivePerURL = slope(xs, anon), slope(xs, live)
	r.LivePerResident, r.LivePerOnDisk = slopes2(inMem, onDisk, live)
	end := r.Samples[n-1]
	r.StorePerURL = float64(end.StoreBytes) / float64(max(end.Known, 1))
	window := min(time.Minute, r.Config.Run/4)
	r.FirstRate = rateOver(r.Samples, 0, window)
	r.LastRate = rateOver(r.Samples, end.At-window, end.At)
	r.ByMillion = byMillion(r.Samples)
	r.PastTenMillion = rateFromKnown(r.Samples, tenMillion, r.Config.Run)
	if ws := byMillion(r.Fresh); len(ws) > 0 && ws[0].From == 1_000_000 {
		r.FreshBase = ws[0]
	}
}

const tenMillion = 10_000_000

// rateFromKnown is polls per second from the first sample with known URLs
// or more to the last taken within run (the samples after it are the
// stop's), or 0 without two such samples.
func rateFromKnown(ss []ScaleSample, known int64, run time.Duration) float64 {
	i := slices.IndexFunc(ss, func(s ScaleSample) bool { return s.Known >= known })
	j := len(ss) - 1
	for j > i && run > 0 && ss[j].At > run {
		j--
	}
	if i < 0 || j <= i || ss[j].At <= ss[i].At {
		return 0
	}
	return float64(ss[j].Polls-ss[i].Polls) / (ss[j].At - ss[i].At).Seconds()
}

// KnownWindow is the polls per second from the first sample with From
// URLs known or more to the first with To or more, and the CPU time a poll
// took over it in the crawler's process and in the web's. The two share
// the machine's cores, so the rate falls when either costs more; the
// crawler's own cost says which.
type KnownWindow struct {
	From, To        int64
	Rate            float64
	CrawlerCPU      time.Duration // per poll
	WebCPU          time.Duration // per poll
	cpuKnown, webOK bool
	// DiskRead and MajorFaults are the crawler's reads from the disk a
	// poll (bytes, faults); MemAvailable is the machine's available
	// memory at the window's end.
	DiskRead, MajorFaults float64
	MemAvailable          int64
	// TreePut is what a poll put in the store's tree and ByLevel what it
	// had its compactions write to each level (bytes), and TreeBytes the
	// tree's tables at the window's end.
	TreePut   float64
	ByLevel   [webevents.TreeLevels]float64
	TreeBytes int64
}

// byMillion is the crawl's speed over each million URLs known, from the
// first million the samples pass to the last.
func byMillion(ss []ScaleSample) []KnownWindow {
	const m = 1_000_000
	first := func(known int64) int {
		for i := range ss {
			if ss[i].Known >= known {
				return i
			}
		}
		return -1
	}
	var out []KnownWindow
	for lo := int64(m); ; lo += m {
		ia, ib := first(lo), first(lo+m)
		if ia < 0 || ib < 0 {
			return out
		}
		a, b := &ss[ia], &ss[ib]
		if b.At <= a.At {
			continue
		}
		w := KnownWindow{From: lo, To: lo + m, Rate: float64(b.Polls-a.Polls) / (b.At - a.At).Seconds()}
		// Each sample's CPU is its process's cores over the interval
		// since the sample before.
		var own, web float64
		var read, faults, put int64
		var levels [webevents.TreeLevels]int64
		for i := ia + 1; i <= ib; i++ {
			for l := range levels {
				levels[l] += ss[i].ByLevel[l]
			}
			put += ss[i].TreePut
			d := (ss[i].At - ss[i-1].At).Seconds()
			own += ss[i].CPU * d
			web += ss[i].WebCPU * d
			read += ss[i].DiskRead
			faults += ss[i].MajorFaults
		}
		w.MemAvailable, w.TreeBytes = b.MemAvailable, b.TreeBytes
		if polls := float64(b.Polls - a.Polls); polls > 0 {
			w.DiskRead, w.MajorFaults, w.TreePut = float64(read)/polls, float64(faults)/polls, float64(put)/polls
			for l := range levels {
				w.ByLevel[l] = float64(levels[l]) / polls
			}
			if own > 0 {
				w.CrawlerCPU = time.Duration(own / polls * 1e9)
				w.WebCPU = time.Duration(web / polls * 1e9)
				w.cpuKnown, w.webOK = true, web > 0
			}
		}
		out = append(out, w)
	}
}

// rateOver is polls per second from the last sample at or before from
// (the start, before any) to the first at or after to.
func rateOver(ss []ScaleSample, from, to time.Duration) float64 {
	var zero ScaleSample
	a, b := &zero, (*ScaleSample)(nil)
	for i := range ss {
		if ss[i].At <= from {
			a = &ss[i]
		}
		if b == nil && ss[i].At >= to {
			b = &ss[i]
		}
	}
	if b == nil && len(ss) > 0 {
		b = &ss[len(ss)-1]
	}
	if b == nil || b.At <= a.At {
		return 0
	}
	return float64(b.Polls-a.Polls) / (b.At - a.At).Seconds()
}

// slopes2 are the least-squares slopes of ys against x1 and x2 together
// (with an intercept); zero when the two do not vary independently.
func slopes2(x1, x2, ys []float64) (float64, float64) {
	n := float64(len(ys))
	if n < 3 {
		return 0, 0
	}
	var m1, m2, my float64
	for i := range ys {
		m1, m2, my = m1+x1[i]/n, m2+x2[i]/n, my+ys[i]/n
	}
	var s11, s22, s12, s1y, s2y float64
	for i := range ys {
		a, b, y := x1[i]-m1, x2[i]-m2, ys[i]-my
		s11, s22, s12, s1y, s2y = s11+a*a, s22+b*b, s12+a*b, s1y+a*y, s2y+b*y
	}
	det := s11*s22 - s12*s12
	if det == 0 || det < 1e-9*s11*s22 {
		return 0, 0
	}
	return (s22*s1y - s12*s2y) / det, (s11*s2y - s12*s1y) / det
}

// slope is the least-squares slope of ys against xs.
func slope(xs, ys []float64) float64 {
	n := float64(len(xs))
	var sx, sy, sxx, sxy float64
	for i := range xs {
		sx, sy, sxx, sxy = sx+xs[i], sy+ys[i], sxx+xs[i]*xs[i], sxy+xs[i]*ys[i]
	}
	d := n*sxx - sx*sx
	if d == 0 {
		return 0
	}
	return (n*sxy - sx*sy) / d
}

// residentBytes is this process's resident set, and the anonymous part
// of it (Linux; 0 elsewhere).
func residentBytes() (rss, anon int64) {
	b, err := os.ReadFile("/proc/self/status")
	if err != nil {
		return 0, 0
	}
	return kibField(b, "VmRSS:"), kibField(b, "RssAnon:")
}

// processRSS is a process's resident set ("self" or a pid), from
// /proc/<pid>/status; 0 where it cannot be read.
func processRSS(pid string) int64 {
	b, err := os.ReadFile("/proc/" + pid + "/status")
	if err != nil {
		return 0
	}
	return kibField(b, "VmRSS:")
}

// memAvailable is the machine's available memory, from /proc/meminfo;
// 0 where it cannot be read.
func memAvailable() int64 {
	b, err := os.ReadFile("/proc/meminfo")
	if err != nil {
		return 0
	}
	return kibField(b, "MemAvailable:")
}

// kibField is the value of a "Name:   123 kB" line of a /proc file, in
// bytes; 0 when there is none.
func kibField(b []byte, name string) int64 {
	for line := range strings.SplitSeq(string(b), "\n") {
		if rest, ok := strings.CutPrefix(line, name); ok {
			n, _ := strconv.ParseInt(strings.TrimSpace(strings.TrimSuffix(strings.TrimSpace(rest), "kB")), 10, 64)
			return n << 10
		}
	}
	return 0
}

// diskReadBytes is what this process has read from the disk so far
// (read_bytes of /proc/self/io: reads the page cache served are not in
// it); 0 where it cannot be read.
func diskReadBytes() int64 {
	b, err := os.ReadFile("/proc/self/io")
	if err != nil {
		return 0
	}
	for line := range strings.SplitSeq(string(b), "\n") {
		if rest, ok := strings.CutPrefix(line, "read_bytes:"); ok {
			n, _ := strconv.ParseInt(strings.TrimSpace(rest), 10, 64)
			return n
		}
	}
	return 0
}

// cpuSeconds is the CPU time of the process so far by the runtime's own
// account, and of it the collector's.
func cpuSeconds() (total, gc float64) {
	s := []metrics.Sample{{Name: "/cpu/classes/total:cpu-seconds"}, {Name: "/cpu/classes/gc/total:cpu-seconds"}}
	metrics.Read(s)
	if s[0].Value.Kind() != metrics.KindFloat64 || s[1].Value.Kind() != metrics.KindFloat64 {
		return 0, 0
	}
	return s[0].Value.Float64(), s[1].Value.Float64()
}

// processCPUSeconds is the user and system CPU time of a process so far
// ("self" or a pid), from /proc/<pid>/stat; 0 where it cannot be read.
func processCPUSeconds(pid string) float64 {
	f := statFields(pid)
	if len(f) < 13 {
		return 0
	}
	utime, _ := strconv.ParseInt(f[11], 10, 64)
	stime, _ := strconv.ParseInt(f[12], 10, 64)
	const clockTicks = 100 // USER_HZ: 100 on every Linux the runtime supports
	return float64(utime+stime) / clockTicks
}

// statFields are the fields of /proc/<pid>/stat after the command's name,
// the first being the stat's 3rd (the state); nil where it cannot be
// read. The name, in parentheses, may hold spaces and parentheses, so the
// fields are counted from after its last ")".
func statFields(pid string) []string {
	b, err := os.ReadFile("/proc/" + pid + "/stat")
	if err != nil {
		return nil
	}
	i := strings.LastIndexByte(string(b), ')')
	if i < 0 {
		return nil
	}
	return strings.Fields(string(b[i+1:]))
}

// majorFaults is how many page faults of a process ("self" or a pid)
// have waited for the disk so far, from /proc/<pid>/stat; 0 where it
// cannot be read.
func majorFaults(pid string) int64 {
	f := statFields(pid)
	if len(f) < 10 {
		return 0
	}
	n, _ := strconv.ParseInt(f[9], 10, 64) // majflt, the stat's 12th field
	return n
}

// liveHeapBytes is the Go heap found live by the last collection.
func liveHeapBytes() int64 { return uint64Metric("/gc/heap/live:bytes") }

// scanHeapBytes is the heap the collector scans: the objects that may
// hold pointers.
func scanHeapBytes() int64 { return uint64Metric("/gc/scan/heap:bytes") }

// gcCycles is how many collections the runtime has finished.
func gcCycles() int64 { return uint64Metric("/gc/cycles/total:gc-cycles") }

func uint64Metric(name string) int64 {
	s := []metrics.Sample{{Name: name}}
	metrics.Read(s)
	if s[0].Value.Kind() != metrics.KindUint64 {
		return 0
	}
	return int64(min(s[0].Value.Uint64(), math.MaxInt64))
}

// dirBytes is the size of the files under dir, and of them Badger's
// table files (.sst): its tree of keys, small values and pointers,
// without the value logs.
func dirBytes(dir string) (all, tree int64) {
	_ = filepath.WalkDir(dir, func(path string, d fs.DirEntry, err error) error {
		if err == nil && !d.IsDir() {
			if fi, err := d.Info(); err == nil {
				all += fi.Size()
				if strings.HasSuffix(path, ".sst") {
					tree += fi.Size()
				}
			}
		}
		return nil
	})
	return all, tree
}

func us(d time.Duration) float64 { return float64(d) / float64(time.Microsecond) }

func mb(b int64) float64 { return float64(b) / (1 << 20) }

// Print writes the report.
func (r *ScaleReport) Print(out io.Writer) {
	c := r.Config
	end := r.Samples[len(r.Samples)-1]
	fmt.Fprintf(out, "scale: %d hosts x %d pages on loopback, %d workers, no delay, %v\n", c.Hosts, c.Pages, c.Workers, c.Run)
	fmt.Fprintf(out, "URLs known at the end: %d, from %d polls\n", end.Known, end.Polls)
	fmt.Fprintf(out, "connections opened: %d (%d hosts; one per %.0f polls)\n", end.Connections, c.Hosts, float64(end.Polls)/float64(max(end.Connections, 1)))
	if r.slopesMeaningful() {
		fmt.Fprintf(out, "memory per additional known URL (second half of the growth): resident %.0f bytes (anonymous %.0f), Go heap in use %.0f, live Go heap %.0f\n",
			r.RSSPerURL, r.AnonPerURL, r.HeapPerURL, r.LivePerURL)
		fmt.Fprintf(out, "  the live heap by where the URL is: %.0f bytes per URL in memory (in a host's heads), %.0f per URL on disk (%d of %d at the end: %d first visits in the backlog, %d revisits parked)\n",
			r.LivePerResident, r.LivePerOnDisk, end.Spilled+end.Parked, end.Known, end.Spilled, end.Parked)
		if end.OffHeap > 0 { // a small frontier's maps are all in the heap (fpmap maps a segment from 64 KiB)
			fmt.Fprintf(out, "  outside the heap: %.0f MB of fingerprint maps at the end, %.1f bytes per URL on disk\n",
				mb(end.OffHeap), float64(end.OffHeap)/float64(max(end.Spilled+end.Parked, 1)))
		}
	} else {
		fmt.Fprintf(out, "memory per additional known URL: not measured, the frontier learnt only %d URLs (%d of %d on disk at the end: %d first visits in the backlog, %d revisits parked)\n",
			max(r.Grew, 0), end.Spilled+end.Parked, end.Known, end.Spilled, end.Parked)
	}
	fmt.Fprintf(out, "store: %.0f bytes per known URL (%.0f MB)\n", r.StorePerURL, mb(end.StoreBytes))
	ratio := "no ratio: the first minute was the frontier's load" // a restart of a large store
	if r.FirstRate >= 1 {
		ratio = fmt.Sprintf("%.2fx", r.LastRate/r.FirstRate)
	}
	fmt.Fprintf(out, "polls per second: %.0f in the first minute, %.0f in the last (%s)\n", r.FirstRate, r.LastRate, ratio)
	if len(r.ByMillion) > 0 {
		base := r.ByMillion[0]
		fmt.Fprintf(out, "polls per second by millions of URLs known (against %d-%d million):", base.From/1e6, base.To/1e6)
		for i, w := range r.ByMillion {
			if i%5 == 0 {
				fmt.Fprint(out, "\n ")
			}
			fmt.Fprintf(out, " %d-%dM %.0f (%.2fx)", w.From/1e6, w.To/1e6, w.Rate, w.Rate/base.Rate)
		}
		fmt.Fprintln(out)
		if r.PastTenMillion > 0 {
			fmt.Fprintf(out, "polls per second past 10 million URLs known: %.0f (%.2fx)", r.PastTenMillion, r.PastTenMillion/base.Rate)
			r.printLateWindows(out, base.Rate)
		}
		r.printFresh(out, base)
		if base.cpuKnown {
			fmt.Fprintf(out, "CPU per poll by millions of URLs known, the crawler's (against %d-%d million) and the web's:", base.From/1e6, base.To/1e6)
			for i, w := range r.ByMillion {
				if i%4 == 0 {
					fmt.Fprint(out, "\n ")
				}
				if !w.cpuKnown { // no CPU read over the window
					fmt.Fprintf(out, " %d-%dM -", w.From/1e6, w.To/1e6)
					continue
				}
				fmt.Fprintf(out, " %d-%dM %.0f µs (%.2fx)", w.From/1e6, w.To/1e6, us(w.CrawlerCPU), us(w.CrawlerCPU)/us(base.CrawlerCPU))
				if w.webOK {
					fmt.Fprintf(out, " web %.0f", us(w.WebCPU))
				}
			}
			fmt.Fprintln(out)
		}
		if end.MemAvailable > 0 {
			fmt.Fprint(out, "the crawler's reads from the disk a poll by millions of URLs known (bytes, major faults), and the machine's available memory at the window's end:")
			for i, w := range r.ByMillion {
				if i%4 == 0 {
					fmt.Fprint(out, "\n ")
				}
				fmt.Fprintf(out, " %d-%dM %.0f B %.2f faults %.1f GB", w.From/1e6, w.To/1e6, w.DiskRead, w.MajorFaults, float64(w.MemAvailable)/1e9)
			}
			fmt.Fprintln(out)
		}
	}
	if end.TreeBytes > 0 {
		fmt.Fprint(out, "the store's tree by millions of URLs known: what a poll put in it, what its compactions wrote to each level a poll (bytes; levels with none left out), and its tables at the window's end:")
		for _, w := range r.ByMillion {
			fmt.Fprintf(out, "\n  %d-%dM put %.0f", w.From/1e6, w.To/1e6, w.TreePut)
			var all float64
			for l := range w.ByLevel {
				if w.ByLevel[l] >= 0.5 {
					fmt.Fprintf(out, " L%d %.0f", l, w.ByLevel[l])
				}
				all += w.ByLevel[l]
			}
			if w.TreePut > 0 {
				fmt.Fprintf(out, " (%.1fx)", all/w.TreePut)
			}
			fmt.Fprintf(out, " tree %.0f MB", mb(w.TreeBytes))
		}
		fmt.Fprintln(out)
	}
	fmt.Fprintf(out, "restart: %d URLs loaded in %v, polling again after %v\n", r.RestartKnown, r.RestartLoad.Round(time.Millisecond), r.RestartFirstPoll.Round(time.Millisecond))
	if r.slopesMeaningful() {
		fmt.Fprintf(out, "projection at these slopes: 100 million known URLs take %.1f GB resident beyond the start (%.1f GB anonymous, %.1f GB of live heap)\n",
			r.RSSPerURL*1e8/1e9, r.AnonPerURL*1e8/1e9, r.LivePerURL*1e8/1e9)
	}
}

// printLateWindows ends a line with the range of the windows past 10
// million URLs against a baseline rate, when there are any.
func (r *ScaleReport) printLateWindows(out io.Writer, base float64) {
	lo, hi := math.Inf(1), math.Inf(-1)
	for _, w := range r.ByMillion {
		if w.From >= tenMillion {
			lo, hi = min(lo, w.Rate/base), max(hi, w.Rate/base)
		}
	}
	if !math.IsInf(lo, 1) {
		fmt.Fprintf(out, ", its windows %.2fx to %.2fx", lo, hi)
	}
	fmt.Fprintln(out)
}

// printFresh gives the late windows against the fresh crawl's baseline
// (ScaleConfig.FreshBaseline), beside the run's own base.
func (r *ScaleReport) printFresh(out io.Writer, base KnownWindow) {
	if !r.Config.FreshBaseline {
		return
	}
	fb := r.FreshBase
	if fb.Rate <= 0 {
		got := int64(0)
		if len(r.Fresh) > 0 {
			got = r.Fresh[len(r.Fresh)-1].Known
		}
		fmt.Fprintf(out, "the fresh crawl after the run knew %d URLs when it stopped, short of 2 million: no second baseline\n", got)
		return
	}
	fmt.Fprintf(out, "the fresh crawl after the run (the same web, a new data folder): 1-2M %.0f polls/s", fb.Rate)
	if fb.cpuKnown {
		fmt.Fprintf(out, ", the crawler %.0f µs a poll", us(fb.CrawlerCPU))
		if fb.webOK {
			fmt.Fprintf(out, ", the web %.0f", us(fb.WebCPU))
		}
	}
	fmt.Fprintf(out, "; the run's own 1-2M against it %.2fx\n", base.Rate/fb.Rate)
	if r.PastTenMillion > 0 {
		fmt.Fprintf(out, "polls per second past 10 million URLs known against the fresh crawl's 1-2 million: %.2fx", r.PastTenMillion/fb.Rate)
		r.printLateWindows(out, fb.Rate)
	}
	fmt.Fprint(out, "polls per second by millions of URLs known against the fresh crawl's 1-2 million:")
	for i, w := range r.ByMillion {
		if i%6 == 0 {
			fmt.Fprint(out, "\n ")
		}
		fmt.Fprintf(out, " %d-%dM %.2fx", w.From/1e6, w.To/1e6, w.Rate/fb.Rate)
	}
	fmt.Fprintln(out)
}

// minGrowth is the least growth of the frontier the memory slopes are
// given for: below it, a few megabytes of the collector's swings make
// thousands of bytes per URL.
const minGrowth = 100000

// slopesMeaningful says whether the frontier grew enough over the fitted
// samples for bytes per URL to mean anything.
func (r *ScaleReport) slopesMeaningful() bool { return r.Grew >= minGrowth }
