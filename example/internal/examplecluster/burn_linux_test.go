package examplecluster

import (
	"context"
	"syscall"
	"testing"
	"time"
)

// processCPU returns the process's CPU time (user and system).
func processCPU(t *testing.T) time.Duration {
	t.Helper()
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		t.Fatal(err)
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}

// TestBurnCPU checks that BurnCPU costs the process the CPU time asked for
// (measured by the kernel, getrusage), not less, and not much more.
func TestBurnCPU(t *testing.T) {
	if _, ok := threadCPU(); !ok {
		t.Fatal("no thread CPU clock on Linux")
	}
	const d = 200 * time.Millisecond
	before := processCPU(t)
	BurnCPU(context.Background(), d)
	used := processCPU(t) - before
	// The test's other goroutines and the runtime add a little.
	if used < d || used > 2*d {
		t.Errorf("BurnCPU(%v) cost the process %v of CPU, want %v to %v", d, used, d, 2*d)
	}
}

// TestBurnCPUCancel checks that a done context ends the burn early, and
// that zero or a negative duration burns nothing.
func TestBurnCPUCancel(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	before := processCPU(t)
	BurnCPU(ctx, time.Hour)
	BurnCPU(context.Background(), 0)
	BurnCPU(context.Background(), -time.Second)
	if used := processCPU(t) - before; used > 100*time.Millisecond {
		t.Errorf("a cancelled BurnCPU of an hour and two of none cost %v of CPU", used)
	}
}
