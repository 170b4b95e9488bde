package scheduler

import (
	"context"
	"fmt"
	"slices"
	"testing"
	"time"

	"github.com/otelqueue/otelqueue/internal/testutil"
)

// TestInspect: the counts by priority and reason, the oldest pending keys
// (oldest first, at most the limit, with what their runs carry) and the runs
// in flight (longest-running first, with their attempt's span context).
func TestInspect(t *testing.T) {
	s, fc := newFake(t, named())
	obs := newRecObserver[string]()
	s.SetObserver(obs)

	s.AddContext(spanCtx(1), "a") // t0
	fc.Step(time.Second)
	s.Add("b")
	s.AddWithOptions(context.Background(), AddOptions{Priority: 10}, "hi") // t0+1s
	fc.Step(time.Second)
	s.AddAfter("later", time.Minute) // delayed until t0+62s
	s.Add("c")                       // t0+2s
	s.Add("c")                       // coalesced
	// Two runs in flight: "a" (the oldest, taken first) and "hi".
	obs.setSpan("hi", span(7))
	if k, _ := s.Get(); k != "hi" {
		t.Fatalf("Get = %q, want the high-priority key", k)
	}
	fc.Step(time.Second)
	obs.setSpan("a", span(8))
	if k, _ := s.Get(); k != "a" {
		t.Fatalf("Get = %q, want a", k)
	}
	s.Add("a") // held until a's Done
	fc.Step(time.Second)

	in := s.Inspect(3)
	if want := t0.Add(4 * time.Second); !in.At.Equal(want) {
		t.Errorf("At = %v, want %v", in.At, want)
	}
	if in.Pending != 4 || in.InFlight != 2 {
		t.Errorf("Pending %d, InFlight %d; want 4 (b, c, later, a held), 2", in.Pending, in.InFlight)
	}
	wantCounts := []PendingCount{
		{Priority: 0, Reason: WaitImmediate, Keys: 2},
		{Priority: 0, Reason: WaitDelayed, Delayed: true, Keys: 1},
		{Priority: 0, Reason: WaitHeld, Held: true, Keys: 1},
	}
	if !slices.Equal(in.ByPriority, wantCounts) {
		t.Errorf("ByPriority = %+v, want %+v", in.ByPriority, wantCounts)
	}
	var keys []string
	for _, p := range in.Oldest {
		keys = append(keys, p.Key)
	}
	if !slices.Equal(keys, []string{"b", "c", "later"}) {
		t.Fatalf("Oldest = %q, want b, c, later (the limit of 3, oldest first)", keys)
	}
	b, c, later := in.Oldest[0], in.Oldest[1], in.Oldest[2]
	if !b.EnqueuedAt.Equal(t0.Add(time.Second)) || b.Delayed || b.Held || b.Reason != WaitImmediate {
		t.Errorf("b = %+v", b)
	}
	if c.Coalesced != 1 {
		t.Errorf("c.Coalesced = %d, want 1", c.Coalesced)
	}
	if !later.Delayed || later.Reason != WaitDelayed || !later.ReadyAt.Equal(t0.Add(62*time.Second)) {
		t.Errorf("later = %+v, want delayed until t0+62s", later)
	}
	if len(in.Running) != 2 || in.Running[0].Key != "hi" || in.Running[1].Key != "a" {
		t.Fatalf("Running = %+v, want hi then a", in.Running)
	}
	if !in.Running[0].StartedAt.Equal(t0.Add(2*time.Second)) || !in.Running[0].SpanContext.Equal(span(7)) {
		t.Errorf("Running[0] = %+v, want started at t0+2s in span 7", in.Running[0])
	}

	// The held key keeps the origin of its add; a limit of 1 keeps the
	// oldest of each list.
	in = s.Inspect(1)
	if len(in.Oldest) != 1 || in.Oldest[0].Key != "b" || len(in.Running) != 1 || in.Running[0].Key != "hi" {
		t.Errorf("Inspect(1): Oldest %+v, Running %+v; want b and hi", in.Oldest, in.Running)
	}
	all := s.Inspect(10)
	for _, p := range all.Oldest {
		if p.Key == "a" && (!p.Held || p.Reason != WaitHeld) {
			t.Errorf("a = %+v, want held", p)
		}
	}
	// A limit of 0 (or less) lists no key; the counts stay whole.
	for _, limit := range []int{0, -1} {
		if in := s.Inspect(limit); len(in.Oldest) != 0 || len(in.Running) != 0 || in.Pending != 4 || in.InFlight != 2 {
			t.Errorf("Inspect(%d) = %+v", limit, in)
		}
	}
}

