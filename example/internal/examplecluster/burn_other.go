//go:build !linux

package examplecluster

import "time"

// threadCPU reads no thread CPU clock here: BurnCPU spins on wall time.
func threadCPU() (time.Duration, bool) { return 0, false }
