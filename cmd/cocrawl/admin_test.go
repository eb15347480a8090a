package main

import (
	"io"
	"net"
	"net/http"
	"strings"
	"testing"
	"time"
)

// Issue 18, item 15: the dashboard, API and metrics are on their own
// listener when asked (and by default whenever --listen is not loopback);
// the share listener serves only what peers need, and the admin one
// refuses host names (DNS rebinding).
func TestAdminListener(t *testing.T) {
	addrs := freePorts(t, 2)
	share, admin := addrs[0], addrs[1]
	stop := runPeer(t, "--data", t.TempDir(), "--listen", share, "--admin", admin, "--seed", "http://127.0.0.1:9/",
		"--allow-private", "--no-p2p", "--status-every", "0", "--log-level", "warn")
	defer stop()
	get := func(addr, path, host string) (int, string) {
		req, _ := http.NewRequest(http.MethodGet, "http://"+addr+path, nil)
		if host != "" {
			req.Host = host
		}
		var resp *http.Response
		var err error
		for range 100 { // the peer may still be starting
			if resp, err = http.DefaultClient.Do(req); err == nil {
				break
			}
			time.Sleep(50 * time.Millisecond)
		}
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		b, _ := io.ReadAll(resp.Body)
		return resp.StatusCode, string(b)
	}
	if code, body := get(share, "/robots.shr", ""); code != 200 || !strings.Contains(body, "crawler:") {
		t.Errorf("share listener, robots.shr: %d", code)
	}
	for _, path := range []string{"/api/status", "/metrics", "/api/peers"} {
		if code, _ := get(share, path, ""); code == 200 {
			t.Errorf("share listener serves %s", path)
		}
		if code, _ := get(admin, path, ""); code != 200 {
			t.Errorf("admin listener, %s: %d", path, code)
		}
	}
	if code, _ := get(admin, "/api/status", "rebind.attacker.example"); code != http.StatusForbidden {
		t.Errorf("admin listener answered a foreign Host with %d", code)
	}
	if code, _ := get(admin, "/api/status", "localhost:1"); code != 200 {
		t.Errorf("admin listener refused localhost: %d", code)
	}
}

func TestAdminAddressDefaults(t *testing.T) {
	for _, tt := range []struct {
		flag  string
		share string
		want  string
	}{
		{"", "127.0.0.1:8470", ""},
		{"", "[::1]:8470", ""},
		{"", "0.0.0.0:8470", "127.0.0.1:8471"},
		{"", "192.0.2.7:0", "127.0.0.1:0"},
		{"127.0.0.1:9000", "0.0.0.0:8470", "127.0.0.1:9000"},
	} {
		a, err := net.ResolveTCPAddr("tcp", tt.share)
		if err != nil {
			t.Fatal(err)
		}
		if got := adminAddress(tt.flag, a); got != tt.want {
			t.Errorf("adminAddress(%q, %s) = %q, want %q", tt.flag, tt.share, got, tt.want)
		}
	}
}
