package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"os/signal"
	"sort"
	"syscall"
)

// command is one subcommand: run gets the arguments after its name.
type command struct {
	summary string
	run     func(ctx context.Context, args []string, out io.Writer) error
}

var commands = map[string]command{
	"events":  {"list, import or export the web-events of a store", cmdEvents},
	"share":   {"serve the share repository of a store, without crawling", cmdShare},
	"merge":   {"merge once from the peer whose robots.shr is at URL", cmdMerge},
	"shr":     {"`shr lint URL`: report every spec violation of a peer", cmdShr},
	"run":     {"run a peer: poll, merge, share, find peers over libp2p", cmdRun},
	"crawl":   {"the current-day crawler: poll only, share nothing", cmdCrawl},
	"robots":  {"say whether AGENT may fetch URL under the robots.txt in FILE", cmdRobots},
	"peers":   {"ask a running peer for its peer table", cmdPeers},
	"testweb": {"serve a synthetic changing web on loopback, to crawl and test against", cmdTestweb},
	"sim":     {"run an experiment of the thesis's chapter 6 in the simulator", cmdSim},
	"demo":    {"a cooperating community against polling-only peers on a synthetic web", cmdDemo},
}

// Exit codes (DESIGN.md): 0 success, 1 failure or a negative answer, 2 usage.
const (
	exitOK    = 0
	exitFail  = 1
	exitUsage = 2
)

// usageError is an error the user made on the command line.
type usageError struct{ msg string }

func (e usageError) Error() string { return e.msg }

func usagef(format string, a ...any) error { return usageError{fmt.Sprintf(format, a...)} }

// errNegative is a negative answer: exit 1 without an error line.
var errNegative = errors.New("negative answer")

func main() {
	os.Exit(run(os.Args[1:], os.Stdout, os.Stderr))
}

func run(args []string, out, errOut io.Writer) int {
	if len(args) == 0 || args[0] == "-h" || args[0] == "--help" || args[0] == "help" {
		usage(errOut)
		if len(args) == 0 {
			return exitUsage
		}
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
		fmt.Fprintf(errOut, "cocrawl %s: %v\n", args[0], err)
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
}
