//go:build unix && !linux

package webevents

// fallocate is not available here: the free-space check alone guards.
func fallocate(string, int64) error { return nil }
