//go:build !unix && !windows

package procstat

import "time"

// cpuTimes reports the CPU time unknown: the platform (js, wasip1, plan9)
// has no getrusage in package syscall.
func cpuTimes() (user, system time.Duration, ok bool) { return 0, 0, false }
