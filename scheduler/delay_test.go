package scheduler

import (
	"context"
	"fmt"
	"math"
	"sync"
	"testing"
	"time"

	"k8s.io/utils/clock"
	testingclock "k8s.io/utils/clock/testing"

	"github.com/otelqueue/otelqueue/internal/testutil"
)

func TestAddAfter(t *testing.T) {
	s, fc := newFake(t, named())
	s.AddAfter("a", 50*time.Millisecond)
	mustBeEmpty(t, s)
	if st := s.Stats(); st.Delayed != 1 || st.Depth != 0 || st.Adds != 1 || st.Retries != 1 {
		t.Fatalf("Stats = %+v, want Delayed 1, Depth 0, Adds 1, Retries 1", st)
	}
	waitTimer(t, fc)

	fc.Step(49 * time.Millisecond)
	mustBeEmpty(t, s)
	fc.Step(time.Millisecond)
	// Stats, as Len, moves the key that is due to the ready queue, whether
	// or not the delay loop has woken yet (TestDelayLoopWakesBlockedGet
	// tests the loop).
	if st := s.Stats(); st.Depth != 1 || st.Delayed != 0 {
		t.Fatalf("Stats = %+v, want Depth 1, Delayed 0", st)
	}
	it := mustGetKey(t, s, "a")
	if !it.ReadyAt.Equal(t0.Add(50 * time.Millisecond)) {
		t.Errorf("ReadyAt = %v, want t0+50ms", it.ReadyAt)
	}
	s.Done("a")

	// Past the delay nothing comes back.
	fc.Step(time.Hour)
	mustBeEmpty(t, s)
}

func TestDelayLoopWakesBlockedGet(t *testing.T) {
	s, fc := newFake(t, named())
	got := make(chan string)
	go func() {
		key, _ := s.Get()
		got <- key
	}()
	testutil.WaitBlocked(t, "waitReadyLocked", testutil.CondWait, 1)
	s.AddAfter("a", time.Second)
	waitTimer(t, fc)
	fc.Step(time.Second)
	if k := testutil.Receive(t, got, "Get woken by the delay loop"); k != "a" {
		t.Fatalf("Get = %q, want a", k)
	}
	s.Done("a")
}

func TestAddAfterNonPositiveAddsAtOnce(t *testing.T) {
	for _, d := range []time.Duration{0, -time.Nanosecond, -time.Hour} {
		t.Run(d.String(), func(t *testing.T) {
			s, _ := newFake(t, Config[string]{Name: "test", Debounce: time.Minute}) // not debounced either
			s.AddAfter("a", d)
			s.AddAfterContext(spanCtx(1), "b", d)
			if n := s.Len(); n != 2 {
				t.Fatalf("Len = %d, want 2", n)
			}
			if st := s.Stats(); st.Retries != 2 || st.Delayed != 0 || st.Adds != 2 {
				t.Fatalf("Stats = %+v, want Retries 2, Delayed 0, Adds 2", st)
			}
			it := mustGetKey(t, s, "a")
			checkItem(t, it, Item[string]{Key: "a", EnqueuedAt: t0, ReadyAt: t0, DequeuedAt: t0, Reason: WaitImmediate})
			it = mustGetKey(t, s, "b")
			checkItem(t, it, Item[string]{Key: "b", EnqueuedAt: t0, ReadyAt: t0, DequeuedAt: t0, Reason: WaitImmediate, Origin: span(1)})
			s.Done("a")
			s.Done("b")
		})
	}
}