// TestInspectRetryAndPriorities: a retry carries the attempt it follows
// and its requeue count; counts are by priority, the highest first.
func TestInspectRetryAndPriorities(t *testing.T) {
	s, _ := newFake(t, named())
	obs := newRecObserver[string]()
	s.SetObserver(obs)
	obs.setSpan("x", span(3))
	s.Add("x")
	it, err := s.GetContext(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	s.AddRateLimited("x") // while in flight: held, with the attempt it follows
	s.Done(it.Key)
	for i := range 3 {
		s.AddWithOptions(context.Background(), AddOptions{Priority: -i}, fmt.Sprint("p", i))
	}
	in := s.Inspect(10)
	var x *PendingKey[string]
	for i := range in.Oldest {
		if in.Oldest[i].Key == "x" {
			x = &in.Oldest[i]
		}
	}
	if x == nil {
		t.Fatalf("x is not pending: %+v", in.Oldest)
	}
	if x.Requeues != 1 || !x.PreviousAttempt.Equal(span(3)) {
		t.Errorf("x = %+v, want 1 requeue after the attempt in span 3", *x)
	}
	var prios []int
	for _, c := range in.ByPriority {
		prios = append(prios, c.Priority)
	}
	if !slices.IsSortedFunc(prios, func(a, b int) int { return b - a }) || prios[0] != 0 || prios[len(prios)-1] != -2 {
		t.Errorf("priorities %v, want from 0 down to -2", prios)
	}
}

// TestInspectUntimed: a queue that reads no clock gives no times, and its
// counts all the same; Inspect of a queue shut down still answers.
func TestInspectUntimed(t *testing.T) {
	s := New(Config[string]{})
	s.Add("a")
	s.AddAfter("b", time.Hour)
	in := s.Inspect(5)
	if !in.At.IsZero() || in.Pending != 2 || len(in.Oldest) != 2 {
		t.Errorf("untimed: %+v", in)
	}
	for _, p := range in.Oldest {
		if !p.EnqueuedAt.IsZero() {
			t.Errorf("untimed %q enqueued at %v, want zero", p.Key, p.EnqueuedAt)
		}
	}
	s.ShutDown()
	if in := s.Inspect(5); in.Pending > 2 {
		t.Errorf("after ShutDown: %+v", in)
	}
}

// TestInspectConcurrent: Inspect beside adds, gets and dones (go test
// -race).
func TestInspectConcurrent(t *testing.T) {
	s := New(Config[int]{Name: "concurrent"})
	defer s.ShutDown()
	done := make(chan struct{})
	go func() {
		defer close(done)
		for i := range 2000 {
			s.Add(i % 50)
			if k, shutdown := s.Get(); !shutdown {
				s.Done(k)
			}
		}
	}()
	for {
		select {
		case <-done:
			return
		default:
			in := s.Inspect(5)
			if len(in.Oldest) > 5 || len(in.Running) > 5 {
				t.Fatalf("Inspect(5) listed %d and %d keys", len(in.Oldest), len(in.Running))
			}
		}
	}
}

// TestInspectCountsAgree puts keys in every place with every reason they
// can have there, and checks that the counts by place add up to Stats'
// Depth, Delayed and Held: a key held until its run ended is ready, and
// counted so, with the reason held.
func TestInspectCountsAgree(t *testing.T) {
	type pr struct {
		place  string
		reason WaitReason
	}
	check := func(t *testing.T, s *Scheduler[string], want []pr) {
		t.Helper()
		in, st := s.Inspect(100), s.Stats()
		var ready, delayed, held int
		var got []pr
		for _, c := range in.ByPriority {
			switch {
			case c.Held:
				held += c.Keys
				got = append(got, pr{"held", c.Reason})
			case c.Delayed:
				delayed += c.Keys
				got = append(got, pr{"delayed", c.Reason})
			default:
				ready += c.Keys
				got = append(got, pr{"ready", c.Reason})
			}
		}
		if ready != st.Depth || delayed != st.Delayed || held != st.Held || ready+delayed+held != in.Pending {
			t.Errorf("counted %d ready, %d delayed, %d held of %d pending; Stats: depth %d, delayed %d, held %d", ready, delayed, held, in.Pending, st.Depth, st.Delayed, st.Held)
		}
		if !slices.Equal(got, want) {
			t.Errorf("places and reasons %v, want %v", got, want)
		}
		for _, p := range in.Oldest {
			if p.Held && p.Reason != WaitHeld {
				t.Errorf("%s: held with the reason %v", p.Key, p.Reason)
			}
		}
	}
	t.Run("plain", func(t *testing.T) {
		cfg := named()
		cfg.RateLimiter = testutil.ExpLimiter(time.Minute, time.Hour)
		s, fc := newFake(t, cfg)
		// Taken, then added again while in flight: held; one of them
		// then ready with the reason held once its run ends.
		for _, k := range []string{"was-held", "held"} {
			s.Add(k)
			if it, ok := tryGet(t, s); !ok || it.Key != k {
				t.Fatalf("took %v, %t; want %s", it.Key, ok, k)
			}
			s.Add(k)
		}
		s.Add("immediate")
		s.AddAfter("later", time.Minute)
		s.AddRateLimited("backoff")
		s.AddAfter("due", time.Second)
		fc.Step(2 * time.Second) // "due" is due: ready, with the reason delayed
		s.Done("was-held")
		check(t, s, []pr{{"ready", WaitImmediate}, {"ready", WaitDelayed}, {"ready", WaitHeld}, {"delayed", WaitDelayed}, {"delayed", WaitRateLimited}, {"held", WaitHeld}})
	})
	t.Run("debounced", func(t *testing.T) {
		cfg := named()
		cfg.Debounce = time.Second
		s, _ := newFake(t, cfg)
		s.Add("a")
		check(t, s, []pr{{"delayed", WaitDebounced}})
	})
}
