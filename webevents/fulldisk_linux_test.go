package webevents_test

import (
	"bufio"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"
)

// Issue 18, item 10: a store on a small tmpfs that fills up while it is
// written refuses writes with ErrNoSpace instead of dying of SIGBUS in a
// memory-mapped file, and takes writes again once space is freed. It needs
// root (to mount the tmpfs) and is skipped otherwise and under -short.
func TestFullDiskIsAnError(t *testing.T) {
	if testing.Short() || os.Geteuid() != 0 {
		t.Skip("needs root to mount a tmpfs; not under -short")
	}
	mnt := t.TempDir()
	if out, err := exec.Command("mount", "-t", "tmpfs", "-o", "size=1g", "tmpfs", mnt).CombinedOutput(); err != nil {
		t.Skipf("cannot mount a tmpfs: %v %s", err, out)
	}
	defer exec.Command("umount", "-l", mnt).Run()
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
	// Fill the disk around the running writer.
	filler := filepath.Join(mnt, "filler")
	f, err := os.Create(filler)
	if err != nil {
		t.Fatal(err)
	}
	var st syscall.Statfs_t
	if err := syscall.Statfs(mnt, &st); err != nil {
		t.Fatal(err)
	}
	leave := int64(40 << 20)
	if free := int64(st.Bavail) * st.Bsize; free > leave {
		buf := make([]byte, 1<<20)
		for n := (free - leave) >> 20; n > 0; n-- {
			if _, err := f.Write(buf); err != nil {
				break
			}
		}
	}
	f.Close()
	await("a write refused for want of space", func(l string) bool { return l == "refused" })
	os.Remove(filler)
	await("writes taken again", func(l string) bool { return strings.HasPrefix(l, "ok") })
}
