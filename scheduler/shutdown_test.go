package scheduler

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/otelqueue/otelqueue/internal/testutil"
)

func TestShutDownIgnoresAdds(t *testing.T) {
	s, fc := newFake(t, Config[string]{Name: "test", RateLimiter: testutil.ExpLimiter(time.Second, time.Minute)})
	s.ShutDown()
	if !s.ShuttingDown() {
		t.Fatal("ShuttingDown = false after ShutDown")
	}
	s.Add("a")
	s.AddContext(spanCtx(1), "a")
	s.AddAfter("b", 0)
	s.AddAfter("b", time.Second)
	s.AddAfterContext(spanCtx(1), "b", time.Second)
	s.AddRateLimited("c")
	s.AddRateLimitedContext(spanCtx(1), "c")
	fc.Step(time.Minute)
	if n := s.Len(); n != 0 {
		t.Fatalf("Len = %d, want 0", n)
	}
	if st := s.Stats(); st != (Stats{}) {
		t.Fatalf("Stats = %+v, want zero", st)
	}
	if _, shutdown := s.Get(); !shutdown {
		t.Fatal("Get: shutdown = false")
	}
}

func TestShutDownHandsOutReadyKeys(t *testing.T) {
	s, _ := newFake(t, named())
	s.Add("a")
	s.Add("b")
	s.ShutDown()
	if n := s.Len(); n != 2 {
		t.Fatalf("Len = %d, want 2", n)
	}
	if k, shutdown := s.Get(); k != "a" || shutdown {
		t.Fatalf("Get = %q, %v; want a, false", k, shutdown)
	}
	it, err := s.GetContext(context.Background())
	if err != nil || it.Key != "b" {
		t.Fatalf("GetContext = %q, %v; want b, nil", it.Key, err)
	}
	if k, shutdown := s.Get(); !shutdown || k != "" {
		t.Fatalf("Get = %q, %v; want \"\", true", k, shutdown)
	}
	if _, err := s.GetContext(context.Background()); !errors.Is(err, ErrShutDown) {
		t.Fatalf("GetContext error = %v, want ErrShutDown", err)
	}
	// Even with a done context, shutdown is reported first.
	if _, err := s.GetContext(cancelled); !errors.Is(err, ErrShutDown) {
		t.Fatalf("GetContext(done ctx) error = %v, want ErrShutDown", err)
	}
	s.Done("a")
	s.Done("b")
}

func TestShutDownDropsDelayedKeys(t *testing.T) {
	s, fc := newFake(t, Config[string]{Name: "test", Debounce: time.Second, RateLimiter: testutil.ExpLimiter(time.Second, time.Minute)})
	s.AddAfter("a", time.Second)
	s.AddRateLimited("b")
	s.Add("c") // debounced
	if st := s.Stats(); st.Delayed != 3 {
		t.Fatalf("Delayed = %d, want 3", st.Delayed)
	}
	s.ShutDown()
	if st := s.Stats(); st.Delayed != 0 {
		t.Fatalf("Delayed after ShutDown = %d, want 0", st.Delayed)
	}
	fc.Step(time.Minute)
	if n := s.Len(); n != 0 {
		t.Fatalf("Len = %d, want 0", n)
	}
	if _, shutdown := s.Get(); !shutdown {
		t.Fatal("Get: shutdown = false")
	}
}

func TestShutDownWakesBlockedWorkers(t *testing.T) {
	s, _ := newFake(t, named())
	gotShutdown := make(chan bool)
	gotErr := make(chan error)
	go func() {
		_, shutdown := s.Get()
		gotShutdown <- shutdown
	}()
	go func() {
		_, err := s.GetContext(context.Background())
		gotErr <- err
	}()
	testutil.WaitBlocked(t, "waitReadyLocked", testutil.CondWait, 2)
	s.ShutDown()
	if !testutil.Receive(t, gotShutdown, "Get") {
		t.Error("Get: shutdown = false")
	}
	if err := testutil.Receive(t, gotErr, "GetContext"); !errors.Is(err, ErrShutDown) {
		t.Errorf("GetContext error = %v, want ErrShutDown", err)
	}
}

func TestShutDownTwice(t *testing.T) {
	s, _ := newFake(t, named())
	s.AddAfter("a", time.Second) // starts the delay loop
	s.ShutDown()
	s.ShutDown()
	s.ShutDownWithDrain()
	if !s.ShuttingDown() {
		t.Fatal("ShuttingDown = false")
	}
}

