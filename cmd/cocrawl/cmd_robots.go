package main

import (
	"context"
	"fmt"
	"io"
	"os"

	"github.com/cocrawl/cocrawl/crawl"
)

func cmdRobots(_ context.Context, args []string, out io.Writer) error {
	fs := newFlags("robots", "robots FILE AGENT URL")
	pos, err := parse(fs, args)
	if err != nil {
		return err
	}
	if len(pos) != 3 {
		return usagef("give a robots.txt file, a user-agent token and a URL: cocrawl robots robots.txt mybot http://example.org/page")
	}
	body, err := os.ReadFile(pos[0])
	if err != nil {
		return fmt.Errorf("cannot read %s: %w", pos[0], err)
	}
	if crawl.ParseRobots(body, pos[1]).Allowed(pos[1], pos[2]) {
		fmt.Fprintln(out, "allowed")
		return nil
	}
	fmt.Fprintln(out, "disallowed")
	return errNegative
}
