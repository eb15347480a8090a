package main

import (
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/cocrawl/cocrawl/internal/testfs"
	"github.com/cocrawl/cocrawl/internal/testweb"
)

// Issue 18, item 10, end to end: a crawling peer on a small tmpfs whose
// disk fills while it runs keeps answering its API, shows the store as
// failing instead of dying of SIGBUS, crawls on once space is freed, and
// stops cleanly. Root only (to mount the tmpfs); skipped under -short.
func TestPeerOnAFullDisk(t *testing.T) {
	mnt := testfs.Tmpfs(t, "1g")
	w, err := testweb.Start(testweb.Config{Hosts: 3, PagesPerHost: 200, UpdateRate: 1, Seed: 5})
	if err != nil {
		t.Fatal(err)
	}
	defer w.Close()
	stopWeb := make(chan struct{})
	go w.Run(contextUntil(stopWeb))
	defer close(stopWeb)
	addr := freePorts(t, 1)[0]
	args := []string{"--data", filepath.Join(mnt, "peer"), "--listen", addr, "--allow-private", "--no-p2p",
		"--delay", "5ms", "--revisit-min", "200ms", "--revisit-max", "1s", "--status-every", "0", "--log-level", "warn"}
	for _, s := range w.Seeds() {
		args = append(args, "--seed", s)
	}
	stop := runPeer(t, args...)
	status := func() map[string]any {
		var st map[string]any
		if !getJSON(t, "http://"+addr+"/api/status?history=0", &st) {
			return nil
		}
		return st
	}
	waitUntil := func(what string, cond func(map[string]any) bool) {
		t.Helper()
		deadline := time.Now().Add(30 * time.Second)
		for {
			if st := status(); st != nil && cond(st) {
				return
			}
			if time.Now().After(deadline) {
				t.Fatalf("after 30 s: %s (status %v)", what, status())
			}
			time.Sleep(100 * time.Millisecond)
		}
	}
	num := func(st map[string]any, k string) float64 { f, _ := st[k].(float64); return f }
	waitUntil("polls", func(st map[string]any) bool { return num(st, "polls") > 20 })

	free := testfs.Fill(t, mnt, 2<<20)
	waitUntil("the store shown as failing", func(st map[string]any) bool {
		e, _ := st["store_error"].(string)
		return strings.Contains(e, "disk space")
	})
	free()
	var polls float64
	waitUntil("the store taking writes again", func(st map[string]any) bool {
		polls = num(st, "polls")
		return st["store_error"] == nil || st["store_error"] == ""
	})
	waitUntil("polling going on", func(st map[string]any) bool { return num(st, "polls") > polls+5 })
	if out := stop(); strings.Contains(out, "fatal error") || strings.Contains(out, "SIGBUS") {
		t.Fatalf("the peer crashed:\n%s", out)
	}
}
