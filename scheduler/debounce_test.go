package scheduler

import (
	"fmt"
	"math"
	"testing"
	"time"

	"github.com/otelqueue/otelqueue/internal/testutil"
)

// ms is a duration of n milliseconds.
func ms(n int) time.Duration { return time.Duration(n) * time.Millisecond }

// debounceOp is one step of a debounce scenario: at time at (from t0), call
// do.
type debounceOp struct {
	at time.Duration
	do func(s *Scheduler[string])
}

func add(at time.Duration) debounceOp {
	return debounceOp{at, func(s *Scheduler[string]) { s.Add("k") }}
}

func addCtx(at time.Duration, n int) debounceOp {
	return debounceOp{at, func(s *Scheduler[string]) { s.AddContext(spanCtx(n), "k") }}
}

func addAfter(at, d time.Duration) debounceOp {
	return debounceOp{at, func(s *Scheduler[string]) { s.AddAfter("k", d) }}
}

func addRL(at time.Duration) debounceOp {
	return debounceOp{at, func(s *Scheduler[string]) { s.AddRateLimited("k") }}
}

func TestDebounce(t *testing.T) {
	for _, tc := range []struct {
		name      string
		window    time.Duration
		maxWait   time.Duration
		ops       []debounceOp
		runAt     time.Duration // "k" becomes ready at t0+runAt, not earlier
		reason    WaitReason
		coalesced int
	}{
		{name: "single add", window: ms(1000), ops: []debounceOp{add(0)},
			runAt: ms(1000), reason: WaitDebounced},
		{name: "burst runs a window after its last add", window: ms(1000), ops: []debounceOp{add(0), add(ms(500)), add(ms(1200))},
			runAt: ms(2200), reason: WaitDebounced, coalesced: 2},
		{name: "bounded by max wait", window: ms(1000), maxWait: ms(3000),
			ops:   []debounceOp{add(0), add(ms(900)), add(ms(1800)), add(ms(2700))},
			runAt: ms(3000), reason: WaitDebounced, coalesced: 3},
		{name: "default max wait is ten windows", window: ms(1000),
			ops: []debounceOp{add(0), add(ms(900)), add(ms(1800)), add(ms(2700)), add(ms(3600)), add(ms(4500)),
				add(ms(5400)), add(ms(6300)), add(ms(7200)), add(ms(8100)), add(ms(9000)), add(ms(9900))},
			runAt: ms(10000), reason: WaitDebounced, coalesced: 11},
		{name: "AddContext is debounced", window: ms(1000), ops: []debounceOp{addCtx(0, 1), addCtx(ms(400), 2)},
			runAt: ms(1400), reason: WaitDebounced, coalesced: 1},
		{name: "AddAfter is not debounced", window: ms(1000), ops: []debounceOp{addAfter(0, ms(300))},
			runAt: ms(300), reason: WaitDelayed},
		{name: "AddAfter longer than the window", window: ms(1000), ops: []debounceOp{addAfter(0, ms(5000))},
			runAt: ms(5000), reason: WaitDelayed},
		{name: "AddAfter 0 is not debounced", window: ms(1000), ops: []debounceOp{addAfter(0, 0)},
			runAt: 0, reason: WaitImmediate},
		{name: "AddRateLimited is not debounced", window: ms(1000), ops: []debounceOp{addRL(0)},
			runAt: ms(100), reason: WaitRateLimited},
		{name: "adds to a ready key are not debounced", window: ms(1000), ops: []debounceOp{addAfter(0, 0), add(0), add(0)},
			runAt: 0, reason: WaitImmediate, coalesced: 2},
		{name: "an earlier AddAfter wins over the window", window: ms(1000), ops: []debounceOp{add(0), addAfter(ms(100), ms(200)), add(ms(200))},
			runAt: ms(300), reason: WaitDelayed, coalesced: 2},
		{name: "AddAfter bounds later adds", window: ms(1000), ops: []debounceOp{addAfter(0, ms(1500)), add(0), add(ms(800)), add(ms(1400))},
			runAt: ms(1500), reason: WaitDebounced, coalesced: 3},
		{name: "a later AddAfter does not postpone", window: ms(1000), ops: []debounceOp{add(0), addAfter(0, ms(5000))},
			runAt: ms(1000), reason: WaitDebounced, coalesced: 1},
		{name: "a later AddAfter bounds the pushes", window: ms(1000), ops: []debounceOp{add(0), addAfter(0, ms(2500)), add(ms(900)), add(ms(1800))},
			runAt: ms(2500), reason: WaitDebounced, coalesced: 3},
		{name: "an earlier rate-limited add wins", window: ms(1000), ops: []debounceOp{add(0), addRL(ms(500))},
			runAt: ms(600), reason: WaitRateLimited, coalesced: 1},
	} {
		t.Run(tc.name, func(t *testing.T) {
			s, fc := newFake(t, Config[string]{
				Name:            "test",
				Debounce:        tc.window,
				DebounceMaxWait: tc.maxWait,
				RateLimiter:     testutil.ExpLimiter(ms(100), time.Minute),
			})
			for _, op := range tc.ops {
				if d := op.at - fc.Since(t0); d > 0 {
					fc.Step(d)
				}
				op.do(s)
				if tc.runAt > op.at {
					mustBeEmpty(t, s)
				}
			}
			if rest := tc.runAt - fc.Since(t0); rest > 0 {
				fc.Step(rest - time.Nanosecond)
				mustBeEmpty(t, s)
				fc.Step(time.Nanosecond)
			}
			it := mustGetKey(t, s, "k")
			if want := t0.Add(tc.runAt); !it.ReadyAt.Equal(want) {
				t.Errorf("ReadyAt = t0+%v, want t0+%v", it.ReadyAt.Sub(t0), tc.runAt)
			}
			if !it.EnqueuedAt.Equal(t0) {
				t.Errorf("EnqueuedAt = t0+%v, want t0", it.EnqueuedAt.Sub(t0))
			}
			if it.Reason != tc.reason {
				t.Errorf("Reason = %v, want %v", it.Reason, tc.reason)
			}
			if it.Coalesced != tc.coalesced {
				t.Errorf("Coalesced = %d, want %d", it.Coalesced, tc.coalesced)
			}
			s.Done("k")
			// One run per burst.
			fc.Step(time.Minute)
			mustBeEmpty(t, s)
		})
	}
}

