package main

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"time"

	"github.com/cocrawl/cocrawl/protocol"
)

// cmdSubscribe follows a peer's web-events until interrupted: its live
// stream, or its day files where it has none.
func cmdSubscribe(ctx context.Context, args []string, out io.Writer) error {
	fs := newFlags("subscribe", "subscribe URL [--prefix P] [--state FILE] [--exec CMD] [--from-now] [--allow-private] [--pull-every D]")
	prefix := fs.String("prefix", "", "only the events of URLs starting with this absolute URL prefix, e.g. https://example.org/ (spec 7.7)")
	state := fs.String("state", "cocrawl-subscribe.json", "file that keeps where the subscription stands, so that a restart goes on from there")
	command := fs.String("exec", "", "run this shell command per event, the event's JSON on its standard input (and COCRAWL_URL, COCRAWL_STAT, COCRAWL_DAY set), instead of printing JSON lines")
	allowPrivate := fs.Bool("allow-private", false, "allow loopback and private addresses (tests, LANs)")
	pullEvery := fs.Duration("pull-every", 30*time.Second, "time between pulls of the day files of a peer without a live stream")
	execTimeout := fs.Duration("exec-timeout", time.Minute, "time limit of each --exec command")
	fromNow := fs.Bool("from-now", false, "a new subscription starts with the events recorded from now on (default: today's and yesterday's first; streams only, a pull starts with them)")
	pos, err := parse(fs, args)
	if err != nil {
		return err
	}
	if len(pos) != 1 {
		return usagef("give the peer's share address, e.g. http://peer.example:8470 (or its robots.shr URL)")
	}
	base := strings.TrimSuffix(strings.TrimRight(pos[0], "/"), "/robots.shr")
	if !strings.HasPrefix(base, "http://") && !strings.HasPrefix(base, "https://") {
		return usagef("%q is not an http(s) address of a peer", pos[0])
	}
	var filter *protocol.DayFilter
	if *prefix != "" {
		f, err := protocol.NewDayFilter(*prefix)
		if err != nil {
			return usagef("--prefix: %v", err)
		}
		filter = &f
	}
	st, err := loadSubscription(*state, base, *prefix)
	if err != nil {
		return err
	}
	sub := &protocol.Subscriber{
		Base: base, Prefix: filter, PullEvery: *pullEvery, State: st, Logger: logger(), FromNow: *fromNow,
		Client: protocol.NewHTTPClient(protocol.ClientOptions{AllowPrivate: *allowPrivate}),
		Save:   func(s *protocol.SubscriptionState) error { return saveSubscription(*state, s) },
	}
	if *command == "" {
		// JSON lines; the state is saved at most each second, so a crash
		// delivers up to a second's events again (at least once).
		enc := json.NewEncoder(out)
		sub.SaveEvery = time.Second
		sub.Deliver = func(e protocol.SubscribedEvent) error { return enc.Encode(e) }
	} else {
		sub.Deliver = func(e protocol.SubscribedEvent) error { return runForEvent(ctx, *command, *execTimeout, e) }
	}
	what := "every event"
	if *prefix != "" {
		what = "the events of " + *prefix
	}
	fmt.Fprintf(os.Stderr, "subscribed to %s for %s; state in %s\n", base, what, *state)
	err = sub.Run(ctx)
	if err != nil && !*allowPrivate && isPrivateErr(err) {
		return fmt.Errorf("%v; add --allow-private to subscribe to it", err)
	}
	return err
}

// runForEvent runs the user's command for one event. A command that
// fails is reported and the subscription goes on: the event counts as
// delivered, or one bad event would stop every later one.
func runForEvent(ctx context.Context, command string, timeout time.Duration, e protocol.SubscribedEvent) error {
	b, err := json.Marshal(e)
	if err != nil {
		return err
	}
	ctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	cmd := exec.CommandContext(ctx, "/bin/sh", "-c", command)
	cmd.Stdin = bytes.NewReader(append(b, '\n'))
	cmd.Stdout, cmd.Stderr = os.Stdout, os.Stderr
	cmd.Env = append(os.Environ(), "COCRAWL_URL="+e.URL, "COCRAWL_STAT="+e.Stat.String(), "COCRAWL_DAY="+strconv.FormatInt(e.Day, 10))
	if err := cmd.Run(); err != nil {
		if ctx.Err() != nil && errors.Is(context.Cause(ctx), context.Canceled) {
			return err // interrupted: deliver it again after the restart
		}
		logger().Warn("subscribe: the command failed for an event", "url", e.URL, "err", err)
	}
	return nil
}

// loadSubscription reads the state file; a missing one starts afresh.
func loadSubscription(path, base, prefix string) (*protocol.SubscriptionState, error) {
	b, err := os.ReadFile(path)
	if errors.Is(err, fs.ErrNotExist) {
		return &protocol.SubscriptionState{}, nil
	}
	if err != nil {
		return nil, err
	}
	var st protocol.SubscriptionState
	if err := json.Unmarshal(b, &st); err != nil {
		return nil, fmt.Errorf("state file %s: %w; remove it to start afresh", path, err)
	}
	if st.Peer != base || st.Prefix != prefix {
		return nil, usagef("state file %s is of the subscription to %s (prefix %q); give another --state", path, st.Peer, st.Prefix)
	}
	return &st, nil
}

// saveSubscription writes the state file whole or not at all.
func saveSubscription(path string, st *protocol.SubscriptionState) error {
	b, err := json.MarshalIndent(st, "", "  ")
	if err != nil {
		return err
	}
	tmp, err := os.CreateTemp(filepath.Dir(path), ".subscribe-*")
	if err != nil {
		return err
	}
	defer os.Remove(tmp.Name())
	if _, err := tmp.Write(append(b, '\n')); err != nil {
		tmp.Close()
		return err
	}
	if err := tmp.Sync(); err != nil {
		tmp.Close()
		return err
	}
	if err := tmp.Close(); err != nil {
		return err
	}
	return os.Rename(tmp.Name(), path)
}
