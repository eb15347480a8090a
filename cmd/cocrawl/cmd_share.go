package main

import (
	"context"
	"errors"
	"fmt"
	"github.com/cocrawl/cocrawl/internal/netguard"
	"io"
	"net"
	"net/http"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/collectors"
	"github.com/prometheus/client_golang/prometheus/promhttp"

	"github.com/cocrawl/cocrawl/protocol"
)

func cmdShare(ctx context.Context, args []string, out io.Writer) error {
	fs := newFlags("share", "share --data DIR --listen ADDR [--crawler 'host:port Moniker'] [--contact EMAIL] [--special URL]...")
	data := fs.String("data", "./cocrawl-data", "data folder of the store")
	listen := fs.String("listen", "127.0.0.1:8470", "address to serve on")
	crawler := fs.String("crawler", "", "crawler field of robots.shr; default: the request's host:port and cocrawl/"+protocol.CurrentVersion)
	contact := fs.String("contact", "", "contact field of robots.shr: the operator's e-mail")
	repo := fs.String("repository", "/share/", "path of the share repository")
	var special multiFlag
	fs.Var(&special, "special", "URL prefix this peer knows best (repeatable)")
	if pos, err := parse(fs, args); err != nil {
		return err
	} else if len(pos) > 0 {
		return usagef("unexpected argument %q", pos[0])
	}
	lg := logger()
	st, err := openExistingStore(*data, lg)
	if err != nil {
		return err
	}
	defer st.Close()
	metrics := protocol.NewMetrics()
	srv, err := protocol.NewServer(st, protocol.ServerOptions{
		Control: protocol.ShareControl{Crawler: *crawler, Contact: *contact, Special: special, Repository: *repo},
		Logger:  lg,
		Metrics: metrics,
	})
	if err != nil {
		return usagef("%v", err)
	}
	reg := prometheus.NewRegistry()
	reg.MustRegister(collectors.NewGoCollector(), collectors.NewProcessCollector(collectors.ProcessCollectorOpts{}))
	reg.MustRegister(metrics)
	mux := http.NewServeMux()
	mux.Handle("/metrics", promhttp.HandlerFor(reg, promhttp.HandlerOpts{}))
	mux.Handle("/", srv)

	ln, err := net.Listen("tcp", *listen)
	if err != nil {
		return fmt.Errorf("cannot listen on %s: %w; choose another --listen", *listen, err)
	}
	ln = netguard.LimitListener(ln, netguard.MaxInbound)
	hs := protocol.NewHTTPServer(ln.Addr().String(), mux, protocol.Timeouts{})
	fmt.Fprintf(out, "sharing %s at http://%s/robots.shr (day files under %s, metrics at /metrics); Ctrl-C stops\n", *data, ln.Addr(), srv.RepositoryPath())
	errc := make(chan error, 1)
	go func() { errc <- hs.Serve(ln) }()
	select {
	case err := <-errc:
		return err
	case <-ctx.Done():
	}
	sctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if err := hs.Shutdown(sctx); err != nil && !errors.Is(err, http.ErrServerClosed) {
		return err
	}
	fmt.Fprintln(out, "stopped")
	return nil
}
