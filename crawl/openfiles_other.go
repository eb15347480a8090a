//go:build !unix

package crawl

// openFileLimit is 0 where the system has no open-file limit to read.
func openFileLimit() int { return 0 }
