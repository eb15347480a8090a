package webevents

import "golang.org/x/sys/unix"

// freeBytes returns the bytes of dir's filesystem an unprivileged writer
// may still use.
func freeBytes(dir string) (uint64, error) {
	var st unix.Statfs_t
	if err := unix.Statfs(dir, &st); err != nil {
		return 0, err
	}
	return uint64(max(st.F_bavail, 0)) * uint64(st.F_bsize), nil
}
