//go:build unix

package webevents

import (
	"io/fs"
	"syscall"
)

// diskUsage is the bytes a file takes on disk: Badger preallocates its
// files sparsely, so their length says little.
func diskUsage(info fs.FileInfo) int64 {
	if st, ok := info.Sys().(*syscall.Stat_t); ok {
		return st.Blocks * 512
	}
	return info.Size()
}
