//go:build linux || darwin || freebsd || dragonfly

package webevents

import "golang.org/x/sys/unix"

// freeBytes returns the bytes of dir's filesystem an unprivileged writer
// may still use. The fields' types differ between systems (FreeBSD's
// count of available blocks is signed, negative past the reserve).
func freeBytes(dir string) (uint64, error) {
	var st unix.Statfs_t
	if err := unix.Statfs(dir, &st); err != nil {
		return 0, err
	}
	return uint64(max(int64(st.Bavail), 0)) * uint64(st.Bsize), nil
}
