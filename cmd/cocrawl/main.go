package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"os/signal"
	"runtime"
	"runtime/debug"
	"sort"
	"strings"
	"syscall"

	"github.com/cocrawl/cocrawl/crawl"
	"github.com/cocrawl/cocrawl/peer"
	"github.com/cocrawl/cocrawl/protocol"
	"github.com/cocrawl/cocrawl/publish"
)

// command is one subcommand: run gets the arguments after its name.
type command struct {
	summary string
	run     func(ctx context.Context, args []string, out io.Writer) error
}

var commands = map[string]command{
	"events":    {"list, import or export the web-events of a store", cmdEvents},
	"share":     {"serve the share repository of a store, without crawling", cmdShare},
	"publish":   {"a site owner's publisher: the web-events of a document root, for peers to merge", cmdPublish},
	"merge":     {"merge once from the peer whose robots.shr is at URL", cmdMerge},
	"subscribe": {"follow a peer's web-events, one site's or all: its live stream, or its day files", cmdSubscribe},
	"shr":       {"`shr lint URL`: report every spec violation of a peer", cmdShr},
	"run":       {"run a peer: poll, merge, share, find peers over libp2p", cmdRun},
	"crawl":     {"the current-day crawler: poll only, share nothing", cmdCrawl},
	"robots":    {"say whether AGENT may fetch URL under the robots.txt in FILE", cmdRobots},
	"peers":     {"ask a running peer for its peer table", cmdPeers},
	"testweb":   {"serve a synthetic changing web on loopback, to crawl and test against", cmdTestweb},
	"sim":       {"run an experiment of the thesis's chapter 6 in the simulator", cmdSim},
	"demo":      {"a cooperating community against polling-only peers on a synthetic web", cmdDemo},
	"measure":   {"`measure revisits|first-visits|sitemaps|publish|regimes|events|mediawiki|scale`: policies against ground truth; one peer at scale", cmdMeasure},
}

// Exit codes (docs/architecture.md, "Command line"): 0 success, 1 failure or a negative answer, 2 usage.
const (
	exitOK    = 0
	exitFail  = 1
	exitUsage = 2
)

// usageError is an error the user made on the command line.
type usageError struct{ msg string }

func (e usageError) Error() string { return e.msg }

func usagef(format string, a ...any) error { return usageError{fmt.Sprintf(format, a...)} }

// asUsage is a constructor's error as the command reports it: a mistake
// in what it was told (crawl.ConfigError, peer.ConfigError,
// publish.ConfigError) is a usage
// error (exit 2); a failure to start (a port, a file, the network) stays
// an error (exit 1), with its cause.
func asUsage(err error) error {
	var ce *crawl.ConfigError
	var pe *peer.ConfigError
	var pub *publish.ConfigError
	if errors.As(err, &ce) || errors.As(err, &pe) || errors.As(err, &pub) {
		return usagef("%v", err)
	}
	return err
}

// errNegative is a negative answer: exit 1 without an error line.
var errNegative = errors.New("negative answer")

func main() {
	os.Exit(run(os.Args[1:], os.Stdout, os.Stderr))
}

func run(args []string, out, errOut io.Writer) int {
	if len(args) == 0 {
		usage(errOut)
		return exitUsage
	}
	switch args[0] {
	case "-h", "--help", "help":
		usage(out) // to standard output, so that `cocrawl help | less` works
		return exitOK
	case "version", "--version":
		fmt.Fprintln(out, versionLine())
		return exitOK
	}
	cmd, ok := commands[args[0]]
	if !ok {
		fmt.Fprintf(errOut, "cocrawl: unknown command %q; run 'cocrawl help' for the list\n", args[0])
		return exitUsage
	}
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	err := cmd.run(ctx, args[1:], out)
	var ue usageError
	switch {
	case err == nil, errors.Is(err, errHelp):
		return exitOK
	case errors.Is(err, errNegative):
		return exitFail
	case errors.As(err, &ue):
		fmt.Fprintf(errOut, "cocrawl %s: %s\n", args[0], ue.msg)
		return exitUsage
	default:
		// A library error that names the command's own package says it
		// once: "cocrawl crawl: seed ...", not "cocrawl crawl: crawl: seed".
		fmt.Fprintf(errOut, "cocrawl %s: %s\n", args[0], strings.TrimPrefix(err.Error(), args[0]+": "))
		return exitFail
	}
}

func usage(w io.Writer) {
	fmt.Fprintln(w, "cocrawl: a peer of a community of cooperating web crawlers")
	fmt.Fprintln(w, "\nusage: cocrawl COMMAND [flags] [args]; 'cocrawl COMMAND -h' for its flags\n\ncommands:")
	names := make([]string, 0, len(commands))
	for n := range commands {
		names = append(names, n)
	}
	sort.Strings(names)
	for _, n := range names {
		fmt.Fprintf(w, "  %-8s %s\n", n, commands[n].summary)
	}
	fmt.Fprintf(w, "  %-8s %s\n", "version", "print the version of cocrawl and of its protocol")
}

// versionLine names the build: the module version (or the VCS revision of
// a build from a checkout), the protocol version and the Go release.
func versionLine() string {
	v, rev, dirty := "(devel)", "", false
	if bi, ok := debug.ReadBuildInfo(); ok {
		if bi.Main.Version != "" {
			v = bi.Main.Version
		}
		for _, s := range bi.Settings {
			switch s.Key {
			case "vcs.revision":
				rev = s.Value
			case "vcs.modified":
				dirty = s.Value == "true"
			}
		}
	}
	if v == "(devel)" && rev != "" {
		v = "devel " + rev[:min(12, len(rev))]
		if dirty {
			v += "+dirty"
		}
	}
	return fmt.Sprintf("cocrawl %s, protocol %s, %s", v, protocol.CurrentVersion, runtime.Version())
}
