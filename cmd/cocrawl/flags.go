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

	"github.com/cocrawl/cocrawl/crawl"
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
				// Help is what was asked for: standard output.
				fmt.Fprintf(os.Stdout, "usage: cocrawl %s\n\nflags:\n", synopses[fs])
				fs.SetOutput(os.Stdout)
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

// dataStore is the Badger store of a data folder, opened by a command.
type dataStore struct {
	*webevents.BadgerStore
	dir     string // the store's folder, <data>/db
	created bool   // this command made it
}

// storeExists says whether the data folder holds a store.
func storeExists(dataDir string) bool {
	_, err := os.Stat(filepath.Join(dataDir, "db"))
	return err == nil
}

// openStore opens the Badger store of a data folder, creating it.
func openStore(dataDir string, lg *slog.Logger) (*dataStore, error) {
	if dataDir == "" {
		return nil, usagef("--data must name a folder")
	}
	dir := filepath.Join(dataDir, "db")
	created := !storeExists(dataDir)
	st, err := webevents.OpenBadger(dir, webevents.BadgerOptions{Logger: lg})
	if err != nil {
		if created {
			os.RemoveAll(dir)
			os.Remove(dataDir)
		}
		if errors.Is(err, webevents.ErrInUse) {
			return nil, fmt.Errorf("the store in %s is in use by another cocrawl process; stop it or use another --data", dataDir)
		}
		return nil, err
	}
	return &dataStore{BadgerStore: st, dir: dir, created: created}, nil
}

// openExistingStore opens the store of a data folder that must hold one
// already (share, events): a mistyped --data is an error, not an empty
// store.
func openExistingStore(dataDir string, lg *slog.Logger) (*dataStore, error) {
	if dataDir != "" && !storeExists(dataDir) {
		return nil, usagef("no store in %s; give the --data folder of a peer that crawled or merged", dataDir)
	}
	return openStore(dataDir, lg)
}

// discardIfNew closes a store this command created and removes it, so a
// command that failed leaves no empty store behind.
func (s *dataStore) discardIfNew() {
	if !s.created {
		return
	}
	s.Close()
	os.RemoveAll(s.dir)
	os.Remove(filepath.Dir(s.dir)) // the data folder too, if nothing else is in it
	s.created = false
}

// Close closes the store; after discardIfNew it does nothing more.
func (s *dataStore) Close() error {
	if s.BadgerStore == nil {
		return nil
	}
	err := s.BadgerStore.Close()
	s.BadgerStore = nil
	return err
}

// flagSet says whether the flag name was given on the command line.
func flagSet(fs *flag.FlagSet, name string) bool {
	found := false
	fs.Visit(func(f *flag.Flag) { found = found || f.Name == name })
	return found
}

func logger() *slog.Logger {
	return slog.New(slog.NewTextHandler(os.Stderr, &slog.HandlerOptions{Level: slog.LevelWarn}))
}

// checkSeeds refuses seeds the crawler cannot poll, with the fix when it
// is obvious (a missing scheme).
func checkSeeds(seeds []string) error {
	for _, s := range seeds {
		if _, err := crawl.Normalize(nil, s); err != nil {
			if !strings.Contains(s, "://") {
				if _, err := crawl.Normalize(nil, "http://"+s); err == nil {
					return usagef("seed %q is not an http(s) URL; did you mean http://%s ?", s, s)
				}
			}
			return usagef("seed %q: %v", s, strings.TrimPrefix(err.Error(), "crawl: "))
		}
	}
	return nil
}
