package kubeclient

import "time"

// SetStaleAfter makes watch streams stale after d, for the tests, and
// returns the function that restores StaleAfter.
func SetStaleAfter(d time.Duration) (restore func()) {
	staleAfter = d
	return func() { staleAfter = StaleAfter }
}