func TestDebounceSeparateKeys(t *testing.T) {
	s, fc := newFake(t, Config[string]{Name: "test", Debounce: time.Second})
	s.Add("a")
	fc.Step(ms(500))
	s.Add("b")
	if st := s.Stats(); st.Delayed != 2 || st.Adds != 2 || st.Depth != 0 {
		t.Fatalf("Stats = %+v, want Delayed 2, Adds 2, Depth 0", st)
	}
	fc.Step(ms(500))
	mustGetKey(t, s, "a")
	mustBeEmpty(t, s)
	fc.Step(ms(500))
	mustGetKey(t, s, "b")
	s.Done("a")
	s.Done("b")
}

func TestDebounceWhileProcessing(t *testing.T) {
	t.Run("done within the window", func(t *testing.T) {
		s, fc := newFake(t, Config[string]{Name: "test", Debounce: time.Second})
		s.AddAfter("k", 0)
		mustGetKey(t, s, "k")
		s.Add("k") // at 0: debounced to 1s, held meanwhile
		if st := s.Stats(); st.Held != 1 {
			t.Fatalf("Held = %d, want 1", st.Held)
		}
		fc.Step(ms(300))
		s.Add("k") // pushed to 1.3s
		fc.Step(ms(200))
		s.Done("k") // at 0.5s: waits for the rest of the window
		if st := s.Stats(); st.Held != 0 || st.Delayed != 1 {
			t.Fatalf("Stats = %+v, want Held 0, Delayed 1", st)
		}
		fc.Step(ms(800) - 1)
		mustBeEmpty(t, s)
		fc.Step(1)
		it := mustGetKey(t, s, "k")
		if it.Reason != WaitDebounced || !it.ReadyAt.Equal(t0.Add(ms(1300))) || it.Coalesced != 1 {
			t.Errorf("Reason, ReadyAt, Coalesced = %v, t0+%v, %d; want debounced, t0+1.3s, 1", it.Reason, it.ReadyAt.Sub(t0), it.Coalesced)
		}
		s.Done("k")
	})
	t.Run("done after the window", func(t *testing.T) {
		s, fc := newFake(t, Config[string]{Name: "test", Debounce: time.Second})
		s.AddAfter("k", 0)
		mustGetKey(t, s, "k")
		s.Add("k")
		fc.Step(ms(1500))
		s.Done("k")
		it := mustGetKey(t, s, "k")
		if it.Reason != WaitHeld || !it.ReadyAt.Equal(t0.Add(ms(1500))) {
			t.Errorf("Reason, ReadyAt = %v, t0+%v; want held, t0+1.5s", it.Reason, it.ReadyAt.Sub(t0))
		}
		s.Done("k")
	})
}

func TestDebounceHugeDurations(t *testing.T) {
	// A max wait (or window) beyond the int64 nanoseconds left on the clock
	// must not wrap around into the past and run the key at once.
	for _, tc := range []struct {
		window, maxWait time.Duration
	}{
		{window: time.Second, maxWait: math.MaxInt64},
		{window: time.Second, maxWait: math.MaxInt64 - time.Hour},
		{window: math.MaxInt64 / 5},
		{window: math.MaxInt64},
	} {
		t.Run(fmt.Sprint(tc.window, ",", tc.maxWait), func(t *testing.T) {
			s, fc := newFake(t, Config[string]{Name: "test", Debounce: tc.window, DebounceMaxWait: tc.maxWait})
			fc.Step(time.Hour) // the queue has been up for an hour
			s.Add("k")
			mustBeEmpty(t, s)
			fc.Step(tc.window / 2)
			s.Add("k")
			mustBeEmpty(t, s)
			if tc.window == time.Second {
				// Still pushed back by each add: ready a window after the last.
				fc.Step(time.Second - 1)
				mustBeEmpty(t, s)
				fc.Step(1)
				mustGetKey(t, s, "k")
				s.Done("k")
			}
		})
	}
}
