package testutil

import (
	"runtime"
	"testing"
	"time"
)

// Timeout bounds every wait of this package. It guards against hangs and is
// no measurement: a test that passes waits far less. It is generous because
// the tests run with -race on loaded machines, where a goroutine may not be
// scheduled for seconds, and it is well below go test's default -timeout
// (10 minutes), so a hang fails with the message of the wait rather than a
// goroutine dump.
const Timeout = 30 * time.Second

// WaitFor polls cond until it holds, failing the test with "timed out ...
// waiting for <what>" after Timeout of real time. It is for waiting on other
// goroutines (a worker, a delay loop after a fake clock step, client-go's
// informers); it never waits for time to pass.
func WaitFor(t testing.TB, what string, cond func() bool) {
	t.Helper()
	waitFor(t, Timeout, what, cond)
}

// pollMin and pollMax bound the pause between two polls: short at first, for
// a goroutine that is about to get there, longer after, so that a slow wait
// (costly conditions, such as a goroutine dump) leaves the CPU to the
// goroutines awaited.
const (
	pollMin = 50 * time.Microsecond
	pollMax = time.Millisecond
)

func waitFor(t testing.TB, timeout time.Duration, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(timeout)
	pause := pollMin
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("timed out after %v waiting for %s", timeout, what)
		}
		runtime.Gosched()
		time.Sleep(pause)
		pause = min(2*pause, pollMax)
	}
}

// Receive waits for a value from ch and returns it, failing the test with
// "timed out ... waiting for <what>" after Timeout of real time. A closed
// channel gives its zero value at once, as a receive does.
func Receive[T any](t testing.TB, ch <-chan T, what string) T {
	t.Helper()
	return receive(t, Timeout, ch, what)
}

func receive[T any](t testing.TB, timeout time.Duration, ch <-chan T, what string) T {
	t.Helper()
	timer := time.NewTimer(timeout)
	defer timer.Stop()
	select {
	case v := <-ch:
		return v
	case <-timer.C:
		t.Fatalf("timed out after %v waiting for %s", timeout, what)
		var zero T
		return zero
	}
}
