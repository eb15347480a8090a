package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"net"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"time"

	"github.com/cocrawl/cocrawl/peer"
	"github.com/cocrawl/cocrawl/peer/rho"
	"github.com/cocrawl/cocrawl/protocol"
)

func cmdRun(ctx context.Context, args []string, out io.Writer) error {
	fs := newFlags("run", "run --data DIR --listen ADDR --seed URL... [--peer URL...] [--mode M | --rho R --share B] [--community NAME] [--p2p-listen MULTIADDR]... [--bootstrap MULTIADDR]... [--no-dht] [--config FILE] [--allow-private] [crawl settings]")
	data := fs.String("data", "./cocrawl-data", "data folder: store, frontier and peer table")
	listen := fs.String("listen", "127.0.0.1:8470", "address of the share repository, dashboard, API and metrics")
	advertise := fs.String("advertise", "", "host:port peers reach this one at, written in robots.shr and every event's cid; default: --listen's")
	var seeds, peers, special multiFlag
	fs.Var(&seeds, "seed", "URL to start polling from (repeatable)")
	fs.Var(&peers, "peer", "robots.shr URL of a peer to merge from (repeatable)")
	fs.Var(&special, "special", "URL prefix this peer knows best, advertised in robots.shr (repeatable)")
	mode := fs.String("mode", "", "behaviour: "+peer.ModeNames()+" (default "+peer.DefaultMode+")")
	rhoSpec := fs.String("rho", "", "rho controller: a number or fixed:R in [0,1], bangbang, rate, or seek[:PERIOD]; overrides the mode's")
	share := fs.Bool("share", true, "publish what this peer learns; overrides the mode's")
	slots := fs.Int("slots", 0, "network operations in flight, each a poll or a merge; default --workers")
	mergeMin := fs.Duration("merge-min", 30*time.Second, "shortest wait between two merges from one peer")
	mergeMax := fs.Duration("merge-max", 30*time.Minute, "longest wait between two merges from one peer")
	allowPrivate := fs.Bool("allow-private", false, "allow loopback and private addresses for polls and merges (tests, LANs)")
	every := fs.Duration("status-every", 5*time.Second, "how often to print a status line (0: never)")
	logLevel := fs.String("log-level", "info", "debug, info, warn or error")
	duration := fs.Duration("duration", 0, "stop after this long (0: until Ctrl-C)")
	community := fs.String("community", "default", "community to join over libp2p: its DHT and rendezvous namespace")
	var p2pListen, bootstrap multiFlag
	fs.Var(&p2pListen, "p2p-listen", "libp2p listen multiaddr (repeatable); default TCP and QUIC on --listen's IP, ports chosen by the system")
	fs.Var(&bootstrap, "bootstrap", "multiaddr ending in /p2p/<peer-id> of a community member to join through (repeatable)")
	noDHT := fs.Bool("no-dht", false, "do not join the community DHT (libp2p still serves and merges)")
	noP2P := fs.Bool("no-p2p", false, "no libp2p at all: HTTP only, peers only from --peer")
	useMDNS := fs.Bool("mdns", false, "also find community peers on the local network by mDNS")
	cf := addCrawlFlags(fs)
	pos, err := parse(fs, args)
	if err != nil {
		return err
	}
	if len(pos) > 0 {
		return usagef("unexpected argument %q; seeds are given with --seed", pos[0])
	}
	set, err := cf.settings() // layers environment and --config under every flag
	if err != nil {
		return err
	}
	explicit := map[string]bool{}
	fs.Visit(func(f *flag.Flag) { explicit[f.Name] = true })
	behaviour, err := chooseMode(*mode, *rhoSpec, *share, explicit["share"])
	if err != nil {
		return err
	}
	var level slog.Level
	if err := level.UnmarshalText([]byte(*logLevel)); err != nil {
		return usagef("--log-level %q is not debug, info, warn or error", *logLevel)
	}
	lg := slog.New(slog.NewTextHandler(os.Stderr, &slog.HandlerOptions{Level: level}))
	if *mergeMin <= 0 || *mergeMax < *mergeMin {
		return usagef("--merge-min must be positive and at most --merge-max")
	}

	ln, err := net.Listen("tcp", *listen)
	if err != nil {
		return fmt.Errorf("cannot listen on %s: %w; choose another --listen", *listen, err)
	}
	defer ln.Close()
	addr, err := advertised(*advertise, ln.Addr().(*net.TCPAddr))
	if err != nil {
		return err
	}
	st, err := openStore(*data, lg)
	if err != nil {
		return err
	}
	defer st.Close()

	var p2p *peer.P2PConfig
	if !*noP2P {
		listenAddrs := []string(p2pListen)
		if len(listenAddrs) == 0 {
			ip := ln.Addr().(*net.TCPAddr).IP
			fam := "ip4"
			if ip.To4() == nil {
				fam = "ip6"
			}
			listenAddrs = []string{fmt.Sprintf("/%s/%s/tcp/0", fam, ip), fmt.Sprintf("/%s/%s/udp/0/quic-v1", fam, ip)}
		}
		p2p = &peer.P2PConfig{
			KeyFile: filepath.Join(*data, "identity.key"), Community: *community, ListenAddrs: listenAddrs,
			Bootstrap: bootstrap, NoDHT: *noDHT, MDNS: *useMDNS, AllowPrivate: *allowPrivate,
		}
	}
	cfg := peer.Config{
		Addr: addr, Contact: set.From, Special: special,
		Crawl:      set.crawlConfig(seeds, "", *allowPrivate),
		Controller: behaviour.controller, Mode: behaviour.name, Share: behaviour.share,
		Peers: peers, Slots: *slots, AllowPrivate: *allowPrivate,
		Schedule: peer.Schedule{MergeMin: *mergeMin, MergeMax: *mergeMax},
		P2P:      p2p, Logger: lg,
	}
	p, err := peer.New(cfg, peer.StoresIn(st))
	if err != nil {
		return usagef("%v", err)
	}
	defer p.Close() // Run closes the libp2p host too; Close is idempotent
	known, err := p.FrontierSize()
	if err != nil {
		return err
	}
	if len(seeds) == 0 && known == 0 && behaviour.controller.Rho() > 0 {
		return usagef("give at least one --seed URL (the frontier in %s is empty), or run a mirror or parasite (--mode)", *data)
	}
	if len(p.Peers()) == 0 && behaviour.controller.Rho() < 1 {
		fmt.Fprintln(out, "note: no peers yet (--peer URL); until one is known every operation polls")
	}
	if *duration > 0 {
		var cancel context.CancelFunc
		ctx, cancel = context.WithTimeout(ctx, *duration)
		defer cancel()
	}

	hs := protocol.NewHTTPServer(ln.Addr().String(), p.Handler(), protocol.Timeouts{})
	serveErr := make(chan error, 1)
	go func() { serveErr <- hs.Serve(ln) }()
	base := "http://" + ln.Addr().String()
	fmt.Fprintf(out, "peer %q: %s, controller %s, sharing %s\n", p.CID(), behaviour.name, behaviour.controller.Name(), onOff(behaviour.share))
	fmt.Fprintf(out, "dashboard %s/  share %s/robots.shr  API %s/api/status  metrics %s/metrics\n", base, base, base, base)
	if id := p.PeerID(); id != "" {
		dht := "community " + *community
		if *noDHT {
			dht = "no DHT"
		}
		fmt.Fprintf(out, "libp2p peer ID %s (%s); listening on:\n", id, dht)
		for _, a := range p.P2PAddrs() {
			fmt.Fprintf(out, "  %s\n", a)
		}
	}
	fmt.Fprintf(out, "%d seeds, %d URLs and %d peers resumed from %s; Ctrl-C stops\n", len(seeds), known, len(p.Peers()), *data)

	runCtx, stopRun := context.WithCancel(ctx)
	defer stopRun()
	done := make(chan error, 1)
	go func() { done <- p.Run(runCtx) }()
	var tick <-chan time.Time
	if *every > 0 {
		t := time.NewTicker(*every)
		defer t.Stop()
		tick = t.C
	}
	var runErr error
loop:
	for {
		select {
		case runErr = <-done:
			break loop
		case err := <-serveErr:
			stopRun()
			runErr = errors.Join(fmt.Errorf("HTTP server: %w", err), <-done)
			break loop
		case <-tick:
			fmt.Fprintln(out, statusLine(p.Status(false)))
		case <-ctx.Done():
			fmt.Fprintln(out, "stopping: letting in-flight polls and merges finish")
			runErr = <-done
			break loop
		}
	}
	sctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	_ = hs.Shutdown(sctx)
	s := p.Status(false)
	fmt.Fprintln(out, statusLine(s))
	fmt.Fprintf(out, "stopped: events per poll %.3f, events per merge %.2f; time at rho %s\n", s.EventsPerPoll, s.EventsPerMerge, timeAtRho(s.TimeAtRho))
	return runErr
}

