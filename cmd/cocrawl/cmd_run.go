package main

import (
	"cmp"
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"time"

	"github.com/cocrawl/cocrawl/internal/netguard"
	"github.com/cocrawl/cocrawl/peer"
	"github.com/cocrawl/cocrawl/peer/p2p"
	"github.com/cocrawl/cocrawl/protocol"
	"github.com/cocrawl/cocrawl/webevents"
)

// runOptions are the flags of cocrawl run.
type runOptions struct {
	data, listen, advertise string
	seeds, peers, special   multiFlag
	mode, rhoSpec           string
	share                   *bool // nil: the mode's
	slots                   int
	budget                  float64
	noSplit                 bool
	mergeMin, mergeMax      time.Duration
	allowPrivate            bool
	every, duration         time.Duration
	logLevel                string
	community               string
	p2pListen, bootstrap    multiFlag
	noDHT, noP2P, mdns      bool
	reachability            string
	relayService, noPunch   bool
	relays                  multiFlag
	mergeInScope            bool
	keepDays                int
	admin                   string
	dayQuota                int64
	crawl                   *crawlFlagSet
	settings                crawlSettings // set by check
	behaviour               peer.Behaviour
	level                   slog.Level
}

func newRunFlags() (*flag.FlagSet, *runOptions) {
	fs := newFlags("run", "run --data DIR --listen ADDR --seed URL... [--peer URL...] [--mode M | --rho R --share B] [--community NAME] [--p2p-listen MULTIADDR]... [--bootstrap MULTIADDR]... [--no-dht] [--config FILE] [--allow-private] [crawl settings]")
	o := &runOptions{share: new(bool)}
	fs.StringVar(&o.data, "data", "./cocrawl-data", "data folder: store, frontier and peer table")
	fs.StringVar(&o.listen, "listen", "127.0.0.1:8470", "address of robots.shr and the share repository (and of the dashboard, API and metrics when it is a loopback address and --admin is not given)")
	fs.StringVar(&o.admin, "admin", "", "address of the dashboard, API and metrics; default: --listen's when that is loopback, else 127.0.0.1 at --listen's port + 1")
	fs.StringVar(&o.advertise, "advertise", "", "host:port peers reach this one at, written in robots.shr and every event's cid; default: --listen's")
	fs.Var(&o.seeds, "seed", "URL to start polling from (repeatable)")
	fs.Var(&o.peers, "peer", "robots.shr URL of a peer to merge from (repeatable)")
	fs.Var(&o.special, "special", "URL prefix this peer knows best, advertised in robots.shr (repeatable)")
	fs.StringVar(&o.mode, "mode", "", "behaviour: "+peer.ModeNames()+" (default "+peer.DefaultMode+")")
	fs.StringVar(&o.rhoSpec, "rho", "", "rho controller: a number or fixed:R in [0,1], bangbang, rate, or seek[:PERIOD]; overrides the mode's")
	fs.BoolVar(o.share, "share", true, "publish what this peer learns; overrides the mode's")
	fs.IntVar(&o.slots, "slots", 0, "network operations in flight, each a poll or a merge; default --workers")
	fs.Float64Var(&o.budget, "budget", 0, "most requests a second the peer sends, polls and merges together (0: no limit but politeness)")
	fs.BoolVar(&o.noSplit, "no-split", false, "do not split hosts' URLs with the peers that poll them (rendezvous hashing): poll in a random order of its own")
	fs.DurationVar(&o.mergeMin, "merge-min", peer.DefaultMergeMin, "shortest wait between two merges from one peer (the wait follows what merges bring: about 4 events each)")
	fs.DurationVar(&o.mergeMax, "merge-max", 30*time.Minute, "longest wait between two merges from one peer")
	fs.BoolVar(&o.allowPrivate, "allow-private", false, "allow loopback and private addresses for polls and merges (tests, LANs)")
	fs.DurationVar(&o.every, "status-every", 5*time.Second, "how often to print a status line (0: never)")
	fs.StringVar(&o.logLevel, "log-level", "info", "debug, info, warn or error")
	fs.DurationVar(&o.duration, "duration", 0, "stop after this long (0: until Ctrl-C)")
	fs.StringVar(&o.community, "community", "default", "community to join over libp2p: its DHT and rendezvous namespace")
	fs.Var(&o.p2pListen, "p2p-listen", "libp2p listen multiaddr (repeatable); default TCP and QUIC on --listen's IP, ports chosen by the system")
	fs.Var(&o.bootstrap, "bootstrap", "multiaddr ending in /p2p/<peer-id> of a community member to join through (repeatable)")
	fs.BoolVar(&o.noDHT, "no-dht", false, "do not join the community DHT (libp2p still serves and merges)")
	fs.BoolVar(&o.noP2P, "no-p2p", false, "no libp2p at all: HTTP only, peers only from --peer")
	fs.BoolVar(&o.mdns, "mdns", false, "also find community peers on the local network by mDNS")
	fs.StringVar(&o.reachability, "reachability", p2p.ReachabilityAuto, "auto (AutoNAT finds out), public or private (behind NAT): the DHT serves only while public")
	fs.BoolVar(&o.relayService, "relay-service", false, "offer this peer as a circuit relay to NATed peers, within limits (a public peer)")
	fs.Var(&o.relays, "relay", "multiaddr ending in /p2p/<peer-id> of a relay to be reached through while behind NAT (repeatable); default: relays of the community")
	fs.BoolVar(&o.noPunch, "no-hole-punching", false, "do not punch holes through NAT for direct connections (DCUtR)")
	fs.BoolVar(&o.mergeInScope, "merge-in-scope", false, "merge only records of URLs within this peer's scope (its seeds' hosts or domains)")
	fs.Int64Var(&o.dayQuota, "day-quota", 1_000_000, "most records one peer's file of one day may bring")
	fs.IntVar(&o.keepDays, "keep-days", webevents.DefaultKeepDays, fmt.Sprintf("days of event logs kept, today included, and how long a deleted URL is remembered (at least %d)", webevents.MinKeepDays))
	o.crawl = addCrawlFlags(fs)
	return fs, o
}

