package main

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"

	"github.com/cocrawl/cocrawl/protocol"
	"github.com/cocrawl/cocrawl/webevents"
)

func cmdEvents(ctx context.Context, args []string, out io.Writer) error {
	if len(args) > 0 && args[0] == "import" {
		return cmdEventsImport(ctx, args[1:], out)
	}
	fs := newFlags("events", "events --data DIR [--url URL] [--day N] [--format dat|jsonl]\n       cocrawl events import FILE.dat|- --data DIR")
	data := fs.String("data", "./cocrawl-data", "data folder of the store")
	url := fs.String("url", "", "show only this URL's current state")
	day := fs.Int64("day", -1, "show this day's log exactly as it is served, instead of the current state")
	format := fs.String("format", "jsonl", "output format: dat or jsonl")
	pos, err := parse(fs, args)
	if err != nil {
		return err
	}
	if len(pos) > 0 {
		return usagef("unexpected argument %q; the subcommand is 'import'", pos[0])
	}
	if *format != "dat" && *format != "jsonl" {
		return usagef("--format must be dat or jsonl, not %q", *format)
	}
	if *url != "" && *day >= 0 {
		return usagef("--url and --day do not go together")
	}
	if !storeExists(*data) {
		// Nothing to list; opening would create an empty store.
		if *url != "" {
			fmt.Fprintf(os.Stderr, "no event for %s in %s (it holds no store)\n", *url, *data)
			return errNegative
		}
		return nil
	}
	st, err := openStore(*data, logger())
	if err != nil {
		return err
	}
	defer st.Close()

	return listEvents(st, out, *data, *url, *day, *format)
}

// listEvents prints one URL's current state, a day's log, or every
// current state.
func listEvents(st *dataStore, out io.Writer, data, url string, day int64, format string) error {
	w := bufio.NewWriterSize(out, 64<<10)
	defer w.Flush()
	emit := eventPrinter(w, format)
	switch {
	case url != "":
		e, ok, err := st.Get(url)
		if err != nil {
			return err
		}
		if !ok {
			w.Flush()
			fmt.Fprintf(os.Stderr, "no event for %s in %s\n", url, data)
			return errNegative
		}
		return emit(e)
	case day >= 0:
		if format == "dat" {
			// Byte for byte what the share server sends for this day.
			info, ok, err := st.DayInfo(day)
			if err != nil || !ok {
				return err
			}
			return st.ReadDay(day, 0, func(off int64, e webevents.Event) error {
				if off >= info.Size {
					return errStop
				}
				return emit(e)
			})
		}
		return st.ReadDay(day, 0, func(_ int64, e webevents.Event) error { return emit(e) })
	default:
		return st.Current(emit)
	}
}

var errStop = errors.New("stop")

func eventPrinter(w io.Writer, format string) func(webevents.Event) error {
	if format == "dat" {
		var buf []byte
		return func(e webevents.Event) error {
			buf = webevents.AppendRecord(buf[:0], &e)
			_, err := w.Write(buf)
			return err
		}
	}
	enc := json.NewEncoder(w)
	return func(e webevents.Event) error {
		return enc.Encode(e)
	}
}

func cmdEventsImport(_ context.Context, args []string, out io.Writer) error {
	fs := newFlags("events import", "events import FILE.dat|- --data DIR")
	data := fs.String("data", "./cocrawl-data", "data folder of the store")
	pos, err := parse(fs, args)
	if err != nil {
		return err
	}
	if len(pos) != 1 {
		return usagef("give one day file to import (or - for standard input)")
	}
	var in io.Reader = os.Stdin
	if pos[0] != "-" {
		f, err := os.Open(pos[0])
		if err != nil {
			return fmt.Errorf("cannot read %s: %w", pos[0], err)
		}
		defer f.Close()
		in = f
	}
	st, err := openStore(*data, logger())
	if err != nil {
		return err
	}
	defer st.Close()

	m := &protocol.Merger{Store: st}
	shown := 0
	rep, err := m.MergeFile(in, func(err error) {
		if shown++; shown <= 20 {
			fmt.Fprintf(os.Stderr, "%s: %v (record skipped)\n", pos[0], err)
		}
	})
	if err != nil {
		return fmt.Errorf("%s: %w", pos[0], err)
	}
	total := rep.Result
	fmt.Fprintf(out, "imported %s: %d records, %d skipped as malformed; %d accepted, %d restated, %d ignored, %d order violations\n",
		pos[0], rep.Records, rep.BadRecords, total.Accepted, total.Restated, total.Ignored, len(total.Polls))
	return nil
}
