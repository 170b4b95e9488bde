package kubeclient

import "time"

// SetStaleAfter makes watch streams stale after d, for the tests, and
// returns the function that restores defaultStaleAfter.
func SetStaleAfter(d time.Duration) (restore func()) {
	staleAfter = d
	return func() { staleAfter = defaultStaleAfter }
}

// WaitSpanThreshold is the shortest wait that becomes a span, for the tests.
const WaitSpanThreshold = waitSpanThreshold
