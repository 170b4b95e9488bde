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

	waits     Busy // time in Wait and Accept, those waiting now included
	throttled atomic.Uint64
}

// NewLimiter returns a token bucket of qps requests per second and burst.
func NewLimiter(qps float64, burst int) *Limiter {
	return &Limiter{RateLimiter: flowcontrol.NewTokenBucketRateLimiter(float32(qps), burst), qps: qps, burst: burst}
}

// Wait takes a token, waiting for one until ctx is done. A wait refused
// (the token due after ctx's deadline: client-go refuses at once) is no
// throttled request, however long the refusal took on a loaded machine.
func (l *Limiter) Wait(ctx context.Context) error {
	start, end := time.Now(), l.waits.Start()
	err := l.RateLimiter.Wait(ctx)
	l.record(start, end, err == nil)
	return err
}

// Accept takes a token, waiting for one as long as it takes.
func (l *Limiter) Accept() {
	start, end := time.Now(), l.waits.Start()
	l.RateLimiter.Accept()
	l.record(start, end, true)
}

func (l *Limiter) record(start time.Time, end func(), granted bool) {
	end()
	if granted && time.Since(start) >= throttledAfter {
		l.throttled.Add(1)
	}
}

// LimiterStats are a Limiter's counts since it was made.
type LimiterStats struct {
	// Waited is the time requests spent waiting for a token, summed over
	// requests (several waiting at once count several times), those
	// waiting now included.
	Waited time.Duration
	// Throttled is the number of requests that had to wait.
	Throttled uint64
}

// Stats returns the Limiter's counts; a nil Limiter (no limit) has none.
func (l *Limiter) Stats() LimiterStats {
	if l == nil {
		return LimiterStats{}
	}
	waited, _ := l.waits.Load(time.Now())
	return LimiterStats{Waited: waited, Throttled: l.throttled.Load()}
}

// Limits returns the flags' values the Limiter was made from; zero for a
// nil Limiter (no limit).
func (l *Limiter) Limits() (qps float64, burst int) {
	if l == nil {
		return 0, 0
	}
	return l.qps, l.burst
}