func TestShutDownWithDrainNothingInFlight(t *testing.T) {
	s, _ := newFake(t, named())
	s.Add("a") // ready but not taken: not waited for
	s.ShutDownWithDrain()
	if !s.ShuttingDown() {
		t.Fatal("ShuttingDown = false")
	}
	mustGetKey(t, s, "a")
	s.Done("a")
}

// startDrain calls ShutDownWithDrain in a goroutine and returns a channel
// closed when it returns, once the call has shut the queue down.
func startDrain(t *testing.T, s *Scheduler[string]) <-chan struct{} {
	t.Helper()
	drained := make(chan struct{})
	go func() {
		s.ShutDownWithDrain()
		close(drained)
	}()
	// It waits for the runs in flight (or returned early: the caller
	// checks drained).
	testutil.WaitFor(t, "ShutDownWithDrain to wait or return", func() bool {
		select {
		case <-drained:
			return true
		default:
			return testutil.BlockedIn("ShutDownWithDrain", testutil.CondWait) == 1
		}
	})
	return drained
}

func mustNotBeClosed(t *testing.T, ch <-chan struct{}, what string) {
	t.Helper()
	select {
	case <-ch:
		t.Fatalf("%s returned early", what)
	default:
	}
}

func TestShutDownWithDrainWaitsForDone(t *testing.T) {
	s, _ := newFake(t, named())
	s.Add("a")
	s.Add("b")
	s.Add("c")
	mustGetKey(t, s, "a")
	mustGetKey(t, s, "b")

	drained := startDrain(t, s)
	mustNotBeClosed(t, drained, "ShutDownWithDrain")

	// Ready keys are still handed out while draining, and waited for.
	mustGetKey(t, s, "c")
	s.Done("a")
	s.Add("a") // ignored
	mustNotBeClosed(t, drained, "ShutDownWithDrain")
	s.Done("c")
	mustNotBeClosed(t, drained, "ShutDownWithDrain")
	if _, err := s.GetContext(context.Background()); !errors.Is(err, ErrShutDown) {
		t.Fatalf("GetContext error = %v, want ErrShutDown", err)
	}
	s.Done("b")
	testutil.Receive(t, drained, "ShutDownWithDrain to return after the last Done")
}

func TestShutDownWithDrainHeldRun(t *testing.T) {
	// A key added while processed, before the shutdown, runs once more. As
	// in client-go, the drain waits for runs in flight only: once Done
	// makes the held run ready, nothing is in flight, and ShutDownWithDrain
	// may return before a worker takes it.
	s, _ := newFake(t, named())
	s.Add("a")
	mustGetKey(t, s, "a")
	s.Add("a")
	drained := startDrain(t, s)
	mustNotBeClosed(t, drained, "ShutDownWithDrain")
	s.Done("a")
	it := mustGetKey(t, s, "a")
	s.Done(it.Key)
	testutil.Receive(t, drained, "ShutDownWithDrain")
	if _, err := s.GetContext(context.Background()); !errors.Is(err, ErrShutDown) {
		t.Fatalf("GetContext error = %v, want ErrShutDown", err)
	}
}

func TestShutDownReleasesDrain(t *testing.T) {
	s, _ := newFake(t, named())
	s.Add("a")
	mustGetKey(t, s, "a")
	drained := startDrain(t, s)
	mustNotBeClosed(t, drained, "ShutDownWithDrain")
	s.ShutDown()
	testutil.Receive(t, drained, "ShutDownWithDrain to return after ShutDown")
	s.Done("a") // late Done is harmless
	if st := s.Stats(); st.InFlight != 0 {
		t.Fatalf("InFlight = %d, want 0", st.InFlight)
	}
}

