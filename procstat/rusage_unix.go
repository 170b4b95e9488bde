//go:build unix

package procstat

import (
	"syscall"
	"time"
)

// cpuTimes returns the user and system CPU time of the process (all its
// threads; not its children), from getrusage(RUSAGE_SELF).
func cpuTimes() (user, system time.Duration, ok bool) {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		return 0, 0, false
	}
	return time.Duration(ru.Utime.Nano()), time.Duration(ru.Stime.Nano()), true
}
