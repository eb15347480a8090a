package webevents

import "golang.org/x/sys/unix"

// freeBytes returns the bytes of dir's filesystem an unprivileged writer
// may still use.
func freeBytes(dir string) (uint64, error) {
	var st unix.Statvfs_t
	if err := unix.Statvfs(dir, &st); err != nil {
		return 0, err
	}
	return st.Bavail * st.Frsize, nil
}
