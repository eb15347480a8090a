package main

import (
	"bytes"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

// What a new user tries first: help that can be paged, a version, errors
// that say the fix, and no empty store left by a command that failed.
func TestNewUser(t *testing.T) {
	t.Run("help on standard output", func(t *testing.T) {
		for _, args := range [][]string{{"help"}, {"run", "-h"}, {"merge", "-h"}} {
			cmd := exec.Command(binary, args...)
			var stdout, stderr bytes.Buffer
			cmd.Stdout, cmd.Stderr = &stdout, &stderr
			if err := cmd.Run(); err != nil {
				t.Errorf("cocrawl %v: %v", args, err)
			}
			if !strings.Contains(stdout.String(), "usage") || stderr.Len() != 0 {
				t.Errorf("cocrawl %v: %d bytes of help on stdout, %q on stderr", args, stdout.Len(), stderr.String())
			}
		}
	})
	t.Run("version", func(t *testing.T) {
		out := mustRun(t, "version")
		if !strings.HasPrefix(out, "cocrawl ") || !strings.Contains(out, "protocol 1.1") || !strings.Contains(out, "go1.") {
			t.Errorf("version: %q", out)
		}
	})
	t.Run("seed without scheme", func(t *testing.T) {
		out, code := cocrawl(t, "crawl", "--seed", "example.org", "--data", t.TempDir())
		if code != 2 || !strings.Contains(out, "http://example.org") || strings.Count(out, "crawl:") != 1 {
			t.Errorf("exit %d, %q: want one usage line that suggests http://example.org and says crawl: once", code, out)
		}
	})
	noStore := func(t *testing.T, data string) {
		t.Helper()
		if _, err := os.Stat(filepath.Join(data, "db")); err == nil {
			t.Errorf("a failed command left a store in %s", data)
		}
	}
	t.Run("run without seeds", func(t *testing.T) {
		data := filepath.Join(t.TempDir(), "d")
		if _, code := cocrawl(t, "run", "--data", data, "--listen", "127.0.0.1:0"); code != 2 {
			t.Errorf("exit %d, want 2", code)
		}
		noStore(t, data)
	})
	t.Run("failed merge", func(t *testing.T) {
		data := filepath.Join(t.TempDir(), "d")
		if _, code := cocrawl(t, "merge", "http://127.0.0.1:9/robots.shr", "--data", data, "--allow-private"); code != 1 {
			t.Errorf("exit %d, want 1", code)
		}
		noStore(t, data)
		if _, err := os.Stat(data); err == nil {
			t.Errorf("the failed merge left its data folder %s", data)
		}
	})
	t.Run("share of no store", func(t *testing.T) {
		data := filepath.Join(t.TempDir(), "missing")
		out, code := cocrawl(t, "share", "--data", data, "--listen", "127.0.0.1:0")
		if code != 2 || !strings.Contains(out, "no store") {
			t.Errorf("exit %d, %q: want a usage error saying there is no store", code, out)
		}
		noStore(t, data)
	})
	t.Run("store in use", func(t *testing.T) {
		data := t.TempDir()
		st, err := openStore(data, logger())
		if err != nil {
			t.Fatal(err)
		}
		defer st.Close()
		out, code := cocrawl(t, "events", "--data", data)
		if code != 1 || !strings.Contains(out, "in use by another cocrawl process") {
			t.Errorf("exit %d, %q: want the store-in-use message", code, out)
		}
	})
}
