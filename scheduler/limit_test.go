package scheduler

import (
	"context"
	"sync"
	"sync/atomic"
	"testing"

	"github.com/otelqueue/otelqueue/internal/testutil"
)

// TestMaxInFlight: with a limit of 2, a third Get waits while two keys are
// in flight, the keys beyond the limit stay ready in their order and at
// their priority (Len counts them), and a Done lets the next one through.
func TestMaxInFlight(t *testing.T) {
	s, _ := newFake(t, named())
	s.SetMaxInFlight(2)
	if n := s.MaxInFlight(); n != 2 {
		t.Fatalf("MaxInFlight() = %d, want 2", n)
	}
	for _, key := range []string{"a", "b", "c", "d"} {
		s.Add(key)
	}
	s.AddWithOptions(context.Background(), AddOptions{Priority: 1}, "high")
	mustGetKey(t, s, "high")
	mustGetKey(t, s, "a")
	if _, ok := tryGet(t, s); ok {
		t.Fatal("a third key was handed out with 2 in flight and a limit of 2")
	}
	if n := s.Len(); n != 3 {
		t.Errorf("Len() = %d, want the 3 keys held back by the limit", n)
	}
	s.Done("high")
	mustGetKey(t, s, "b")
	if _, ok := tryGet(t, s); ok {
		t.Fatal("a key was handed out beyond the limit after one Done")
	}

	// Lowered below the runs in flight: nothing more until only 0 are.
	s.SetMaxInFlight(1)
	s.Done("a")
	if _, ok := tryGet(t, s); ok {
		t.Fatal("a key was handed out with 1 in flight and a limit of 1")
	}
	s.Done("b")
	mustGetKey(t, s, "c")
	s.Done("c")

	// No limit again.
	s.SetMaxInFlight(0)
	s.Add("e")
	mustGetKey(t, s, "d")
	mustGetKey(t, s, "e")
	s.SetMaxInFlight(-3) // no limit
	if n := s.MaxInFlight(); n != 0 {
		t.Errorf("MaxInFlight() = %d after SetMaxInFlight(-3), want 0 (none)", n)
	}
}

// TestMaxInFlightRaiseWakesGet: a Get blocked by the limit returns as soon
// as the limit is raised, and one blocked by it while the queue is empty
// returns when a key comes once the limit allows.
func TestMaxInFlightRaiseWakesGet(t *testing.T) {
	s, _ := newFake(t, named())
	s.SetMaxInFlight(1)
	s.Add("a")
	s.Add("b")
	mustGetKey(t, s, "a")
	got := make(chan string, 1)
	go func() {
		k, _ := s.Get()
		got <- k
	}()
	testutil.WaitBlocked(t, "waitReadyLocked", testutil.CondWait, 1)
	select {
	case k := <-got:
		t.Fatalf("Get returned %q beyond the limit", k)
	default:
	}
	s.SetMaxInFlight(2)
	if k := testutil.Receive(t, got, "the Get the raised limit lets through"); k != "b" {
		t.Errorf("Get = %q, want b", k)
	}
}

// TestMaxInFlightConcurrent: 8 workers on a queue limited to 3 never have
// more than 3 keys at once, and every key is processed (run with -race).
func TestMaxInFlightConcurrent(t *testing.T) {
	s := New(Config[int]{Name: "limited"})
	s.SetMaxInFlight(3)
	const keys = 2000
	for i := range keys {
		s.Add(i)
	}
	var inFlight, peak, done atomic.Int64
	var wg sync.WaitGroup
	for range 8 {
		wg.Go(func() {
			for {
				k, shutdown := s.Get()
				if shutdown {
					return
				}
				n := inFlight.Add(1)
				for p := peak.Load(); n > p && !peak.CompareAndSwap(p, n); p = peak.Load() {
				}
				if k%100 == 0 {
					s.SetMaxInFlight(3) // harmless while running
				}
				inFlight.Add(-1)
				s.Done(k)
				if done.Add(1) == keys {
					s.ShutDown()
				}
			}
		})
	}
	wg.Wait()
	if p := peak.Load(); p > 3 {
		t.Errorf("%d keys in flight at once, limit 3", p)
	}
	if n := done.Load(); n != keys {
		t.Errorf("%d keys processed, want %d", n, keys)
	}
}

// TestMaxInFlightAfterShutDown: the limit may be changed after ShutDown,
// harmlessly; a Get that waits for it returns shutdown once nothing is
// left, as without a limit.
func TestMaxInFlightAfterShutDown(t *testing.T) {
	s, _ := newFake(t, named())
	s.SetMaxInFlight(1)
	s.Add("a")
	s.Add("b")
	mustGetKey(t, s, "a")
	s.ShutDown()
	s.SetMaxInFlight(0) // raised after ShutDown: b may go
	mustGetKey(t, s, "b")
	s.Done("a")
	s.Done("b")
	s.SetMaxInFlight(3)
	if _, shutdown := s.Get(); !shutdown {
		t.Error("Get after ShutDown, with nothing left, did not return shutdown")
	}
}
