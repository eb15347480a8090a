//go:build !unix

package webevents

// newSpaceGuard cannot tell free space on this system: writes are not
// guarded.
func newSpaceGuard(string, uint64) *spaceGuard { return nil }

func (g *spaceGuard) backFiles() error { return nil }