func TestShutDownWithKeysEverywhere(t *testing.T) {
	s, fc := newFake(t, Config[string]{Name: "test", RateLimiter: testutil.ExpLimiter(time.Second, time.Minute)})
	s.Add("inflight")        // in flight, nothing pending
	s.Add("held")            // in flight, added again at once
	s.Add("held-delayed")    // in flight, added again with a delay
	s.Add("held-delay-over") // in flight, added again with a delay that ends before Done
	mustGetKey(t, s, "inflight")
	mustGetKey(t, s, "held")
	mustGetKey(t, s, "held-delayed")
	mustGetKey(t, s, "held-delay-over")
	s.Add("held")
	s.AddAfter("held-delayed", time.Hour)
	s.AddRateLimited("held-delay-over") // 1s
	s.AddAfter("delayed", time.Second)
	s.Add("queued")
	want := Stats{Depth: 1, Delayed: 1, Held: 3, InFlight: 4, Adds: 9, Retries: 3, DelayedAdds: 2}
	if got := s.Stats(); got != want {
		t.Fatalf("before: Stats = %+v, want %+v", got, want)
	}

	s.ShutDown()
	want = Stats{Depth: 1, Held: 3, InFlight: 4, Adds: 9, Retries: 3, DelayedAdds: 2}
	if got := s.Stats(); got != want {
		t.Fatalf("after ShutDown: Stats = %+v, want %+v", got, want)
	}
	fc.Step(time.Second)

	mustGetKey(t, s, "queued")
	if _, ok := tryGet(t, s); ok {
		t.Fatal("a key beyond the queued one was handed out")
	}
	s.Done("held")            // runs once more
	s.Done("held-delayed")    // its delay outlives the queue: dropped
	s.Done("held-delay-over") // its delay is over: runs once more
	s.Done("inflight")
	s.Done("queued")
	for _, want := range []string{"held", "held-delay-over"} {
		mustGetKey(t, s, want)
		s.Done(want)
	}
	if _, err := s.GetContext(context.Background()); !errors.Is(err, ErrShutDown) {
		t.Fatalf("GetContext error = %v, want ErrShutDown", err)
	}
	// Seven runs ended: the four in flight at ShutDown, 1 s each, then
	// queued and the two held runs, at once.
	want = Stats{Adds: 9, Retries: 3, DelayedAdds: 2, Finished: 7, Busy: 4 * time.Second}
	if got := s.Stats(); got != want {
		t.Fatalf("at the end: Stats = %+v, want %+v", got, want)
	}
	fc.Step(time.Hour)
	if n := s.Len(); n != 0 {
		t.Fatalf("Len = %d, want 0", n)
	}
}

// TestStopOnShutDown: with Config.StopOnShutDown, nothing is handed out
// after ShutDown: not the ready keys, nor a held key that becomes ready
// when its run ends, to a worker already waiting or to a later Get; the
// keys stay counted in Len and Stats.
func TestStopOnShutDown(t *testing.T) {
	t.Run("held key and a waiting worker", func(t *testing.T) {
		s := New(Config[string]{Name: "stopping", StopOnShutDown: true})
		s.Add("busy")
		if k, _ := s.Get(); k != "busy" {
			t.Fatalf("Get = %q", k)
		}
		s.Add("busy") // held: pending while in flight
		waiter := make(chan bool, 1)
		go func() {
			_, shutdown := s.Get()
			waiter <- shutdown
		}()
		// The worker waits (nothing is ready) when ShutDown comes; the
		// held key becomes ready right after, before it wakes.
		testutil.WaitBlocked(t, "waitReadyLocked", testutil.CondWait, 1)
		s.ShutDown()
		s.Done("busy") // the held run becomes ready
		select {
		case shutdown := <-waiter:
			if !shutdown {
				t.Error("the waiting worker got a key after ShutDown")
			}
		case <-time.After(10 * time.Second):
			t.Fatal("the waiting worker was not woken by ShutDown")
		}
		if k, shutdown := s.Get(); !shutdown {
			t.Errorf("Get after ShutDown = %q, want shutdown", k)
		}
		if n, st := s.Len(), s.Stats(); n != 1 || st.Depth != 1 || st.InFlight != 0 {
			t.Errorf("Len %d, Stats %+v: want the held key ready, never handed out", n, st)
		}
	})
	t.Run("ready keys", func(t *testing.T) {
		s := New(Config[string]{StopOnShutDown: true})
		s.Add("a")
		s.Add("b")
		s.ShutDown()
		if k, _, shutdown := s.GetWithPriority(); !shutdown {
			t.Errorf("GetWithPriority after ShutDown = %q, want shutdown", k)
		}
		if _, err := s.GetContext(context.Background()); !errors.Is(err, ErrShutDown) {
			t.Errorf("GetContext after ShutDown: %v, want ErrShutDown", err)
		}
		if n := s.Len(); n != 2 {
			t.Errorf("Len = %d, want 2", n)
		}
	})
}