// behaviour is a resolved mode: its name, controller and sharing.
type behaviour struct {
	name       string
	controller rho.Controller
	share      bool
}

// chooseMode resolves --mode, --rho and --share. A mode names a preset;
// --rho and --share refine it, but may not contradict it.
func chooseMode(mode, rhoSpec string, share, shareSet bool) (behaviour, error) {
	name := mode
	if name == "" {
		name = peer.DefaultMode
	}
	m, ok := peer.LookupMode(name)
	if !ok {
		return behaviour{}, usagef("--mode %q is not one of %s", mode, peer.ModeNames())
	}
	spec := m.Controller
	if rhoSpec != "" {
		spec = rhoSpec
	}
	ctl, err := rho.Parse(spec)
	if err != nil {
		return behaviour{}, usagef("--rho: %v", err)
	}
	b := behaviour{controller: ctl, share: m.Share}
	if shareSet {
		b.share = share
	}
	b.name = modeOf(ctl, b.share)
	if mode != "" && b.name != m.Name {
		return behaviour{}, usagef("--mode %s contradicts --rho %s --share=%v (that is %s); drop one", m.Name, ctl.Name(), b.share, b.name)
	}
	return b, nil
}

// modeOf names the thesis's behaviour that a controller and sharing make.
func modeOf(ctl rho.Controller, share bool) string {
	poll := "hybrid"
	if f, ok := ctl.(rho.Fixed); ok && (f == 0 || f == 1) {
		poll = map[rho.Fixed]string{0: "merge", 1: "poll"}[f]
	}
	switch {
	case poll == "poll" && !share:
		return "current"
	case poll == "poll":
		return "altruistic"
	case poll == "merge" && !share:
		return "parasite"
	case poll == "merge":
		return "mirror"
	case !share:
		return "hybrid"
	}
	return "sharing-hybrid"
}