// check validates the flags and resolves the behaviour, before anything
// is opened or created.
func (o *runOptions) check(fs *flag.FlagSet) error {
	var err error
	if o.settings, err = o.crawl.settings(); err != nil { // layers environment and --config under every flag
		return err
	}
	if !flagSet(fs, "share") {
		o.share = nil
	}
	if o.behaviour, err = peer.ResolveMode(o.mode, o.rhoSpec, o.share); err != nil {
		return modeError(o, err)
	}
	if err := o.level.UnmarshalText([]byte(o.logLevel)); err != nil {
		return usagef("--log-level %q is not debug, info, warn or error", o.logLevel)
	}
	if o.budget < 0 {
		return usagef("--budget cannot be negative")
	}
	if o.mergeMin <= 0 || o.mergeMax < o.mergeMin {
		return usagef("--merge-min must be positive and at most --merge-max")
	}
	switch o.reachability {
	case p2p.ReachabilityAuto, p2p.ReachabilityPublic, p2p.ReachabilityPrivate:
	default:
		return usagef("--reachability %q is not auto, public or private", o.reachability)
	}
	if err := checkSeeds(o.seeds); err != nil {
		return err
	}
	if len(o.seeds) == 0 && o.behaviour.Controller.Rho() > 0 && !storeExists(o.data) {
		return usagef("give at least one --seed URL (there is no frontier in %s yet), or run a mirror or parasite (--mode)", o.data)
	}
	return nil
}

// modeError says which flags a ResolveMode error is about.
func modeError(o *runOptions, err error) error {
	switch {
	case errors.Is(err, peer.ErrUnknownMode):
		return usagef("--mode %q is not one of %s", o.mode, peer.ModeNames())
	case errors.Is(err, peer.ErrModeConflict):
		return usagef("--mode %s contradicts --rho or --share (%s); drop one", o.mode, strings.TrimPrefix(err.Error(), peer.ErrModeConflict.Error()+": "))
	}
	return usagef("--rho: %s", strings.TrimPrefix(err.Error(), "rho: "))
}

func cmdRun(ctx context.Context, args []string, out io.Writer) error {
	fs, o := newRunFlags()
	pos, err := parse(fs, args)
	if err != nil {
		return err
	}
	if len(pos) > 0 {
		return usagef("unexpected argument %q; seeds are given with --seed", pos[0])
	}
	if err := o.check(fs); err != nil {
		return err
	}
	return servePeer(ctx, o, out)
}

