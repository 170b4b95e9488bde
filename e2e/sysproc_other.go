//go:build !linux

package e2e

import "syscall"

// sysProcAttr puts a server in its own process group. Without Linux's
// Pdeathsig, a test binary that panics leaves its servers running.
func sysProcAttr() *syscall.SysProcAttr {
	return &syscall.SysProcAttr{Setpgid: true}
}