// advertised returns the host:port peers reach this peer at.
func advertised(flagValue string, ln *net.TCPAddr) (string, error) {
	if flagValue != "" {
		if _, _, err := net.SplitHostPort(flagValue); err != nil {
			return "", usagef("--advertise %q is not host:port", flagValue)
		}
		return flagValue, nil
	}
	host := ln.IP.String()
	if ln.IP.IsUnspecified() {
		h, err := os.Hostname()
		if err != nil || h == "" {
			return "", usagef("listening on all addresses: give --advertise host:port")
		}
		host = h
	}
	return net.JoinHostPort(host, fmt.Sprint(ln.Port)), nil
}

func onOff(b bool) string {
	if b {
		return "on"
	}
	return "off"
}

func statusLine(s peer.Status) string {
	return fmt.Sprintf("%6.0fs rho %.2f | polls %d (%.3f ev/poll) | merges %d (%.2f ev/merge) | events C %d U %d D %d | peers %d/%d (DHT %d) | %d URLs",
		s.UptimeS, s.Rho, s.Polls, s.EventsPerPoll, s.Merges, s.EventsPerMerge,
		s.Events["poll"]["create"]+s.Events["merge"]["create"], s.Events["poll"]["update"]+s.Events["merge"]["update"],
		s.Events["poll"]["delete"]+s.Events["merge"]["delete"], s.PeersHealthy, s.PeersKnown, s.DHTPeers, s.FrontierURLs)
}

func timeAtRho(m map[string]float64) string {
	var total float64
	for _, v := range m {
		total += v
	}
	if total == 0 {
		return "-"
	}
	var parts []string
	for _, k := range sortedKeys(m) {
		parts = append(parts, fmt.Sprintf("%s %.0f%%", k, 100*m[k]/total))
	}
	return strings.Join(parts, ", ")
}

func sortedKeys(m map[string]float64) []string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	return keys
}
