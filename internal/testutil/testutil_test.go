package testutil

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"go.opentelemetry.io/otel"
)

func TestMain(m *testing.M) {
	RecordOTelErrors()
	Main(m)
}

// fakeTB records what a helper reports; its Fatalf ends the goroutine, as
// testing's does.
type fakeTB struct {
	testing.TB
	mu       sync.Mutex
	failures []string
	cleanups []func()
}

func (f *fakeTB) Helper() {}

func (f *fakeTB) Errorf(format string, args ...any) {
	f.mu.Lock()
	f.failures = append(f.failures, fmt.Sprintf(format, args...))
	f.mu.Unlock()
}

func (f *fakeTB) Fatalf(format string, args ...any) {
	f.Errorf(format, args...)
	runtime.Goexit()
}

func (f *fakeTB) Cleanup(fn func()) { f.cleanups = append(f.cleanups, fn) }

// run calls fn with a fakeTB in a goroutine of its own (for Fatalf), then
// the cleanups fn registered, and returns what was reported.
func run(fn func(tb *fakeTB)) []string {
	tb := &fakeTB{}
	done := make(chan struct{})
	go func() {
		defer close(done)
		fn(tb)
	}()
	<-done
	for _, c := range tb.cleanups {
		c()
	}
	return tb.failures
}

func wantFailure(t *testing.T, got []string, substr string) {
	t.Helper()
	if len(got) != 1 || !strings.Contains(got[0], substr) {
		t.Errorf("failures %q, want one saying %q", got, substr)
	}
}

func TestWaitForSaysWhatItAwaited(t *testing.T) {
	got := run(func(tb *fakeTB) {
		waitFor(tb, time.Millisecond, "the answer", func() bool { return false })
	})
	wantFailure(t, got, "waiting for the answer")
}

func TestWaitForReturnsOnceCondHolds(t *testing.T) {
	var polls atomic.Int32
	WaitFor(t, "the third poll", func() bool { return polls.Add(1) == 3 })
	if n := polls.Load(); n != 3 {
		t.Errorf("cond called %d times, want 3", n)
	}
}

func TestReceive(t *testing.T) {
	ch := make(chan int, 1)
	ch <- 42
	if v := Receive(t, ch, "the value"); v != 42 {
		t.Errorf("Receive = %d, want 42", v)
	}
	got := run(func(tb *fakeTB) {
		receive(tb, time.Millisecond, make(chan int), "a value that never comes")
	})
	wantFailure(t, got, "waiting for a value that never comes")
}

//go:noinline
func parkOnChannel(ch <-chan struct{}) { <-ch }

//go:noinline
func parkInSelect(ch <-chan struct{}, other <-chan int) {
	select {
	case <-ch:
	case <-other:
	}
}

func TestBlockedIn(t *testing.T) {
	release := make(chan struct{})
	var wg sync.WaitGroup
	defer wg.Wait()
	defer close(release)
	wg.Go(func() { parkOnChannel(release) })
	wg.Go(func() { parkOnChannel(release) })
	wg.Go(func() { parkInSelect(release, nil) })

	WaitBlocked(t, "parkOnChannel", "chan receive", 2)
	WaitBlocked(t, "parkInSelect", "select", 1)
	if n := BlockedIn("parkOnChannel", AnyBlocked); n != 2 {
		t.Errorf("BlockedIn(parkOnChannel, AnyBlocked) = %d, want 2", n)
	}
	if n := BlockedIn("parkOnChannel", "select"); n != 0 {
		t.Errorf("BlockedIn(parkOnChannel, select) = %d, want 0", n)
	}
	if n := BlockedIn("parkOn", AnyBlocked); n != 0 {
		t.Errorf("BlockedIn(parkOn, AnyBlocked) = %d, want 0: a name matches whole", n)
	}
	if n := BlockedIn("parkInSelect", CondWait); n != 0 {
		t.Errorf("BlockedIn(parkInSelect, CondWait) = %d, want 0", n)
	}
}

func TestOTelErrors(t *testing.T) {
	NoOTelErrors(t)
	errA := errors.New("a")
	otel.Handle(errA)
	if errs := TakeOTelErrors(); len(errs) != 1 || errs[0] != errA {
		t.Errorf("TakeOTelErrors = %v, want [a]", errs)
	}

	got := run(func(tb *fakeTB) {
		NoOTelErrors(tb)
		otel.Handle(errors.New("untaken"))
	})
	wantFailure(t, got, "otel.Handle got [untaken]")
}

func TestRemoteSpanContext(t *testing.T) {
	a, b := RemoteSpanContext(1, true), RemoteSpanContext(2, false)
	if !a.IsValid() || !a.IsRemote() || !a.IsSampled() {
		t.Errorf("RemoteSpanContext(1, true) = %v, want valid, remote, sampled", a)
	}
	if !b.IsValid() || !b.IsRemote() || b.IsSampled() {
		t.Errorf("RemoteSpanContext(2, false) = %v, want valid, remote, not sampled", b)
	}
	if a.TraceID() == b.TraceID() || a.SpanID() == b.SpanID() {
		t.Errorf("RemoteSpanContext(1) and (2) share ids: %v, %v", a, b)
	}
}

// TestGenerated: a stale file fails with the command that regenerates it,
// -update writes it keeping its mode, and then it passes.
func TestGenerated(t *testing.T) {
	path := filepath.Join(t.TempDir(), "gen.sh")
	if err := os.WriteFile(path, []byte("old\n"), 0o755); err != nil {
		t.Fatal(err)
	}
	wantFailure(t, run(func(tb *fakeTB) { Generated(tb, path, []byte("new\n"), false, "make gen") }), "run make gen")
	if got := run(func(tb *fakeTB) { Generated(tb, path, []byte("new\n"), true, "make gen") }); len(got) != 0 {
		t.Fatalf("update: %q", got)
	}
	if st, err := os.Stat(path); err != nil || st.Mode().Perm() != 0o755 {
		t.Errorf("after update: %v, %v; want mode 0755 kept", st.Mode(), err)
	}
	if got := run(func(tb *fakeTB) { Generated(tb, path, []byte("new\n"), false, "make gen") }); len(got) != 0 {
		t.Errorf("after update: %q, want no failure", got)
	}
}
