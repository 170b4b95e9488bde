package e2e

import "syscall"

// sysProcAttr puts a server in its own process group (a terminal's Ctrl-C
// reaches only the test, which then stops it) and has the kernel kill it when
// the test binary dies, so that a panic or a `go test` timeout leaves no
// server behind.
func sysProcAttr() *syscall.SysProcAttr {
	return &syscall.SysProcAttr{Setpgid: true, Pdeathsig: syscall.SIGKILL}
}
