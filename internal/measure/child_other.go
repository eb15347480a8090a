//go:build !linux

package measure

import "os/exec"

// dieWithParent does nothing where the kernel has no parent-death signal:
// the web's process is stopped when the measurement ends normally.
func dieWithParent(*exec.Cmd) {}
