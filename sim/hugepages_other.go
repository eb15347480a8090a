//go:build !linux

package sim

// adviseHugePages does nothing outside Linux (see hugepages_linux.go).
func adviseHugePages[T any](s []T) error { return nil }
