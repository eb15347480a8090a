//go:build unix

package crawl

import "syscall"

// openFileLimit is the process's limit on open files (Go raises the soft
// limit to the hard one at start), 0 when it cannot be read.
func openFileLimit() int {
	var rl syscall.Rlimit
	if err := syscall.Getrlimit(syscall.RLIMIT_NOFILE, &rl); err != nil {
		return 0
	}
	return int(min(rl.Cur, 1<<30))
}
