package main

import (
	"context"
	"errors"
	"fmt"
	"io"

	"github.com/cocrawl/cocrawl/peer/rho"
	"github.com/cocrawl/cocrawl/protocol"
)

func cmdShr(ctx context.Context, args []string, out io.Writer) error {
	if len(args) == 0 || args[0] != "lint" {
		return usagef("the only subcommand is 'lint': cocrawl shr lint URL")
	}
	fs := newFlags("shr lint", "shr lint URL [--days N] [--allow-private]")
	days := fs.Int("days", 7, "days, today included, whose day files are checked")
	allowPrivate := fs.Bool("allow-private", false, "allow loopback and private addresses")
	pos, err := parse(fs, args[1:])
	if err != nil {
		return err
	}
	if len(pos) != 1 {
		return usagef("give the URL of the peer's robots.shr")
	}
	l := &protocol.Linter{
		Client:     protocol.NewHTTPClient(protocol.ClientOptions{AllowPrivate: *allowPrivate}),
		Days:       *days,
		CheckProbe: func(v string) error { _, err := rho.ParseReport(v); return err },
	}
	violations, err := l.Lint(ctx, pos[0])
	if err != nil {
		if !*allowPrivate && isPrivateErr(err) {
			return fmt.Errorf("%v; add --allow-private to check it", err)
		}
		return err
	}
	for _, v := range violations {
		fmt.Fprintln(out, v)
	}
	if len(violations) > 0 {
		fmt.Fprintf(out, "%d violations\n", len(violations))
		return errNegative
	}
	fmt.Fprintf(out, "%s: no violations in robots.shr and %d days of day files\n", pos[0], *days)
	return nil
}

func isPrivateErr(err error) bool { return errors.Is(err, protocol.ErrPrivateAddress) }