// TestAddAfterEarliestWins checks that the earlier ready time wins whatever
// state the key is in when AddAfter is called.
func TestAddAfterEarliestWins(t *testing.T) {
	sec := func(n int) time.Duration { return time.Duration(n) * time.Second }
	for _, tc := range []struct {
		name string
		// processing: the key is taken by a worker first and Done only at
		// doneAt (offset from t0).
		processing bool
		doneAt     time.Duration
		adds       func(s *Scheduler[string])
		readyAt    time.Duration // the key must be ready at t0+readyAt, not a nanosecond earlier
		reason     WaitReason
		single     bool // one add only: Coalesced 0
	}{
		{name: "delayed: earlier second", adds: func(s *Scheduler[string]) {
			s.AddAfter("a", sec(10))
			s.AddAfter("a", sec(5))
		}, readyAt: sec(5), reason: WaitDelayed},
		{name: "delayed: later second", adds: func(s *Scheduler[string]) {
			s.AddAfter("a", sec(5))
			s.AddAfter("a", sec(10))
		}, readyAt: sec(5), reason: WaitDelayed},
		{name: "delayed: rate limited earlier", adds: func(s *Scheduler[string]) {
			s.AddAfter("a", sec(10))
			s.AddRateLimited("a") // 1s
		}, readyAt: sec(1), reason: WaitRateLimited},
		{name: "delayed: rate limited later", adds: func(s *Scheduler[string]) {
			s.AddRateLimited("a") // 1s
			s.AddAfter("a", sec(10))
		}, readyAt: sec(1), reason: WaitRateLimited},
		{name: "delayed: then immediate", adds: func(s *Scheduler[string]) {
			s.AddAfter("a", sec(10))
			s.Add("a")
		}, readyAt: 0, reason: WaitImmediate},
		{name: "delayed: then AddAfter 0", adds: func(s *Scheduler[string]) {
			s.AddAfter("a", sec(10))
			s.AddAfter("a", 0)
		}, readyAt: 0, reason: WaitImmediate},
		{name: "queued: AddAfter does not delay it", adds: func(s *Scheduler[string]) {
			s.Add("a")
			s.AddAfter("a", sec(10))
		}, readyAt: 0, reason: WaitImmediate},
		{name: "held: AddAfter after Add", processing: true, doneAt: sec(1), adds: func(s *Scheduler[string]) {
			s.Add("a")
			s.AddAfter("a", sec(10))
		}, readyAt: sec(1), reason: WaitHeld},
		{name: "held: earlier second AddAfter", processing: true, doneAt: sec(1), adds: func(s *Scheduler[string]) {
			s.AddAfter("a", sec(10))
			s.AddAfter("a", sec(5))
		}, readyAt: sec(5), reason: WaitDelayed},
		{name: "held: later second AddAfter", processing: true, doneAt: sec(1), adds: func(s *Scheduler[string]) {
			s.AddAfter("a", sec(5))
			s.AddAfter("a", sec(10))
		}, readyAt: sec(5), reason: WaitDelayed},
		{name: "held: Add after AddAfter", processing: true, doneAt: sec(1), adds: func(s *Scheduler[string]) {
			s.AddAfter("a", sec(5))
			s.Add("a")
		}, readyAt: sec(1), reason: WaitHeld},
		{name: "held: delay ends during the run", processing: true, doneAt: sec(7), adds: func(s *Scheduler[string]) {
			s.AddAfter("a", sec(5))
		}, readyAt: sec(7), reason: WaitHeld, single: true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			s, fc := newFake(t, Config[string]{Name: "test", RateLimiter: testutil.ExpLimiter(time.Second, time.Minute)})
			if tc.processing {
				s.Add("a")
				mustGetKey(t, s, "a")
			}
			tc.adds(s)
			if tc.processing {
				mustBeEmpty(t, s)
				fc.Step(tc.doneAt)
				s.Done("a")
			}
			elapsed := fc.Since(t0)
			if rest := tc.readyAt - elapsed; rest > 0 {
				fc.Step(rest - time.Nanosecond)
				mustBeEmpty(t, s)
				fc.Step(time.Nanosecond)
			}
			if n := s.Len(); n != 1 {
				t.Fatalf("Len at t0+%v = %d, want 1", fc.Since(t0), n)
			}
			it := mustGetKey(t, s, "a")
			if want := t0.Add(tc.readyAt); !it.ReadyAt.Equal(want) {
				t.Errorf("ReadyAt = t0+%v, want t0+%v", it.ReadyAt.Sub(t0), tc.readyAt)
			}
			if it.Reason != tc.reason {
				t.Errorf("Reason = %v, want %v", it.Reason, tc.reason)
			}
			wantCoalesced := 1
			if tc.single {
				wantCoalesced = 0
			}
			if it.Coalesced != wantCoalesced {
				t.Errorf("Coalesced = %d, want %d", it.Coalesced, wantCoalesced)
			}
			s.Done("a")
			// One run only: nothing left behind in the delay heap.
			if st := s.Stats(); st.Delayed != 0 || st.Held != 0 {
				t.Fatalf("Stats = %+v, want nothing delayed or held", st)
			}
			fc.Step(time.Minute)
			mustBeEmpty(t, s)
		})
	}
}

