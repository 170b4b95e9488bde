//go:build windows

package procstat

import (
	"syscall"
	"time"
)

// cpuTimes returns the user and kernel CPU time of the process, from
// GetProcessTimes.
func cpuTimes() (user, system time.Duration, ok bool) {
	h, err := syscall.GetCurrentProcess()
	if err != nil {
		return 0, 0, false
	}
	var creation, exit, kernel, usr syscall.Filetime
	if err := syscall.GetProcessTimes(h, &creation, &exit, &kernel, &usr); err != nil {
		return 0, 0, false
	}
	return filetimeDuration(usr), filetimeDuration(kernel), true
}

// filetimeDuration converts a FILETIME that holds a duration (in units of
// 100 ns), as GetProcessTimes returns the CPU times, to a Duration.
// (Filetime.Nanoseconds is for FILETIMEs that hold a point in time.)
func filetimeDuration(ft syscall.Filetime) time.Duration {
	return time.Duration(uint64(ft.HighDateTime)<<32|uint64(ft.LowDateTime)) * 100
}
