package e2e

import (
	"flag"
	"time"
)

// StartBudget is how long a test binary may spend building and starting
// servers before its tests run: its go test -timeout less tests, what the
// tests themselves need (at least a minute), or 45 minutes without a
// timeout. A cold build cut short by it then ends with a clear message
// rather than the goroutine dump of a test timeout.
func StartBudget(tests time.Duration) time.Duration {
	timeout := 45*time.Minute + tests
	if f := flag.Lookup("test.timeout"); f != nil {
		if g, ok := f.Value.(flag.Getter); ok {
			if d, ok := g.Get().(time.Duration); ok && d > 0 {
				timeout = d
			}
		}
	}
	return max(timeout-tests, time.Minute)
}
