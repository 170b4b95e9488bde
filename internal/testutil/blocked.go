package testutil

import (
	"fmt"
	"runtime"
	"strings"
	"testing"
)

// Goroutine states, as a goroutine dump shows them ("goroutine 7 [select]:"),
// for BlockedIn and WaitBlocked.
const (
	// AnyBlocked is any state but running and runnable.
	AnyBlocked = ""
	// CondWait is a goroutine parked in sync.Cond.Wait, such as a
	// scheduler's Get with no key ready.
	CondWait = "sync.Cond.Wait"
)

// BlockedIn counts the goroutines blocked in state (as a goroutine dump
// shows it, such as "select", "sync.Mutex.Lock" or CondWait; AnyBlocked for
// any) that have a function called fn in their stack: a frame "pkg.fn(" or
// "(*T[...]).fn(".
func BlockedIn(fn, state string) int {
	buf := make([]byte, 1<<16)
	for {
		n := runtime.Stack(buf, true)
		if n < len(buf) {
			buf = buf[:n]
			break
		}
		buf = make([]byte, 2*len(buf))
	}
	count := 0
	for _, g := range strings.Split(string(buf), "\n\n") {
		header, _, _ := strings.Cut(g, "\n")
		if !strings.Contains(g, "."+fn+"(") {
			continue
		}
		if state == AnyBlocked {
			if !strings.Contains(header, "[running") && !strings.Contains(header, "[runnable") {
				count++
			}
		} else if strings.Contains(header, "["+state) {
			count++
		}
	}
	return count
}

// WaitBlocked waits until at least n goroutines are blocked in state with fn
// in their stack (see BlockedIn), so that a test acts on a goroutine that
// really waits rather than on one that has not got there yet. It fails the
// test, saying what it awaited, after Timeout.
func WaitBlocked(t testing.TB, fn, state string, n int) {
	t.Helper()
	what := "any blocked state"
	if state != AnyBlocked {
		what = "state " + state
	}
	WaitFor(t, fmt.Sprintf("%d goroutine(s) blocked in %s (%s)", n, fn, what), func() bool {
		return BlockedIn(fn, state) >= n
	})
}
