package main

import (
	"context"
	"fmt"
	"io"
	"time"

	"github.com/cocrawl/cocrawl/protocol"
)

func cmdMerge(ctx context.Context, args []string, out io.Writer) error {
	fs := newFlags("merge", "merge URL --data DIR [--allow-private] [--back-days N] [--max-bytes N] [--timeout D]")
	data := fs.String("data", "./cocrawl-data", "data folder of the store to merge into")
	allowPrivate := fs.Bool("allow-private", false, "allow loopback and private addresses (tests, LANs)")
	backDays := fs.Int("back-days", 7, "days, today included, a first merge with this peer reaches back")
	maxBytes := fs.Int64("max-bytes", 256<<20, "largest day file accepted, in bytes")
	timeout := fs.Duration("timeout", 5*time.Minute, "time limit for each request")
	from := fs.String("from", "", "your e-mail, sent in the From header")
	pos, err := parse(fs, args)
	if err != nil {
		return err
	}
	if len(pos) != 1 {
		return usagef("give the URL of the peer's robots.shr, e.g. http://peer.example:8470/robots.shr")
	}
	st, err := openStore(*data, logger())
	if err != nil {
		return err
	}
	defer st.Close()
	m := &protocol.Merger{
		Store:    st,
		Client:   protocol.NewHTTPClient(protocol.ClientOptions{AllowPrivate: *allowPrivate, Timeout: *timeout}),
		Limits:   protocol.Limits{MaxBytes: *maxBytes},
		BackDays: *backDays,
		From:     *from,
		Logger:   logger(),
	}
	rep, err := m.Merge(ctx, pos[0])
	if err != nil {
		if rep.Result.Accepted+rep.Result.Restated == 0 {
			st.discardIfNew() // nothing merged: leave no empty store behind
		}
		if !*allowPrivate && isPrivateErr(err) {
			return fmt.Errorf("%v; add --allow-private to merge from it", err)
		}
		return err
	}
	failed := 0
	for _, d := range rep.Days {
		line := fmt.Sprintf("day %d: status %d, %d records (%d malformed), %d bytes, %d accepted, %d ignored",
			d.Day, d.Status, d.Records, d.BadRecords, d.WireBytes, d.Result.Accepted, d.Result.Ignored)
		if d.Err != nil {
			failed++
			line += ", error: " + d.Err.Error()
		}
		fmt.Fprintln(out, line)
	}
	r := rep.Result
	fmt.Fprintf(out, "merged %s (%s): %d records, %d malformed, %d bytes; %d accepted, %d restated, %d ignored, %d to poll (order violations)\n",
		rep.Peer, rep.Control.Crawler, rep.Records, rep.BadRecords, rep.WireBytes, r.Accepted, r.Restated, r.Ignored, len(r.Polls))
	if failed > 0 {
		return fmt.Errorf("%d day files could not be merged whole; what was read is kept and the next merge resumes", failed)
	}
	return nil
}
