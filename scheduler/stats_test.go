package scheduler

import (
	"math"
	"math/rand/v2"
	"strconv"
	"testing"
	"time"

	"github.com/otelqueue/otelqueue/internal/testutil"
)

func TestStats(t *testing.T) {
	s, fc := newFake(t, Config[string]{Name: "test", RateLimiter: testutil.ExpLimiter(time.Second, time.Minute)})
	sec := func(n int) time.Duration { return time.Duration(n) * time.Second }

	for i, step := range []struct {
		do   func()
		want Stats
	}{
		{do: func() {}, want: Stats{}},
		{do: func() {
			s.Add("a")
			s.Add("b")
			s.Add("a")
		}, want: Stats{Depth: 2, Adds: 2, Coalesced: 1}},
		{do: func() { s.AddAfter("c", sec(5)) }, want: Stats{Depth: 2, Delayed: 1, Adds: 3, Retries: 1, DelayedAdds: 1, Coalesced: 1}},
		{do: func() { fc.Step(sec(2)) }, want: Stats{Depth: 2, Delayed: 1, Adds: 3, Retries: 1, DelayedAdds: 1, Coalesced: 1, OldestPending: sec(2)}},
		{do: func() { mustGetKey(t, s, "a") }, want: Stats{Depth: 1, Delayed: 1, InFlight: 1, Adds: 3, Retries: 1, DelayedAdds: 1, Coalesced: 1, OldestPending: sec(2)}},
		{do: func() { fc.Step(sec(1)) }, want: Stats{Depth: 1, Delayed: 1, InFlight: 1, Adds: 3, Retries: 1, DelayedAdds: 1, Coalesced: 1,
			OldestPending: sec(3), UnfinishedWork: sec(1), LongestRunning: sec(1), Busy: sec(1)}},
		{do: func() { mustGetKey(t, s, "b") }, want: Stats{Delayed: 1, InFlight: 2, Adds: 3, Retries: 1, DelayedAdds: 1, Coalesced: 1,
			UnfinishedWork: sec(1), LongestRunning: sec(1), Busy: sec(1)}},
		{do: func() { fc.Step(sec(1)) }, want: Stats{Delayed: 1, InFlight: 2, Adds: 3, Retries: 1, DelayedAdds: 1, Coalesced: 1,
			UnfinishedWork: sec(3), LongestRunning: sec(2), Busy: sec(3)}},
		// At 4s: a is added again while processed, twice.
		{do: func() { s.Add("a"); s.AddContext(spanCtx(1), "a") }, want: Stats{Delayed: 1, Held: 1, InFlight: 2, Adds: 4, Retries: 1, DelayedAdds: 1, Coalesced: 2,
			UnfinishedWork: sec(3), LongestRunning: sec(2), Busy: sec(3)}},
		{do: func() { s.AddRateLimited("d") }, want: Stats{Delayed: 2, Held: 1, InFlight: 2, Adds: 5, Retries: 2, DelayedAdds: 1, Coalesced: 2,
			UnfinishedWork: sec(3), LongestRunning: sec(2), Busy: sec(3)}},
		// a's Done: its held run becomes ready now; a ran 2 s.
		{do: func() { s.Done("a") }, want: Stats{Depth: 1, Delayed: 2, InFlight: 1, Adds: 5, Retries: 2, DelayedAdds: 1, Coalesced: 2,
			UnfinishedWork: sec(1), LongestRunning: sec(1), Finished: 1, Busy: sec(3)}},
		// At 5s: c's delay and d's backoff have ended.
		{do: func() { fc.Step(sec(1)); s.Len() }, want: Stats{Depth: 3, InFlight: 1, Adds: 5, Retries: 2, DelayedAdds: 1, Coalesced: 2,
			OldestPending: sec(1), UnfinishedWork: sec(2), LongestRunning: sec(2), Finished: 1, Busy: sec(4)}},
		{do: func() { s.Done("b") }, want: Stats{Depth: 3, Adds: 5, Retries: 2, DelayedAdds: 1, Coalesced: 2, OldestPending: sec(1), Finished: 2, Busy: sec(4)}},
		{do: func() {
			for range 3 {
				s.Done(mustGet(t, s).Key)
			}
		}, want: Stats{Adds: 5, Retries: 2, DelayedAdds: 1, Coalesced: 2, Finished: 5, Busy: sec(4)}},
	} {
		step.do()
		if got := s.Stats(); got != step.want {
			t.Fatalf("step %d (t0+%v):\n got %+v\nwant %+v", i, fc.Since(t0), got, step.want)
		}
	}
}

// Stats counts a delayed key that is due as ready, whether or not the delay
// loop has moved it yet.
func TestStatsCountsDueKeysReady(t *testing.T) {
	s, fc := newFake(t, named())
	s.AddAfter("a", time.Second)
	s.AddAfter("b", 2*time.Second)
	fc.Step(time.Second)
	if st := s.Stats(); st.Depth != 1 || st.Delayed != 1 {
		t.Fatalf("after 1s: Stats = %+v, want Depth 1, Delayed 1", st)
	}
	fc.Step(time.Second)
	if st := s.Stats(); st.Depth != 2 || st.Delayed != 0 {
		t.Fatalf("after 2s: Stats = %+v, want Depth 2, Delayed 0", st)
	}
	if st := s.Stats(); st.OldestPending != time.Second {
		t.Errorf("OldestPending = %v, want 1s", st.OldestPending)
	}
}

