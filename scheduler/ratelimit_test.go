package scheduler

import (
	"testing"
	"time"

	"k8s.io/client-go/util/workqueue"

	"github.com/otelqueue/otelqueue/internal/testutil"
)

func TestAddRateLimited(t *testing.T) {
	s, fc := newFake(t, Config[string]{Name: "test", RateLimiter: testutil.ExpLimiter(time.Second, 4*time.Second)})

	// Each failure doubles the backoff, up to the limiter's maximum.
	for i, want := range []time.Duration{time.Second, 2 * time.Second, 4 * time.Second, 4 * time.Second} {
		s.AddRateLimited("a")
		if n := s.NumRequeues("a"); n != i+1 {
			t.Fatalf("attempt %d: NumRequeues = %d, want %d", i, n, i+1)
		}
		if st := s.Stats(); st.Delayed != 1 || st.Retries != uint64(i+1) {
			t.Fatalf("attempt %d: Stats = %+v, want Delayed 1, Retries %d", i, st, i+1)
		}
		start := fc.Now()
		fc.Step(want - time.Nanosecond)
		mustBeEmpty(t, s)
		fc.Step(time.Nanosecond)
		it := mustGetKey(t, s, "a")
		checkItem(t, it, Item[string]{
			Key: "a", EnqueuedAt: start, ReadyAt: start.Add(want), DequeuedAt: start.Add(want),
			Reason: WaitRateLimited, Requeues: i + 1,
		})
		s.Done("a")
	}

	// Forget resets the count: the next backoff is the base delay again.
	s.Forget("a")
	if n := s.NumRequeues("a"); n != 0 {
		t.Fatalf("NumRequeues after Forget = %d, want 0", n)
	}
	s.AddRateLimited("a")
	fc.Step(time.Second)
	it := mustGetKey(t, s, "a")
	if it.Requeues != 1 {
		t.Errorf("Requeues = %d, want 1", it.Requeues)
	}
	s.Done("a")
}

func TestAddRateLimitedWhileProcessing(t *testing.T) {
	// The usual retry: the worker calls AddRateLimited before Done.
	s, fc := newFake(t, Config[string]{Name: "test", RateLimiter: testutil.ExpLimiter(time.Second, time.Minute)})
	s.Add("a")
	mustGetKey(t, s, "a")
	s.AddRateLimited("a")
	if st := s.Stats(); st.Held != 1 || st.Delayed != 0 {
		t.Fatalf("Stats = %+v, want Held 1, Delayed 0", st)
	}
	s.Done("a") // at 0: the backoff (1s) goes on
	if st := s.Stats(); st.Held != 0 || st.Delayed != 1 {
		t.Fatalf("Stats after Done = %+v, want Held 0, Delayed 1", st)
	}
	mustBeEmpty(t, s)
	fc.Step(time.Second)
	it := mustGetKey(t, s, "a")
	if it.Reason != WaitRateLimited || it.Requeues != 1 {
		t.Errorf("Reason, Requeues = %v, %d; want rate_limited, 1", it.Reason, it.Requeues)
	}
	// Forget on success does not touch the queue: Done is still needed.
	s.Forget("a")
	if st := s.Stats(); st.InFlight != 1 {
		t.Fatalf("InFlight after Forget = %d, want 1", st.InFlight)
	}
	s.Done("a")
	if st := s.Stats(); st.InFlight != 0 {
		t.Fatalf("InFlight after Done = %d, want 0", st.InFlight)
	}
}

func TestDefaultRateLimiter(t *testing.T) {
	// Nil RateLimiter: client-go's default controller limiter, whose
	// per-item part starts at 5ms (its bucket has a burst of 100, so its
	// first answers do not depend on the real clock).
	s, fc := newFake(t, named())
	s.AddRateLimited("a")
	if n := s.NumRequeues("a"); n != 1 {
		t.Fatalf("NumRequeues = %d, want 1", n)
	}
	fc.Step(5*time.Millisecond - time.Nanosecond)
	mustBeEmpty(t, s)
	fc.Step(time.Nanosecond)
	mustGetKey(t, s, "a")
	s.AddRateLimited("a") // 10ms
	s.Done("a")
	fc.Step(10*time.Millisecond - time.Nanosecond)
	mustBeEmpty(t, s)
	fc.Step(time.Nanosecond)
	mustGetKey(t, s, "a")
	s.Forget("a")
	s.Done("a")
	if n := s.NumRequeues("a"); n != 0 {
		t.Fatalf("NumRequeues after Forget = %d, want 0", n)
	}
}

// fixedLimiter answers When with a fixed delay and counts calls.
type fixedLimiter struct {
	delay time.Duration
	whens map[string]int
}

func (l *fixedLimiter) When(key string) time.Duration { l.whens[key]++; return l.delay }
func (l *fixedLimiter) Forget(key string)             { delete(l.whens, key) }
func (l *fixedLimiter) NumRequeues(key string) int    { return l.whens[key] }

var _ workqueue.TypedRateLimiter[string] = (*fixedLimiter)(nil)

func TestRateLimiterNonPositiveDelay(t *testing.T) {
	for _, d := range []time.Duration{0, -time.Second} {
		t.Run(d.String(), func(t *testing.T) {
			rl := &fixedLimiter{delay: d, whens: map[string]int{}}
			s, _ := newFake(t, Config[string]{Name: "test", RateLimiter: rl, Debounce: time.Minute})
			s.AddRateLimited("a")
			if n := s.Len(); n != 1 {
				t.Fatalf("Len = %d, want 1 (a delay of %v adds at once)", n, d)
			}
			it := mustGetKey(t, s, "a")
			if it.Reason != WaitImmediate || it.Requeues != 1 || !it.ReadyAt.Equal(t0) {
				t.Errorf("Reason, Requeues, ReadyAt = %v, %d, %v; want immediate, 1, t0", it.Reason, it.Requeues, it.ReadyAt)
			}
			s.Done("a")
		})
	}
}

func TestRateLimitedContext(t *testing.T) {
	s, fc := newFake(t, Config[string]{Name: "test", RateLimiter: testutil.ExpLimiter(time.Second, time.Minute)})
	s.AddRateLimitedContext(spanCtx(1), "a")
	fc.Step(time.Second)
	it := mustGetKey(t, s, "a")
	if !it.Origin.Equal(span(1)) {
		t.Errorf("Origin = %v, want span 1", it.Origin)
	}
	s.Done("a")
}

func TestRetriesCount(t *testing.T) {
	// Retries counts AddAfter and AddRateLimited calls, delayed or not, as
	// client-go's workqueue_retries_total; plain adds do not count.
	s, _ := newFake(t, Config[string]{Name: "test", RateLimiter: testutil.ExpLimiter(time.Second, time.Minute)})
	s.Add("a")
	s.AddContext(spanCtx(1), "a")
	s.AddAfter("a", 0)
	s.AddAfter("b", time.Second)
	s.AddAfterContext(spanCtx(1), "b", time.Second)
	s.AddRateLimited("c")
	s.AddRateLimitedContext(spanCtx(1), "c")
	st := s.Stats()
	if st.Retries != 5 {
		t.Errorf("Retries = %d, want 5", st.Retries)
	}
	if st.Adds != 3 || st.Coalesced != 4 {
		t.Errorf("Adds, Coalesced = %d, %d; want 3, 4", st.Adds, st.Coalesced)
	}
}