// servePeer starts the peer of o and serves it until ctx ends or
// o.duration passes.
func servePeer(ctx context.Context, o *runOptions, out io.Writer) error {
	lg := slog.New(slog.NewTextHandler(os.Stderr, &slog.HandlerOptions{Level: o.level}))
	ln, err := net.Listen("tcp", o.listen)
	if err != nil {
		return fmt.Errorf("cannot listen on %s: %w; choose another --listen", o.listen, err)
	}
	ln = netguard.LimitListener(ln, netguard.MaxInbound)
	defer ln.Close()
	addr, err := advertised(o.advertise, ln.Addr().(*net.TCPAddr))
	if err != nil {
		return err
	}
	st, err := openStore(o.data, lg)
	if err != nil {
		return err
	}
	defer st.Close()
	pc := o.peerConfig(addr, ln.Addr().(*net.TCPAddr).IP, lg)
	o.settings.keepHeapHeadroom(ctx)
	arch, err := o.settings.openArchive()
	if err != nil {
		return err
	}
	if arch != nil {
		pc.Crawl.Archive = arch
		defer func() {
			if err := arch.Close(); err != nil {
				lg.Error("WARC: the last file was not finished", "err", err)
			}
			fmt.Fprintln(out, archiveLine(arch, o.settings.Warc))
		}()
	}
	p, err := peer.New(pc, peer.StoresIn(st.BadgerStore))
	if err != nil {
		st.discardIfNew()
		return asUsage(err)
	}
	defer p.Close() // Run closes the libp2p host too; Close is idempotent
	known, err := p.FrontierSize()
	if err != nil {
		return err
	}
	if len(o.seeds) == 0 && known == 0 && o.behaviour.Controller.Rho() > 0 {
		return usagef("give at least one --seed URL (the frontier in %s is empty), or run a mirror or parasite (--mode)", o.data)
	}
	if o.duration > 0 {
		var cancel context.CancelFunc
		ctx, cancel = context.WithTimeout(ctx, o.duration)
		defer cancel()
	}
	// The dashboard, API and metrics never share a public listener: on a
	// loopback --listen they may, else they get a loopback one of their own.
	adminAddr := adminAddress(o.admin, ln.Addr().(*net.TCPAddr))
	shareHandler := p.ShareHandler()
	if adminAddr == "" {
		shareHandler = p.Handler()
	}
	serveErr := make(chan error, 2)
	stopServer := serveOn(ln, shareHandler, serveErr, p.CloseStreams)
	defer stopServer()
	adminBase := "http://" + ln.Addr().String()
	if adminAddr != "" {
		aln, err := net.Listen("tcp", adminAddr)
		if err != nil {
			return fmt.Errorf("cannot listen on %s for the dashboard: %w; choose another --admin", adminAddr, err)
		}
		defer aln.Close()
		stopAdmin := serveOn(aln, p.AdminHandler(), serveErr)
		defer stopAdmin()
		adminBase = "http://" + aln.Addr().String()
	}
	o.printStart(out, p, "http://"+ln.Addr().String(), adminBase, known)
	return superviseRun(ctx, p, serveErr, o.every, out)
}

// peerConfig is the peer that o describes, reached at addr; libp2p listens
// on ip unless --p2p-listen says otherwise.
func (o *runOptions) peerConfig(addr string, ip net.IP, lg *slog.Logger) peer.Config {
	var node *p2p.Config
	if !o.noP2P {
		node = &p2p.Config{
			KeyFile: filepath.Join(o.data, "identity.key"), Community: o.community,
			ListenAddrs: o.p2pListen, ListenIP: ip,
			Bootstrap: o.bootstrap, NoDHT: o.noDHT, MDNS: o.mdns, AllowPrivate: o.allowPrivate,
			Reachability: o.reachability, RelayService: o.relayService, Relays: o.relays, NoHolePunching: o.noPunch,
		}
	}
	b := o.behaviour
	return peer.Config{
		Addr: addr, Contact: o.settings.From, Special: o.special,
		Crawl:      o.settings.crawlConfig(o.seeds, "", o.allowPrivate),
		Controller: b.Controller, Mode: b.Name, Share: b.Share,
		Peers: o.peers, Slots: o.slots, AllowPrivate: o.allowPrivate, RequestsPerSecond: o.budget, NoSplit: o.noSplit,
		Schedule: peer.MergeSchedule{MergeMin: o.mergeMin, MergeMax: o.mergeMax},
		P2P:      node, Logger: lg,
		MergeInScope: o.mergeInScope, DayQuota: o.dayQuota, KeepDays: o.keepDays,
	}
}

// adminAddress is where the dashboard, API and metrics listen: flag when
// given; "" (the share listener itself) when that is a loopback address;
// else loopback at the share port + 1 (or a port the system chooses).
func adminAddress(flag string, share *net.TCPAddr) string {
	switch {
	case flag != "":
		return flag
	case share.IP.IsLoopback():
		return ""
	case share.Port == 0:
		return "127.0.0.1:0"
	}
	return net.JoinHostPort("127.0.0.1", strconv.Itoa(share.Port+1))
}

