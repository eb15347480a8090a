package main

import (
	"errors"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"os"
	"path/filepath"
	"strings"

	"github.com/cocrawl/cocrawl/webevents"
)

// newFlags returns a flag set that reports errors instead of exiting.
func newFlags(name, synopsis string) *flag.FlagSet {
	fs := flag.NewFlagSet(name, flag.ContinueOnError)
	fs.SetOutput(io.Discard)
	fs.Usage = func() {} // errors are reported in one line by run; -h prints help
	synopses[fs] = synopsis
	return fs
}

// parse parses flags placed before, between or after positional arguments
// (`cocrawl merge URL --data DIR`), which package flag alone does not.
func parse(fs *flag.FlagSet, args []string) ([]string, error) {
	var pos []string
	for {
		if err := fs.Parse(args); err != nil {
			if errors.Is(err, flag.ErrHelp) {
				fmt.Fprintf(os.Stderr, "usage: cocrawl %s\n\nflags:\n", synopses[fs])
				fs.SetOutput(os.Stderr)
				fs.PrintDefaults()
				return nil, errHelp
			}
			return nil, usagef("%v; run 'cocrawl %s -h'", err, fs.Name())
		}
		args = fs.Args()
		if len(args) == 0 {
			return pos, nil
		}
		if args[0] == "--" {
			return append(pos, args[1:]...), nil
		}
		pos = append(pos, args[0])
		args = args[1:]
	}
}

// synopses holds each flag set's usage line for -h.
var synopses = map[*flag.FlagSet]string{}

// errHelp ends a command after -h printed its usage.
var errHelp = errors.New("help shown")

// multiFlag is a repeatable string flag.
type multiFlag []string

func (m *multiFlag) String() string     { return strings.Join(*m, ",") }
func (m *multiFlag) Set(v string) error { *m = append(*m, v); return nil }

// openStore opens the Badger store of a data folder, creating it.
func openStore(dataDir string, lg *slog.Logger) (*webevents.BadgerStore, error) {
	if dataDir == "" {
		return nil, usagef("--data must name a folder")
	}
	dir := filepath.Join(dataDir, "db")
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return nil, fmt.Errorf("cannot create %s: %w", dir, err)
	}
	st, err := webevents.OpenBadger(dir, webevents.BadgerOptions{Logger: lg})
	if err != nil {
		if errors.Is(err, webevents.ErrInUse) {
			return nil, fmt.Errorf("the store in %s is in use by another cocrawl process; stop it or use another --data", dataDir)
		}
		return nil, err
	}
	return st, nil
}

func logger() *slog.Logger {
	return slog.New(slog.NewTextHandler(os.Stderr, &slog.HandlerOptions{Level: slog.LevelWarn}))
}
