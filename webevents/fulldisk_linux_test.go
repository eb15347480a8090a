package webevents_test

import (
	"bufio"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/cocrawl/cocrawl/internal/testfs"
)

// Issue 18, item 10: a store on a small tmpfs that fills up while it is
// written refuses writes with ErrNoSpace instead of dying of SIGBUS in a
// memory-mapped file, and takes writes again once space is freed. It needs
// root (to mount the tmpfs) and is skipped otherwise and under -short.
func TestFullDiskIsAnError(t *testing.T) {
	mnt := testfs.Tmpfs(t, "1g")
	dir := filepath.Join(mnt, "db")
	cmd := exec.Command(os.Args[0], "-test.run=^$")
	cmd.Env = append(os.Environ(), fullDiskEnv+"="+dir)
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	var stderr strings.Builder
	cmd.Stderr = &stderr
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	defer cmd.Process.Kill()
	lines := make(chan string, 1024)
	go func() {
		defer close(lines)
		sc := bufio.NewScanner(stdout)
		for sc.Scan() {
			lines <- sc.Text()
		}
	}()
	await := func(what string, ok func(string) bool) {
		t.Helper()
		deadline := time.After(60 * time.Second)
		for {
			select {
			case l, open := <-lines:
				if !open {
					_ = cmd.Wait()
					t.Fatalf("the writer died waiting for %s: %s", what, stderr.String())
				}
				if strings.HasPrefix(l, "error") {
					t.Fatalf("writer: %s", l)
				}
				if ok(l) {
					return
				}
			case <-deadline:
				t.Fatalf("no %s within 60 s", what)
			}
		}
	}
	await("a first write", func(l string) bool { return strings.HasPrefix(l, "ok") })
	free := testfs.Fill(t, mnt, 40<<20) // the disk fills around the running writer
	await("a write refused for want of space", func(l string) bool { return l == "refused" })
	free()
	await("writes taken again", func(l string) bool { return strings.HasPrefix(l, "ok") })
}
