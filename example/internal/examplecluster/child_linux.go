package examplecluster

import (
	"os/exec"
	"syscall"
)

// setPdeathsig makes the kernel kill the child when the thread that
// started it ends, should its parent die without closing its input.
func setPdeathsig(cmd *exec.Cmd) {
	cmd.SysProcAttr = &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL}
}
