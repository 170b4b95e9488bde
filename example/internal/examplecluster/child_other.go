//go:build !linux

package examplecluster

import "os/exec"

// setPdeathsig does nothing where the kernel has no parent-death signal:
// the child ends when its input closes, which it does when its parent
// ends.
func setPdeathsig(*exec.Cmd) {}