// serveOn serves h on ln until the returned stop is called: a graceful
// shutdown of 5 s, then every connection closed, so no request is still
// reading the store when it closes.
// onShutdown runs as the shutdown begins: live streams end there, as a
// graceful shutdown would wait the 5 s for them.
func serveOn(ln net.Listener, h http.Handler, errc chan<- error, onShutdown ...func()) (stop func()) {
	hs := protocol.NewHTTPServer(ln.Addr().String(), h, protocol.Timeouts{})
	for _, f := range onShutdown {
		hs.RegisterOnShutdown(f)
	}
	go func() { errc <- hs.Serve(ln) }()
	return func() {
		sctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		if hs.Shutdown(sctx) != nil {
			_ = hs.Close()
		}
	}
}

func (o *runOptions) printStart(out io.Writer, p *peer.Peer, base, admin string, known int) {
	b := o.behaviour
	if len(p.Peers()) == 0 && b.Controller.Rho() < 1 {
		fmt.Fprintln(out, "note: no peers yet (--peer URL); until one is known every operation polls")
	}
	fmt.Fprintf(out, "peer %q: %s, controller %s, sharing %s\n", p.CID(), b.Name, b.Controller.Name(), onOff(b.Share))
	fmt.Fprintf(out, "dashboard %s/  share %s/robots.shr  API %s/api/status  metrics %s/metrics\n", admin, base, admin, admin)
	if id := p.PeerID(); id != "" {
		dht := "community " + o.community
		if o.noDHT {
			dht = "no DHT"
		}
		fmt.Fprintf(out, "libp2p peer ID %s (%s); listening on %s\n", id, dht, strings.Join(p.P2PListenAddrs(), " "))
		announced := p.P2PAddrs()
		if len(announced) == 0 {
			fmt.Fprintln(out, "announced: none (no public address); a relay circuit address will be, once a relay gives a slot")
		} else {
			fmt.Fprintln(out, "announced:")
		}
		for _, a := range announced {
			fmt.Fprintf(out, "  %s\n", a)
		}
		if nat, ok := p.NAT(); ok {
			fmt.Fprintf(out, "reachability: %s\n", reachabilityPlan(nat))
		}
	}
	fmt.Fprintf(out, "%d seeds, %d URLs and %d peers resumed from %s; Ctrl-C stops\n", len(o.seeds), known, len(p.Peers()), o.data)
}

// superviseRun runs p until ctx ends or its HTTP server fails, printing a
// status line every so often and a summary at the end.
func superviseRun(ctx context.Context, p *peer.Peer, serveErr <-chan error, every time.Duration, out io.Writer) error {
	runCtx, stopRun := context.WithCancel(ctx)
	defer stopRun()
	done := make(chan error, 1)
	go func() { done <- p.Run(runCtx) }()
	var tick <-chan time.Time
	if every > 0 {
		t := time.NewTicker(every)
		defer t.Stop()
		tick = t.C
	}
	// The reachability verdict and the relays held, printed when they
	// change (AutoNAT decides after the start-up lines).
	natTick := time.NewTicker(2 * time.Second)
	defer natTick.Stop()
	lastNAT := ""
	if n, ok := p.NAT(); ok {
		lastNAT = natLine(n)
	}
	var runErr error
loop:
	for {
		select {
		case <-natTick.C:
			if n, ok := p.NAT(); ok {
				if l := natLine(n); l != lastNAT {
					fmt.Fprintln(out, l)
					lastNAT = l
				}
			}
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
	s := p.Status(false)
	fmt.Fprintln(out, statusLine(s))
	fmt.Fprintf(out, "stopped: events per poll %.3f, events per merge %.2f; time at rho %s\n", s.EventsPerPoll, s.EventsPerMerge, timeAtRho(s.TimeAtRho))
	return runErr
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

// reachabilityPlan says what the peer does about its reachability, for
// the start-up lines.
func reachabilityPlan(n p2p.NATStatus) string {
	switch {
	case n.Reachability == p2p.ReachabilityPrivate && n.Why != "":
		return "private, " + n.Why + ": the peer asks the community's relays for a slot, is reached through them, then directly by hole punching"
	case n.Reachability == p2p.ReachabilityPrivate:
		return "private (--reachability): the peer asks the community's relays for a slot, is reached through them, then directly by hole punching"
	case n.Forced:
		return "public (--reachability): the DHT serves and peers dial this peer directly"
	}
	return "not known yet: AutoNAT asks the community's peers to dial back; until they decide the DHT serves and no relay slot is asked for (the verdict is logged)"
}

// natLine is the reachability verdict and the relays held, as printed
// when they change.
func natLine(n p2p.NATStatus) string {
	relays := "no relay slot"
	if len(n.Relays) > 0 {
		relays = "a relay slot on " + strings.Join(n.Relays, ", ")
	}
	return fmt.Sprintf("reachability %s, DHT %s, %s", n.Reachability, cmp.Or(n.DHTMode, "off"), relays)
}
