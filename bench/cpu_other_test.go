//go:build !unix

package bench

import "time"

// processCPU is not measured here: cpu-ns/op is not reported.
func processCPU() (time.Duration, bool) { return 0, false }
