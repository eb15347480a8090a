package main

import (
	"cmp"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/cocrawl/cocrawl/peer"
)

func cmdPeers(ctx context.Context, args []string, out io.Writer) error {
	fs := newFlags("peers", "peers [--api URL] [--json]")
	api := fs.String("api", "http://127.0.0.1:8470", "base URL of a running peer (its --listen)")
	asJSON := fs.Bool("json", false, "print the table as JSON, as /api/peers returns it")
	if pos, err := parse(fs, args); err != nil {
		return err
	} else if len(pos) > 0 {
		return usagef("unexpected argument %q", pos[0])
	}
	base := strings.TrimSuffix(*api, "/")
	if !strings.HasPrefix(base, "http://") && !strings.HasPrefix(base, "https://") {
		base = "http://" + base
	}
	ctx, cancel := context.WithTimeout(ctx, 10*time.Second)
	defer cancel()
	var table struct {
		Peers []peer.Record `json:"peers"`
	}
	var status peer.Status
	for path, v := range map[string]any{"/api/peers": &table, "/api/status?history=0": &status} {
		if err := getAPI(ctx, base+path, v); err != nil {
			return fmt.Errorf("cannot ask %s: %w; is `cocrawl run` listening there (--api)?", base, err)
		}
	}
	if *asJSON {
		enc := json.NewEncoder(out)
		enc.SetIndent("", "  ")
		return enc.Encode(table)
	}
	printPeersHead(out, status)
	return printPeerTable(out, table.Peers, time.Now())
}

// printPeersHead prints the peer's own lines: who, its freshness measured
// against the model's, how it is reached.
func printPeersHead(out io.Writer, status peer.Status) {
	fmt.Fprintf(out, "%s: %d peers known, %d healthy", status.Crawler, status.PeersKnown, status.PeersHealthy)
	if status.PeerID != "" {
		fmt.Fprintf(out, "; peer ID %s, community %s, %d in its DHT table", status.PeerID, status.Community, status.DHTPeers)
	}
	fmt.Fprintln(out)
	if fr := status.Freshness; fr.Samples > 0 {
		verdict := ""
		if fr.Disagree {
			verdict = ": they disagree, the model's beliefs are wrong"
		}
		fmt.Fprintf(out, "freshness measured %.3f [%.3f, %.3f] from %d samples over %s; the model expects %.3f%s\n",
			fr.Freshness, fr.Low, fr.High, fr.Samples, time.Duration(fr.WindowS*float64(time.Second)).Round(time.Second), fr.Expected, verdict)
	} else {
		fmt.Fprintf(out, "freshness: no samples yet (%d drawn); the model expects %.3f\n", fr.Drawn, fr.Expected)
	}
	if n := status.NAT; n != nil {
		reach := n.Reachability
		if n.Forced {
			reach += " (set by --reachability)"
		}
		relay := "no relay"
		switch {
		case len(n.Relays) > 0:
			relay = "relayed through " + strings.Join(n.Relays, ", ")
		case n.RelayService:
			relay = "serving as a relay"
		}
		fmt.Fprintf(out, "reachability %s, DHT %s, %s; connections %d direct, %d relayed; hole punches %d of %d succeeded\n",
			reach, cmp.Or(n.DHTMode, "off"), relay, n.Direct, n.Relayed, n.HolePunches.Successes, n.HolePunches.Attempts)
	}
}

// printPeerTable prints the peer table, a row per peer.
func printPeerTable(out io.Writer, peers []peer.Record, now time.Time) error {
	tw := tabwriter.NewWriter(out, 2, 4, 2, ' ', 0)
	fmt.Fprintln(tw, "PEER\tFOUND\tHEALTH\tMERGES\tGAINED\tCHECKS OK/FALSE\tLAST MERGE\tNEXT\tCONNECTION\tADDRESSES")
	for _, r := range peers {
		health := "new"
		switch {
		case r.Self:
			health = "itself"
		case !r.Distrusted.IsZero():
			health = fmt.Sprintf("distrusted %s", ago(now, r.Distrusted))
		case r.Consecutive > 0:
			health = fmt.Sprintf("failing x%d: %s", r.Consecutive, shorten(r.LastError, 60))
		case !r.LastSuccess.IsZero():
			health = "healthy"
		}
		addrs := r.URL
		if len(r.P2PAddrs) > 0 {
			addrs = strings.Join(r.P2PAddrs, " ")
		}
		fmt.Fprintf(tw, "%s\t%s\t%s\t%d\t%d\t%d/%d\t%s\t%s\t%s\t%s\n", cmp.Or(r.Crawler, r.URL), r.Source, health, r.Merges, r.Gained,
			r.Confirmed, r.Refuted, ago(now, r.LastSuccess), ago(now, r.NextDue), cmp.Or(r.Connection, "-"), addrs)
	}
	return tw.Flush()
}

func getAPI(ctx context.Context, u string, v any) error {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, u, nil)
	if err != nil {
		return err
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return err
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		return fmt.Errorf("%s answered %s", u, resp.Status)
	}
	return json.NewDecoder(io.LimitReader(resp.Body, 64<<20)).Decode(v)
}

func ago(now, t time.Time) string {
	if t.IsZero() {
		return "-"
	}
	d := now.Sub(t).Round(time.Second)
	if d < 0 {
		return "in " + (-d).String()
	}
	return d.String() + " ago"
}

func shorten(s string, n int) string {
	if len(s) <= n {
		return s
	}
	return s[:n] + "..."
}
