package examplecluster

import (
	"context"
	"crypto/sha256"
	"runtime"
	"time"
)

// MaxReconcileCPU is the largest -reconcile-cpu accepted.
const MaxReconcileCPU = 10 * time.Second

// burnChunk is the data hashed between two reads of the thread's CPU clock:
// about 20 µs of work on these machines.
const burnChunk = 16 << 10

// BurnCPU spends d of CPU time in the calling goroutine, hashing, as a
// CPU-heavy reconcile (a diff, a template, a large object) does: d is
// measured on the thread's CPU clock, with the goroutine locked to its
// thread, so that it costs d of CPU however long it takes: under a CPU
// limit or beside other busy goroutines it takes longer than d, which is
// what -reconcile-cpu lets a user provoke. It returns early when ctx is
// done. Where no thread CPU clock can be read, it spins for d of wall
// time.
func BurnCPU(ctx context.Context, d time.Duration) {
	if d <= 0 {
		return
	}
	runtime.LockOSThread()
	defer runtime.UnlockOSThread()
	start, ok := threadCPU()
	wallStart := time.Now()
	var buf [burnChunk]byte
	sum := sha256.Sum256(nil)
	for i := 0; ; i++ {
		copy(buf[:], sum[:])
		sum = sha256.Sum256(buf[:])
		if i%16 == 0 && ctx.Err() != nil {
			return
		}
		if ok {
			if now, _ := threadCPU(); now-start >= d {
				return
			}
		} else if time.Since(wallStart) >= d {
			return
		}
	}
}
