package examplecluster

import (
	"context"
	"sync/atomic"
	"time"

	"k8s.io/client-go/util/flowcontrol"
)

// throttledAfter is the wait above which a request counts as throttled.
const throttledAfter = time.Millisecond

// Limiter is client-go's token bucket (flowcontrol.NewTokenBucketRateLimiter,
// what rest.Config's QPS and Burst build) that also counts how long requests
// waited for it, so that the summary can tell a workload held back by the
// client from one held back by the API server.
type Limiter struct {
	flowcontrol.RateLimiter
	qps   float64
	burst int

	waited    atomic.Int64 // nanoseconds, summed over requests
	throttled atomic.Uint64
}

// NewLimiter returns a token bucket of qps requests per second and burst.
func NewLimiter(qps float64, burst int) *Limiter {
	return &Limiter{RateLimiter: flowcontrol.NewTokenBucketRateLimiter(float32(qps), burst), qps: qps, burst: burst}
}

// Wait takes a token, waiting for one until ctx is done.
func (l *Limiter) Wait(ctx context.Context) error {
	start := time.Now()
	err := l.RateLimiter.Wait(ctx)
	l.record(time.Since(start))
	return err
}

// Accept takes a token, waiting for one as long as it takes.
func (l *Limiter) Accept() {
	start := time.Now()
	l.RateLimiter.Accept()
	l.record(time.Since(start))
}

func (l *Limiter) record(d time.Duration) {
	if d >= throttledAfter {
		l.waited.Add(int64(d))
		l.throttled.Add(1)
	}
}

// LimiterStats are a Limiter's counts since it was made.
type LimiterStats struct {
	// Waited is the time requests spent waiting for a token, summed over
	// requests (several waiting at once count several times).
	Waited time.Duration
	// Throttled is the number of requests that had to wait.
	Throttled uint64
}

// Stats returns the Limiter's counts.
func (l *Limiter) Stats() LimiterStats {
	return LimiterStats{Waited: time.Duration(l.waited.Load()), Throttled: l.throttled.Load()}
}

// Limits returns the flags' values the Limiter was made from.
func (l *Limiter) Limits() (qps float64, burst int) { return l.qps, l.burst }
