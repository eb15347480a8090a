package main

import (
	"cmp"
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"net"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/cocrawl/cocrawl/crawl/sitemap"
	"github.com/cocrawl/cocrawl/protocol"
	"github.com/cocrawl/cocrawl/publish"
	"github.com/cocrawl/cocrawl/webevents"
)

// publishOptions are the flags of cocrawl publish.
type publishOptions struct {
	root, base, data, listen, addr, admin, contact, index string
	settle, rescan, cycle                                 time.Duration
	keepDays                                              int
	indexnow                                              multiFlag
	key, keyLocation                                      string
}

func newPublishFlags() (*flag.FlagSet, *publishOptions) {
	fs := newFlags("publish", "publish --root DIR --base URL [--data DIR] [--listen ADDR] [--addr HOST:PORT] [--indexnow URL]...")
	o := &publishOptions{}
	fs.StringVar(&o.root, "root", "", "the site's document root, watched for changes (required)")
	fs.StringVar(&o.base, "base", "", "the URL the document root is served at, e.g. https://example.org/ (required)")
	fs.StringVar(&o.data, "data", "./cocrawl-publish-data", "data folder of the publisher's store")
	fs.StringVar(&o.listen, "listen", "127.0.0.1:8475", "address the share repository is served on")
	fs.StringVar(&o.addr, "addr", "", "host:port peers reach the share repository at, written in robots.shr and every event's cid; default: --listen's")
	fs.StringVar(&o.admin, "admin", "", "address of /metrics; default: --listen's when that is loopback, else 127.0.0.1 at --listen's port + 1")
	fs.StringVar(&o.contact, "contact", "", "contact field of robots.shr: the site owner's e-mail")
	fs.StringVar(&o.index, "index", "index.html", "the file a folder's URL serves; - for none")
	fs.DurationVar(&o.settle, "settle", 250*time.Millisecond, "how long a file must be quiet before it is published")
	fs.DurationVar(&o.rescan, "rescan", time.Hour, "how often the whole root is compared with what was published")
	fs.DurationVar(&o.cycle, "confirm-cycle", 7*24*time.Hour, "each unchanged file is recorded again once per cycle, so new peers learn the whole site; 0 never")
	fs.IntVar(&o.keepDays, "keep-days", webevents.DefaultKeepDays, fmt.Sprintf("days of logs the store keeps (at least %d)", webevents.MinKeepDays))
	fs.Var(&o.indexnow, "indexnow", "IndexNow endpoint changes are pushed to, such as a peer's http://host:port/indexnow (repeatable)")
	fs.StringVar(&o.key, "indexnow-key", "", "IndexNow key; default: one made once and kept in the data folder")
	fs.StringVar(&o.keyLocation, "indexnow-key-location", "", "URL of the key file when the owner serves it; default: the publisher writes {key}.txt into the root")
	return fs, o
}

func (o *publishOptions) check() error {
	if o.root == "" || o.base == "" {
		return usagef("publish needs --root and --base")
	}
	if o.cycle == 0 {
		o.cycle = -1 // publish.Config: negative is never
	}
	return nil
}

// cmdPublish runs a site owner's publisher: the web-events of a document
// root, shared so that peers merge the site instead of polling it.
func cmdPublish(ctx context.Context, args []string, out io.Writer) error {
	fs, o := newPublishFlags()
	if pos, err := parse(fs, args); err != nil {
		return err
	} else if len(pos) > 0 {
		return usagef("unexpected argument %q", pos[0])
	}
	if err := o.check(); err != nil {
		return err
	}
	return runPublish(ctx, o, out)
}

// runPublish opens the store, starts the publisher (and its IndexNow
// pinger) and serves the share repository until ctx ends.
func runPublish(ctx context.Context, o *publishOptions, out io.Writer) error {
	lg := logger()
	st, err := openStore(o.data, lg)
	if err != nil {
		return err
	}
	defer st.Close()
	ln, err := net.Listen("tcp", o.listen)
	if err != nil {
		return fmt.Errorf("cannot listen on %s: %w; choose another --listen", o.listen, err)
	}
	defer ln.Close() // serveShare closes it too; a second Close is harmless
	shareAddr := cmp.Or(o.addr, ln.Addr().String())
	cfg := publish.Config{Root: o.root, Base: o.base, CID: publish.CID(shareAddr), Index: o.index, Settle: o.settle,
		Rescan: o.rescan, ConfirmCycle: o.cycle, Logger: lg}
	var pinger *publish.Pinger
	if len(o.indexnow) > 0 {
		if pinger, err = startPinger(&cfg, o.data, o.key, o.keyLocation, o.indexnow); err != nil {
			return err
		}
	}
	pub, err := publish.New(st, cfg)
	if err != nil {
		return asUsage(err)
	}
	metrics := protocol.NewMetrics()
	srv, err := protocol.NewServer(st, protocol.ServerOptions{Control: pub.ShareControl(o.contact), Logger: lg, Metrics: metrics})
	if err != nil {
		return usagef("%v", err) // NewServer only checks what it is told
	}
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	pubErr := make(chan error, 1)
	go func() {
		err := pub.Run(ctx)
		pubErr <- err
		if err != nil {
			cancel()
		}
	}()
	if pinger != nil {
		go pinger.Run(ctx)
	}
	go retainLogs(ctx, st, o.keepDays, lg)
	err = serveShare(ctx, ln, srv, o.admin, out, func(metricsAt string) {
		fmt.Fprintf(out, "publishing %s as %s: robots.shr at http://%s/robots.shr, ResourceSync at http://%s%s, metrics at %s; Ctrl-C stops\n",
			o.root, pub.Base(), shareAddr, shareAddr, sitemap.SourceDescriptionPath, metricsAt)
	}, metrics, publishCollector{pub, pinger})
	cancel()
	return cmp.Or(<-pubErr, err)
}

