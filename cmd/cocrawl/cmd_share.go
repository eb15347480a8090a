package main

import (
	"context"
	"fmt"
	"io"
	"net"
	"net/http"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/collectors"
	"github.com/prometheus/client_golang/prometheus/promhttp"

	"github.com/cocrawl/cocrawl/internal/netguard"
	"github.com/cocrawl/cocrawl/protocol"
)

func cmdShare(ctx context.Context, args []string, out io.Writer) error {
	fs := newFlags("share", "share --data DIR --listen ADDR [--crawler 'host:port Moniker'] [--contact EMAIL] [--special URL]...")
	data := fs.String("data", "./cocrawl-data", "data folder of the store")
	listen := fs.String("listen", "127.0.0.1:8470", "address to serve on")
	admin := fs.String("admin", "", "address of /metrics; default: --listen's when that is loopback, else 127.0.0.1 at --listen's port + 1")
	crawler := fs.String("crawler", "", "crawler field of robots.shr; default: the request's host:port and cocrawl/"+protocol.CurrentVersion)
	contact := fs.String("contact", "", "contact field of robots.shr: the operator's e-mail")
	repo := fs.String("repository", "/share/", "path of the share repository")
	allowPrivate := fs.Bool("allow-private", false, "let the WebSub hub call loopback and private callbacks (tests, LANs)")
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
		Control:      protocol.ShareControl{Crawler: *crawler, Contact: *contact, Special: special, Repository: *repo},
		Logger:       lg,
		Metrics:      metrics,
		WebSubClient: protocol.NewHTTPClient(protocol.ClientOptions{AllowPrivate: *allowPrivate}),
	})
	if err != nil {
		return usagef("%v", err) // NewServer only checks what it is told
	}
	ln, err := net.Listen("tcp", *listen)
	if err != nil {
		return fmt.Errorf("cannot listen on %s: %w; choose another --listen", *listen, err)
	}
	return serveShare(ctx, ln, srv, *admin, out, func(metricsAt string) {
		fmt.Fprintf(out, "sharing %s at http://%s/robots.shr (day files under %s, metrics at %s); Ctrl-C stops\n", *data, ln.Addr(), srv.RepositoryPath(), metricsAt)
	}, metrics)
}

// serveShare serves a share server on ln until ctx ends, with /metrics of
// the collectors given on the admin address (on ln when that is loopback
// and admin is empty: metrics stay off a public listener, as cocrawl run's
// admin pages). started is told where the metrics are.
func serveShare(ctx context.Context, ln net.Listener, srv http.Handler, admin string, out io.Writer, started func(metricsAt string), cs ...prometheus.Collector) error {
	reg := prometheus.NewRegistry()
	reg.MustRegister(collectors.NewGoCollector(), collectors.NewProcessCollector(collectors.ProcessCollectorOpts{}))
	reg.MustRegister(cs...)
	metricsHandler := promhttp.HandlerFor(reg, promhttp.HandlerOpts{})
	ln = netguard.LimitListener(ln, netguard.MaxInbound)
	shareHandler := srv
	metricsAt := "http://" + ln.Addr().String() + "/metrics"
	errc := make(chan error, 2)
	if adminAddr := adminAddress(admin, ln.Addr().(*net.TCPAddr)); adminAddr == "" {
		mux := http.NewServeMux()
		mux.Handle("/metrics", metricsHandler)
		mux.Handle("/", srv)
		shareHandler = mux
	} else {
		aln, err := net.Listen("tcp", adminAddr)
		if err != nil {
			ln.Close()
			return fmt.Errorf("cannot listen on %s for metrics: %w; choose another --admin", adminAddr, err)
		}
		defer aln.Close()
		mux := http.NewServeMux()
		mux.Handle("GET /metrics", metricsHandler)
		defer serveOn(aln, mux, errc)()
		metricsAt = "http://" + aln.Addr().String() + "/metrics"
	}
	started(metricsAt)
	var onShutdown []func()
	if s, ok := srv.(interface{ CloseStreams() }); ok {
		onShutdown = append(onShutdown, s.CloseStreams)
	}
	stop := serveOn(ln, shareHandler, errc, onShutdown...)
	select {
	case err := <-errc:
		stop()
		return err
	case <-ctx.Done():
	}
	stop()
	fmt.Fprintln(out, "stopped")
	return nil
}
