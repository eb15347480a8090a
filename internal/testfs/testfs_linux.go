package testfs

import (
	"os"
	"os/exec"
	"path/filepath"
	"syscall"
	"testing"
)

// Tmpfs mounts a tmpfs of size (as mount's size=, "1g") in a temporary
// folder and unmounts it when the test ends. It skips the test under
// -short, without root, or when the mount fails.
func Tmpfs(t testing.TB, size string) string {
	t.Helper()
	if testing.Short() || os.Geteuid() != 0 {
		t.Skip("needs root to mount a tmpfs; not under -short")
	}
	mnt := t.TempDir()
	if out, err := exec.Command("mount", "-t", "tmpfs", "-o", "size="+size, "tmpfs", mnt).CombinedOutput(); err != nil {
		t.Skipf("cannot mount a tmpfs: %v %s", err, out)
	}
	t.Cleanup(func() { _ = exec.Command("umount", "-l", mnt).Run() })
	return mnt
}

// Fill writes a file in dir until leave bytes are free, and returns a
// function that removes it.
func Fill(t testing.TB, dir string, leave int64) (free func()) {
	t.Helper()
	path := filepath.Join(dir, "filler")
	f, err := os.Create(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	var st syscall.Statfs_t
	if err := syscall.Statfs(dir, &st); err != nil {
		t.Fatal(err)
	}
	buf := make([]byte, 1<<20)
	for n := (int64(st.Bavail)*st.Bsize - leave) >> 20; n > 0; n-- {
		if _, err := f.Write(buf); err != nil {
			break // full already: the store took some meanwhile
		}
	}
	return func() { os.Remove(path) }
}