// startPinger makes the IndexNow pinger, with the key given, kept in the
// data folder or made (publish.AttachPinger writes its key file into the
// root unless the owner serves it elsewhere).
func startPinger(cfg *publish.Config, data, key, keyLocation string, endpoints []string) (*publish.Pinger, error) {
	keyPath := filepath.Join(data, "indexnow.key")
	if key == "" {
		if b, err := os.ReadFile(keyPath); err == nil {
			key = strings.TrimSpace(string(b))
		} else if errors.Is(err, os.ErrNotExist) {
			key = publish.NewKey()
			if err := os.WriteFile(keyPath, []byte(key+"\n"), 0o600); err != nil {
				return nil, fmt.Errorf("keep the IndexNow key: %w", err)
			}
		} else {
			return nil, fmt.Errorf("read the IndexNow key: %w", err)
		}
	}
	p, err := publish.AttachPinger(cfg, key, keyLocation, endpoints)
	return p, asUsage(err)
}

// retainLogs drops day logs older than keepDays, at start and hourly.
func retainLogs(ctx context.Context, st *dataStore, keepDays int, lg interface{ Error(string, ...any) }) {
	webevents.Retain(ctx, st, keepDays, time.Hour, func(_ int64, _ webevents.Expired, err error) {
		if err != nil {
			lg.Error("retention", "err", err)
		}
	})
}

// publishCollector exports a publisher's counts as cocrawl_publish_*.
type publishCollector struct {
	pub    *publish.Publisher
	pinger *publish.Pinger
}

var (
	publishEventsDesc  = prometheus.NewDesc("cocrawl_publish_events_total", "Web-events the publisher recorded, by kind (created, updated, deleted, confirmed).", []string{"kind"}, nil)
	publishFilesDesc   = prometheus.NewDesc("cocrawl_publish_files", "Live files published.", nil, nil)
	publishWatchesDesc = prometheus.NewDesc("cocrawl_publish_watches", "Folders watched.", nil, nil)
	publishErrorsDesc  = prometheus.NewDesc("cocrawl_publish_errors_total", "Publisher troubles, by kind (watch, record, read, overflow, bad_date, backwards_date).", []string{"kind"}, nil)
	publishRescanDesc  = prometheus.NewDesc("cocrawl_publish_rescans_total", "Whole-root comparisons.", nil, nil)
	indexNowPingDesc   = prometheus.NewDesc("cocrawl_publish_indexnow_total", "IndexNow pushes, by outcome (urls, posts, failures, dropped).", []string{"outcome"}, nil)
)

func (c publishCollector) Describe(ch chan<- *prometheus.Desc) {
	for _, d := range []*prometheus.Desc{publishEventsDesc, publishFilesDesc, publishWatchesDesc, publishErrorsDesc, publishRescanDesc, indexNowPingDesc} {
		ch <- d
	}
}

func (c publishCollector) Collect(ch chan<- prometheus.Metric) {
	s := c.pub.Stats()
	counter := func(d *prometheus.Desc, v int64, label ...string) {
		ch <- prometheus.MustNewConstMetric(d, prometheus.CounterValue, float64(v), label...)
	}
	counter(publishEventsDesc, s.Created, "created")
	counter(publishEventsDesc, s.Updated, "updated")
	counter(publishEventsDesc, s.Deleted, "deleted")
	counter(publishEventsDesc, s.Confirmed, "confirmed")
	ch <- prometheus.MustNewConstMetric(publishFilesDesc, prometheus.GaugeValue, float64(s.Files))
	ch <- prometheus.MustNewConstMetric(publishWatchesDesc, prometheus.GaugeValue, float64(s.Watches))
	counter(publishErrorsDesc, s.WatchErrors, "watch")
	counter(publishErrorsDesc, s.RecordErrors, "record")
	counter(publishErrorsDesc, s.ReadErrors, "read")
	counter(publishErrorsDesc, s.Overflows, "overflow")
	counter(publishErrorsDesc, s.BadDates, "bad_date")
	counter(publishErrorsDesc, s.BackwardsDates, "backwards_date")
	counter(publishRescanDesc, s.Rescans)
	if c.pinger != nil {
		p := c.pinger.Stats()
		counter(indexNowPingDesc, p.URLs, "urls")
		counter(indexNowPingDesc, p.Posts, "posts")
		counter(indexNowPingDesc, p.Failures, "failures")
		counter(indexNowPingDesc, p.Dropped, "dropped")
	}
}
