// Package loglimit is the token bucket that bounds error lines: the
// otelqueue Runner's "Reconciler error" lines.
package loglimit

import (
	"sync"
	"time"

	"k8s.io/utils/clock"
)

// Limiter lets burst lines through at once, then one every interval, and
// counts the lines it refuses. It is safe for concurrent use.
type Limiter struct {
	clock    clock.PassiveClock
	burst    int
	interval time.Duration // 0: no limit

	mu         sync.Mutex
	tokens     int
	last       time.Time // when tokens were last refilled
	suppressed int
}

// New returns a Limiter with a full bucket; an interval of 0 (or less)
// limits nothing.
func New(c clock.PassiveClock, burst int, interval time.Duration) *Limiter {
	return &Limiter{clock: c, burst: burst, interval: interval, tokens: burst, last: c.Now()}
}

// Allow reports whether a line may be logged now and, if so, how many were
// suppressed since the previous one.
func (l *Limiter) Allow() (ok bool, suppressed int) {
	if l.interval <= 0 {
		return true, 0
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	if now := l.clock.Now(); l.tokens < l.burst {
		if n := int(now.Sub(l.last) / l.interval); n > 0 {
			l.tokens = min(l.burst, l.tokens+n)
			l.last = l.last.Add(time.Duration(n) * l.interval)
		}
	} else {
		l.last = now
	}
	if l.tokens == 0 {
		l.suppressed++
		return false, 0
	}
	l.tokens--
	suppressed, l.suppressed = l.suppressed, 0
	return true, suppressed
}