func TestStatsUnnamedHasNoAges(t *testing.T) {
	s, fc := newFake(t, Config[string]{})
	s.Add("a")
	s.Add("b")
	s.AddAfter("c", time.Second)
	fc.Step(time.Second)
	mustGetKey(t, s, "a")
	s.Add("a")
	fc.Step(time.Second)
	want := Stats{Depth: 2, Held: 1, InFlight: 1, Adds: 4, Retries: 1, DelayedAdds: 1}
	if got := s.Stats(); got != want {
		t.Fatalf("Stats = %+v, want %+v", got, want)
	}
}

func TestStatsShutDown(t *testing.T) {
	s, _ := newFake(t, named())
	s.Add("a")
	s.AddAfter("b", time.Second)
	s.ShutDown()
	want := Stats{Depth: 1, Adds: 2, Retries: 1, DelayedAdds: 1}
	if got := s.Stats(); got != want {
		t.Fatalf("Stats = %+v, want %+v", got, want)
	}
	// Adds after ShutDown count nowhere.
	s.Add("c")
	s.AddAfter("c", time.Second)
	s.AddRateLimited("c")
	if got := s.Stats(); got != want {
		t.Fatalf("Stats after late adds = %+v, want %+v", got, want)
	}
}

// TestStatsDelayedAdds checks which adds count as DelayedAdds: those with a
// delay the caller chose, not the rate limiter's backoff (even with After
// set beside RateLimited), and not plain adds.
func TestStatsDelayedAdds(t *testing.T) {
	s, _ := newFake(t, Config[string]{Name: "test", RateLimiter: testutil.ExpLimiter(time.Second, time.Minute)})
	s.Add("a")
	s.AddAfter("b", time.Second)
	s.AddAfterContext(spanCtx(1), "c", time.Second)
	s.AddAfter("d", 0) // at once, but asked for through AddAfter: a retry, as in client-go
	s.AddRateLimited("e")
	s.AddWithOptions(t.Context(), AddOptions{After: time.Second}, "f")
	s.AddWithOptions(t.Context(), AddOptions{After: time.Second, RateLimited: true}, "g")
	s.AddWithOptions(t.Context(), AddOptions{Priority: 3}, "h")
	st := s.Stats()
	if st.Retries != 6 || st.DelayedAdds != 4 {
		t.Errorf("Retries %d, DelayedAdds %d; want 6 (every add but the plain ones) and 4 (AddAfter twice, AddAfterContext, After without RateLimited)", st.Retries, st.DelayedAdds)
	}
	s.ShutDown()
	s.AddAfter("i", time.Second)
	if got := s.Stats(); got.Retries != st.Retries || got.DelayedAdds != st.DelayedAdds {
		t.Errorf("after ShutDown an AddAfter counted: %+v, want the counts of %+v", got, st)
	}
}

// TestDueWithin checks the count of delayed keys due within a duration:
// at its bound, keys due at once, a negative duration, keys that moved to
// the ready queue and many keys at random times against a count by hand.
func TestDueWithin(t *testing.T) {
	s, fc := newFake(t, named())
	if n := s.DueWithin(time.Hour); n != 0 {
		t.Fatalf("empty queue: %d due", n)
	}
	rng := rand.New(rand.NewPCG(1, 2))
	delays := make(map[int]time.Duration)
	for k := range 1000 {
		d := time.Duration(1+rng.IntN(600)) * time.Second
		delays[k] = d
		s.AddAfter(strconv.Itoa(k), d)
	}
	count := func(from, within time.Duration) int {
		n := 0
		for _, d := range delays {
			if d > from && d <= from+within {
				n++
			}
		}
		return n
	}
	for _, within := range []time.Duration{0, time.Second, 30 * time.Second, 60 * time.Second, 599 * time.Second, time.Hour, math.MaxInt64} {
		if got, want := s.DueWithin(within), count(0, within); got != want {
			t.Errorf("DueWithin(%v) = %d, want %d", within, got, want)
		}
	}
	if n := s.DueWithin(-time.Second); n != 0 {
		t.Errorf("DueWithin(-1s) = %d, want 0", n)
	}
	// After 60s the keys due by then are ready, not delayed.
	fc.Step(60 * time.Second)
	if got, want := s.DueWithin(60*time.Second), count(60*time.Second, 60*time.Second); got != want {
		t.Errorf("60s later, DueWithin(60s) = %d, want %d (the keys due by now are ready)", got, want)
	}
	// Forever, from a clock past the scheduler's start: no overflow.
	if got, want := s.DueWithin(math.MaxInt64), count(60*time.Second, time.Hour); got != want {
		t.Errorf("60s later, DueWithin(MaxInt64) = %d, want %d (every delayed key)", got, want)
	}
	if st := s.Stats(); st.Depth != count(0, 60*time.Second) {
		t.Errorf("depth %d, want %d", st.Depth, count(0, 60*time.Second))
	}
	s.ShutDown()
	if n := s.DueWithin(time.Hour); n != 0 {
		t.Errorf("after ShutDown: %d due, want 0 (the delayed keys are dropped)", n)
	}
}