func TestAddAfterHugeDelay(t *testing.T) {
	// A delay beyond the int64 nanoseconds left on the clock must not wrap
	// around into the past.
	for _, d := range []time.Duration{math.MaxInt64, math.MaxInt64 - time.Second, 200 * 365 * 24 * time.Hour} {
		t.Run(d.String(), func(t *testing.T) {
			s, fc := newFake(t, Config[string]{Name: "test", RateLimiter: &fixedLimiter{delay: d, whens: map[string]int{}}})
			fc.Step(time.Hour) // the queue has been up for an hour
			s.AddAfter("a", d)
			s.AddRateLimited("b")
			fc.Step(time.Hour)
			mustBeEmpty(t, s)
			if st := s.Stats(); st.Delayed != 2 {
				t.Fatalf("Delayed = %d, want 2", st.Delayed)
			}
		})
	}
}

// checkedClock is a fake clock that counts how often a timer is re-armed
// while its channel still holds a tick nobody read. FakeClock.Step sends
// such a timer's next tick with a blocking send, under the fake clock's
// lock: if the delay loop then needs the clock (Since, Reset or Stop)
// before it reads the channel, Step and the loop wait for each other
// forever. FuzzModel hit exactly that deadlock.
type checkedClock struct {
	*testingclock.FakeClock
	mu          sync.Mutex
	staleResets int
}

func (c *checkedClock) NewTimer(d time.Duration) clock.Timer {
	return &checkedTimer{Timer: c.FakeClock.NewTimer(d), c: c}
}

func (c *checkedClock) stale() int {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.staleResets
}

type checkedTimer struct {
	clock.Timer
	c *checkedClock
}

func (t *checkedTimer) Reset(d time.Duration) bool {
	if len(t.C()) > 0 {
		t.c.mu.Lock()
		t.c.staleResets++
		t.c.mu.Unlock()
	}
	return t.Timer.Reset(d)
}

func TestDelayLoopDrainsItsTimer(t *testing.T) {
	fc := &checkedClock{FakeClock: testingclock.NewFakeClock(t0)}
	s := New(Config[string]{Name: "test", Clock: fc})
	t.Cleanup(s.ShutDown)
	s.AddAfter("a", time.Second)
	s.AddAfter("b", 10*time.Second)
	waitTimer(t, fc.FakeClock)
	testutil.WaitBlocked(t, "delayLoop", "select", 1)

	// Wake the loop, and keep it from running until its timer has fired:
	// the tick stays in the channel.
	s.mu.Lock()
	s.kick <- struct{}{}
	testutil.WaitBlocked(t, "delayLoop", "sync.Mutex.Lock", 1)
	fc.Step(time.Second)
	s.mu.Unlock()

	// The loop promotes a and re-arms its timer for b.
	testutil.WaitFor(t, "a to be promoted", func() bool { return s.Stats().Depth == 1 })
	testutil.WaitBlocked(t, "delayLoop", "select", 1)
	if n := fc.stale(); n != 0 {
		t.Fatalf("the delay loop re-armed its timer %d times over an unread tick", n)
	}
	stepped := make(chan struct{})
	go func() {
		fc.Step(9 * time.Second)
		close(stepped)
	}()
	testutil.Receive(t, stepped, "Step to return")
	mustGetKey(t, s, "a")
	mustGetKey(t, s, "b")
	s.Done("a")
	s.Done("b")
}

// TestDelayedFIFOAtOneInstant: keys that become ready at the same instant
// are handed out in the order they were added, as controller-runtime's
// priority queue does (one AddWithOptions of many keys with After, or
// AddAfter calls on a fake clock), also when keys due at other instants
// are added between them.
func TestDelayedFIFOAtOneInstant(t *testing.T) {
	s, fc := newFake(t, named())
	var want []string
	for i := range 40 {
		key := fmt.Sprintf("k%02d", i)
		switch i % 3 {
		case 0:
			s.AddAfter(key, time.Second)
			want = append(want, key)
		case 1:
			s.AddWithOptions(context.Background(), AddOptions{After: time.Second}, key)
			want = append(want, key)
		default:
			s.AddAfter("later-"+key, 2*time.Second) // a later instant in between
		}
	}
	fc.Step(time.Second)
	for _, key := range want {
		mustGetKey(t, s, key)
		s.Done(key)
	}
	mustBeEmpty(t, s)

	batch := []string{"b0", "b1", "b2", "b3", "b4", "b5", "b6", "b7", "b8", "b9"}
	s.AddWithOptions(context.Background(), AddOptions{After: time.Second}, batch...)
	fc.Step(time.Second) // the "later-" keys and the batch are due at once
	for i := range 40 {
		if i%3 == 2 {
			key := fmt.Sprintf("later-k%02d", i)
			mustGetKey(t, s, key)
			s.Done(key)
		}
	}
	for _, key := range batch {
		mustGetKey(t, s, key)
		s.Done(key)
	}
}
