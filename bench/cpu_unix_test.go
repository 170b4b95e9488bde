//go:build unix

package bench

import (
	"syscall"
	"time"
)

// processCPU returns the CPU time the whole process has used so far: every
// thread, so the queues' own goroutines (client-go's waiting loop,
// controller-runtime's handlers) and the garbage collector count too.
func processCPU() (time.Duration, bool) {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		return 0, false
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano()), true
}
