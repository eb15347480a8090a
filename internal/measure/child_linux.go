package measure

import (
	"os/exec"
	"syscall"
)

// dieWithParent has the kernel stop the web's process when this one
// dies, however it dies (killed by a timeout, say): a web left behind
// holds its thousands of ports and gigabytes.
func dieWithParent(cmd *exec.Cmd) {
	cmd.SysProcAttr = &syscall.SysProcAttr{Pdeathsig: syscall.SIGTERM}
}
