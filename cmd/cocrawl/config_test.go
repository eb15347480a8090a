package main

import (
	"context"
	"os"
	"path/filepath"
	"reflect"
	"testing"
	"time"
)

func contextUntil(stop <-chan struct{}) context.Context {
	ctx, cancel := context.WithCancel(context.Background())
	go func() { <-stop; cancel() }()
	return ctx
}

// Flags beat the environment, which beats the file, which beats defaults.
func TestSettingsPrecedence(t *testing.T) {
	path := filepath.Join(t.TempDir(), "peer.toml")
	err := os.WriteFile(path, []byte(`
mode = "mirror"
seed = ["http://a.example/", "http://b.example/"]
[crawl]
delay = "3s"
workers = 3
revisit_min = "2h"
`), 0o600)
	if err != nil {
		t.Fatal(err)
	}
	t.Setenv("COCRAWL_WORKERS", "5")
	t.Setenv("COCRAWL_REVISIT_MIN", "90m")
	t.Setenv("COCRAWL_PEER", "http://p.example/robots.shr http://q.example/robots.shr")

	fs := newFlags("t", "t")
	mode := fs.String("mode", "", "")
	var seeds, peers multiFlag
	fs.Var(&seeds, "seed", "")
	fs.Var(&peers, "peer", "")
	cf := addCrawlFlags(fs)
	if _, err := parse(fs, []string{"--config", path, "--revisit-min", "3h"}); err != nil {
		t.Fatal(err)
	}
	s, err := cf.settings()
	if err != nil {
		t.Fatal(err)
	}
	if *mode != "mirror" || s.Delay.Duration != 3*time.Second || s.Workers != 5 || s.RevisitMin.Duration != 3*time.Hour {
		t.Fatalf("mode %q, settings %+v", *mode, s)
	}
	if !reflect.DeepEqual([]string(seeds), []string{"http://a.example/", "http://b.example/"}) ||
		!reflect.DeepEqual([]string(peers), []string{"http://p.example/robots.shr", "http://q.example/robots.shr"}) {
		t.Fatalf("seeds %v, peers %v", seeds, peers)
	}
}

func TestSettingsErrors(t *testing.T) {
	dir := t.TempDir()
	for name, body := range map[string]string{
		"unknown": "frobnicate = 1\n",
		"bad":     "workers = \"many\"\n",
		"syntax":  "delay = \n",
	} {
		path := filepath.Join(dir, name+".toml")
		os.WriteFile(path, []byte(body), 0o600)
		fs := newFlags("t", "t")
		cf := addCrawlFlags(fs)
		if _, err := parse(fs, []string{"--config", path}); err != nil {
			t.Fatal(err)
		}
		if _, err := cf.settings(); err == nil {
			t.Errorf("%s: %q was accepted", name, body)
		}
	}
	t.Setenv("COCRAWL_DELAY", "soon")
	fs := newFlags("t", "t")
	cf := addCrawlFlags(fs)
	parse(fs, nil)
	if _, err := cf.settings(); err == nil {
		t.Error("COCRAWL_DELAY=soon was accepted")
	}
}

// The collector's headroom is on by default (a quarter of the live heap),
// can be turned off with 0 and is refused when negative.
func TestHeapHeadroomSetting(t *testing.T) {
	for _, c := range []struct {
		args []string
		want float64
		ok   bool
	}{
		{nil, 0.25, true},
		{[]string{"--heap-headroom", "0"}, 0, true},
		{[]string{"--heap-headroom", "0.5"}, 0.5, true},
		{[]string{"--heap-headroom", "-1"}, 0, false},
	} {
		fs := newFlags("t", "t")
		cf := addCrawlFlags(fs)
		if _, err := parse(fs, c.args); err != nil {
			t.Fatal(err)
		}
		s, err := cf.settings()
		if (err == nil) != c.ok || (c.ok && s.HeapHeadroom != c.want) {
			t.Errorf("%v: headroom %v, err %v; want %v (ok %v)", c.args, s.HeapHeadroom, err, c.want, c.ok)
		}
	}
}
