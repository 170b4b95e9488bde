package scheduler

import (
	"context"
	"errors"
	"testing"
	"time"

	"k8s.io/client-go/util/workqueue"

	"github.com/otelqueue/otelqueue/internal/testutil"
)

// The scheduler drops into client-go controllers.
var _ workqueue.TypedRateLimitingInterface[int] = New(Config[int]{})

func TestZeroConfig(t *testing.T) {
	// The zero Config: real clock, default rate limiter, unnamed.
	s := New(Config[string]{})
	defer s.ShutDown()
	if s.Name() != "" {
		t.Errorf("Name = %q, want empty", s.Name())
	}
	s.Add("a")
	key, shutdown := s.Get()
	if key != "a" || shutdown {
		t.Fatalf("Get = %q, %v; want a, false", key, shutdown)
	}
	s.Done("a")
	if n := s.Len(); n != 0 {
		t.Fatalf("Len = %d, want 0", n)
	}
}

func TestName(t *testing.T) {
	s, _ := newFake(t, Config[string]{Name: "pods"})
	if s.Name() != "pods" {
		t.Errorf("Name = %q, want pods", s.Name())
	}
}

func TestFIFO(t *testing.T) {
	s, _ := newFake(t, named())
	for _, k := range []string{"c", "a", "b"} {
		s.Add(k)
	}
	if n := s.Len(); n != 3 {
		t.Fatalf("Len = %d, want 3", n)
	}
	for _, want := range []string{"c", "a", "b"} {
		key, shutdown := s.Get()
		if shutdown || key != want {
			t.Fatalf("Get = %q, %v; want %q, false", key, shutdown, want)
		}
		s.Done(key)
	}
	mustBeEmpty(t, s)
}

func TestDedupWhileQueued(t *testing.T) {
	for _, tc := range []struct {
		name     string
		adds     []string
		wantKeys []string
	}{
		{"one key thrice", []string{"a", "a", "a"}, []string{"a"}},
		{"interleaved", []string{"a", "b", "a", "b", "c"}, []string{"a", "b", "c"}},
		{"distinct", []string{"a", "b"}, []string{"a", "b"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			s, _ := newFake(t, named())
			for _, k := range tc.adds {
				s.Add(k)
			}
			if n := s.Len(); n != len(tc.wantKeys) {
				t.Fatalf("Len = %d, want %d", n, len(tc.wantKeys))
			}
			st := s.Stats()
			if st.Adds != uint64(len(tc.wantKeys)) || st.Coalesced != uint64(len(tc.adds)-len(tc.wantKeys)) {
				t.Errorf("Adds, Coalesced = %d, %d; want %d, %d", st.Adds, st.Coalesced, len(tc.wantKeys), len(tc.adds)-len(tc.wantKeys))
			}
			for _, want := range tc.wantKeys {
				it := mustGetKey(t, s, want)
				s.Done(it.Key)
			}
			mustBeEmpty(t, s)
		})
	}
}

func TestAddWhileProcessing(t *testing.T) {
	for _, tc := range []struct {
		name string
		add  func(s *Scheduler[string])
	}{
		{"Add", func(s *Scheduler[string]) { s.Add("a") }},
		{"Add twice", func(s *Scheduler[string]) { s.Add("a"); s.Add("a") }},
		{"AddContext", func(s *Scheduler[string]) { s.AddContext(spanCtx(1), "a") }},
		{"AddAfter 0", func(s *Scheduler[string]) { s.AddAfter("a", 0) }},
	} {
		t.Run(tc.name, func(t *testing.T) {
			s, _ := newFake(t, named())
			s.Add("a")
			mustGetKey(t, s, "a")

			tc.add(s)
			// Not handed out again while processed.
			mustBeEmpty(t, s)
			if st := s.Stats(); st.Held != 1 || st.InFlight != 1 || st.Depth != 0 {
				t.Fatalf("Stats = %+v, want Held 1, InFlight 1, Depth 0", st)
			}

			s.Done("a")
			if n := s.Len(); n != 1 {
				t.Fatalf("Len after Done = %d, want 1", n)
			}
			mustGetKey(t, s, "a")
			// Exactly once.
			s.Done("a")
			mustBeEmpty(t, s)
			if st := s.Stats(); st.Held != 0 || st.InFlight != 0 {
				t.Fatalf("Stats = %+v, want nothing held or in flight", st)
			}
		})
	}
}

func TestDoneWakesBlockedGet(t *testing.T) {
	s, _ := newFake(t, named())
	s.Add("a")
	mustGetKey(t, s, "a")
	s.Add("a")

	got := make(chan string)
	go func() {
		key, _ := s.Get()
		got <- key
	}()
	// The worker above blocks: the key is held until Done.
	testutil.WaitBlocked(t, "waitReadyLocked", testutil.CondWait, 1)
	select {
	case k := <-got:
		t.Fatalf("Get returned %q while the key was processed", k)
	default:
	}
	s.Done("a")
	if k := testutil.Receive(t, got, "Get after Done"); k != "a" {
		t.Fatalf("Get = %q, want a", k)
	}
	s.Done("a")
}

func TestAddWakesBlockedGet(t *testing.T) {
	s, _ := newFake(t, named())
	got := make(chan Item[string])
	go func() {
		it, err := s.GetContext(context.Background())
		if err != nil {
			t.Errorf("GetContext: %v", err)
		}
		got <- it
	}()
	testutil.WaitBlocked(t, "waitReadyLocked", testutil.CondWait, 1)
	s.Add("a")
	if it := testutil.Receive(t, got, "GetContext"); it.Key != "a" {
		t.Fatalf("key = %q, want a", it.Key)
	}
	s.Done("a")
}

func TestDoneOfUnknownKey(t *testing.T) {
	s, _ := newFake(t, named())
	obs := newRecObserver[string]()
	s.SetObserver(obs)

	s.Done("never-added") // nothing at all
	s.Add("queued")
	s.Done("queued") // queued, not processed: stays queued
	if n := s.Len(); n != 1 {
		t.Fatalf("Len = %d, want 1", n)
	}
	it := mustGetKey(t, s, "queued")
	s.Done(it.Key)
	s.Done(it.Key) // a second Done does nothing
	s.Done("never-added")
	mustBeEmpty(t, s)
	st := s.Stats()
	if st.InFlight != 0 || st.Depth != 0 || st.Held != 0 || st.Delayed != 0 {
		t.Fatalf("Stats = %+v, want empty", st)
	}
	if _, done := obs.calls(); len(done) != 1 {
		t.Fatalf("Observer.Done called %d times, want 1", len(done))
	}
	// The key is still usable.
	s.Add("queued")
	mustGetKey(t, s, "queued")
	s.Done("queued")
}

func TestGetContextCancelWhileBlocked(t *testing.T) {
	for _, tc := range []struct {
		name    string
		cancel  func(context.CancelCauseFunc)
		wantErr error
	}{
		{"canceled", func(c context.CancelCauseFunc) { c(nil) }, context.Canceled},
		{"with cause", func(c context.CancelCauseFunc) { c(errors.New("bye")) }, context.Canceled},
	} {
		t.Run(tc.name, func(t *testing.T) {
			s, fc := newFake(t, named())
			s.AddAfter("later", time.Hour) // a delayed key must not wake it
			ctx, cancel := context.WithCancelCause(context.Background())
			errc := make(chan error)
			go func() {
				_, err := s.GetContext(ctx)
				errc <- err
			}()
			testutil.WaitBlocked(t, "waitReadyLocked", testutil.CondWait, 1)
			tc.cancel(cancel)
			if err := testutil.Receive(t, errc, "GetContext"); !errors.Is(err, tc.wantErr) {
				t.Fatalf("GetContext error = %v, want %v", err, tc.wantErr)
			}
			// Nothing was taken.
			fc.Step(time.Hour)
			mustGetKey(t, s, "later")
			if st := s.Stats(); st.InFlight != 1 {
				t.Fatalf("InFlight = %d, want 1", st.InFlight)
			}
		})
	}
}

func TestGetContextDeadlineExceeded(t *testing.T) {
	s, _ := newFake(t, named())
	ctx, cancel := context.WithDeadline(context.Background(), time.Unix(0, 0)) // already past
	defer cancel()
	errc := make(chan error, 1)
	go func() {
		_, err := s.GetContext(ctx)
		errc <- err
	}()
	if err := testutil.Receive(t, errc, "GetContext with an expired context"); !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("GetContext error = %v, want DeadlineExceeded", err)
	}
}

func TestGetContextDoneCtxStillTakesReadyKey(t *testing.T) {
	// A ready key is handed out without blocking, even to a done context.
	s, _ := newFake(t, named())
	s.Add("a")
	it, err := s.GetContext(cancelled)
	if err != nil || it.Key != "a" {
		t.Fatalf("GetContext = %q, %v; want a, nil", it.Key, err)
	}
	s.Done("a")
	if _, err := s.GetContext(cancelled); !errors.Is(err, context.Canceled) {
		t.Fatalf("GetContext on an empty queue = %v, want context.Canceled", err)
	}
}

func TestItemTimes(t *testing.T) {
	s, fc := newFake(t, named())
	s.Add("a")
	fc.Step(time.Second)
	s.Add("a") // coalesced: does not move EnqueuedAt
	fc.Step(2 * time.Second)
	it := mustGetKey(t, s, "a")
	want := Item[string]{
		Key:        "a",
		EnqueuedAt: t0,
		ReadyAt:    t0,
		DequeuedAt: t0.Add(3 * time.Second),
		Reason:     WaitImmediate,
		Coalesced:  1,
	}
	checkItem(t, it, want)
	s.Done("a")
}

// checkItem compares the fields of an Item, except its context.
func checkItem(t testing.TB, got, want Item[string]) {
	t.Helper()
	if got.Key != want.Key {
		t.Errorf("Key = %q, want %q", got.Key, want.Key)
	}
	if !got.EnqueuedAt.Equal(want.EnqueuedAt) {
		t.Errorf("EnqueuedAt = %v, want %v", got.EnqueuedAt, want.EnqueuedAt)
	}
	if !got.ReadyAt.Equal(want.ReadyAt) {
		t.Errorf("ReadyAt = %v, want %v", got.ReadyAt, want.ReadyAt)
	}
	if !got.DequeuedAt.Equal(want.DequeuedAt) {
		t.Errorf("DequeuedAt = %v, want %v", got.DequeuedAt, want.DequeuedAt)
	}
	if got.Reason != want.Reason {
		t.Errorf("Reason = %v, want %v", got.Reason, want.Reason)
	}
	if got.Requeues != want.Requeues {
		t.Errorf("Requeues = %d, want %d", got.Requeues, want.Requeues)
	}
	if got.Coalesced != want.Coalesced {
		t.Errorf("Coalesced = %d, want %d", got.Coalesced, want.Coalesced)
	}
	checkSpans(t, got, want)
	if !got.PreviousAttempt.Equal(want.PreviousAttempt) {
		t.Errorf("PreviousAttempt = %v, want %v", got.PreviousAttempt, want.PreviousAttempt)
	}
}

// checkSpans compares the Origin, Links and DroppedLinks of an Item.
func checkSpans(t testing.TB, got, want Item[string]) {
	t.Helper()
	if !got.Origin.Equal(want.Origin) {
		t.Errorf("Origin = %v, want %v", got.Origin, want.Origin)
	}
	if !sameSpans(got.Links, want.Links) {
		t.Errorf("Links = %v, want %v", got.Links, want.Links)
	}
	if got.DroppedLinks != want.DroppedLinks {
		t.Errorf("DroppedLinks = %d, want %d", got.DroppedLinks, want.DroppedLinks)
	}
}

func TestItemReason(t *testing.T) {
	sec := func(n float64) time.Time { return t0.Add(time.Duration(n * float64(time.Second))) }
	for _, tc := range []struct {
		name string
		cfg  Config[string]
		// run adds "a", moves the clock until "a" is ready, and returns
		// the item.
		run  func(t *testing.T, s *Scheduler[string], step func(time.Duration)) Item[string]
		want Item[string]
	}{{
		name: "immediate",
		cfg:  named(),
		run: func(t *testing.T, s *Scheduler[string], step func(time.Duration)) Item[string] {
			s.Add("a")
			step(time.Second) // congestion: still immediate
			return mustGet(t, s)
		},
		want: Item[string]{Key: "a", EnqueuedAt: t0, ReadyAt: t0, DequeuedAt: sec(1), Reason: WaitImmediate},
	}, {
		name: "delayed",
		cfg:  named(),
		run: func(t *testing.T, s *Scheduler[string], step func(time.Duration)) Item[string] {
			s.AddAfter("a", 2*time.Second)
			step(3 * time.Second)
			return mustGet(t, s)
		},
		want: Item[string]{Key: "a", EnqueuedAt: t0, ReadyAt: sec(2), DequeuedAt: sec(3), Reason: WaitDelayed},
	}, {
		name: "rate limited",
		cfg:  Config[string]{Name: "test", RateLimiter: testutil.ExpLimiter(time.Second, time.Minute)},
		run: func(t *testing.T, s *Scheduler[string], step func(time.Duration)) Item[string] {
			s.AddRateLimited("a")
			step(time.Second)
			return mustGet(t, s)
		},
		want: Item[string]{Key: "a", EnqueuedAt: t0, ReadyAt: sec(1), DequeuedAt: sec(1), Reason: WaitRateLimited, Requeues: 1},
	}, {
		name: "debounced",
		cfg:  Config[string]{Name: "test", Debounce: time.Second},
		run: func(t *testing.T, s *Scheduler[string], step func(time.Duration)) Item[string] {
			s.Add("a")
			step(time.Second)
			return mustGet(t, s)
		},
		want: Item[string]{Key: "a", EnqueuedAt: t0, ReadyAt: sec(1), DequeuedAt: sec(1), Reason: WaitDebounced},
	}, {
		name: "held",
		cfg:  named(),
		run: func(t *testing.T, s *Scheduler[string], step func(time.Duration)) Item[string] {
			s.Add("a")
			mustGet(t, s)
			step(time.Second)
			s.Add("a") // at 1s, while processed
			step(time.Second)
			s.Done("a") // at 2s
			step(time.Second)
			return mustGet(t, s)
		},
		want: Item[string]{Key: "a", EnqueuedAt: sec(1), ReadyAt: sec(2), DequeuedAt: sec(3), Reason: WaitHeld},
	}, {
		name: "held, delay longer than the run",
		cfg:  named(),
		run: func(t *testing.T, s *Scheduler[string], step func(time.Duration)) Item[string] {
			s.Add("a")
			mustGet(t, s)
			s.AddAfter("a", 5*time.Second) // ready at 5s
			step(time.Second)
			s.Done("a") // at 1s: the delay goes on
			step(4 * time.Second)
			return mustGet(t, s)
		},
		want: Item[string]{Key: "a", EnqueuedAt: t0, ReadyAt: sec(5), DequeuedAt: sec(5), Reason: WaitDelayed},
	}, {
		name: "held, delay shorter than the run",
		cfg:  named(),
		run: func(t *testing.T, s *Scheduler[string], step func(time.Duration)) Item[string] {
			s.Add("a")
			mustGet(t, s)
			s.AddAfter("a", time.Second) // ready at 1s, but processed until 3s
			step(3 * time.Second)
			s.Done("a")
			return mustGet(t, s)
		},
		want: Item[string]{Key: "a", EnqueuedAt: t0, ReadyAt: sec(3), DequeuedAt: sec(3), Reason: WaitHeld},
	}, {
		name: "delayed, then added at once",
		cfg:  named(),
		run: func(t *testing.T, s *Scheduler[string], step func(time.Duration)) Item[string] {
			s.AddAfter("a", 10*time.Second)
			step(time.Second)
			s.Add("a")
			step(time.Second)
			return mustGet(t, s)
		},
		want: Item[string]{Key: "a", EnqueuedAt: t0, ReadyAt: sec(1), DequeuedAt: sec(2), Reason: WaitImmediate, Coalesced: 1},
	}} {
		t.Run(tc.name, func(t *testing.T) {
			s, fc := newFake(t, tc.cfg)
			it := tc.run(t, s, fc.Step)
			checkItem(t, it, tc.want)
			if it.Reason.String() != tc.want.Reason.String() {
				t.Errorf("Reason.String() = %q, want %q", it.Reason, tc.want.Reason)
			}
			s.Done(it.Key)
		})
	}
}

func TestWaitReasonString(t *testing.T) {
	for r, want := range map[WaitReason]string{
		WaitImmediate:   "immediate",
		WaitDelayed:     "delayed",
		WaitRateLimited: "rate_limited",
		WaitDebounced:   "debounced",
		WaitHeld:        "held",
		WaitHeld + 1:    "unknown",
		255:             "unknown",
	} {
		if got := r.String(); got != want {
			t.Errorf("WaitReason(%d).String() = %q, want %q", r, got, want)
		}
	}
}

func TestItemContext(t *testing.T) {
	var zero Item[string]
	if zero.Context() == nil {
		t.Fatal("zero Item: Context() is nil")
	}

	s, _ := newFake(t, Config[string]{})
	type ctxKey struct{}
	ctx := context.WithValue(context.Background(), ctxKey{}, "mine")
	s.Add("a")
	it, err := s.GetContext(ctx)
	if err != nil {
		t.Fatal(err)
	}
	// No Observer: the context given to GetContext.
	if it.Context().Value(ctxKey{}) != "mine" {
		t.Errorf("Item.Context() is not the context given to GetContext")
	}
	s.Done("a")
}

func TestUnnamedQueueIsUntimed(t *testing.T) {
	s, fc := newFake(t, Config[string]{})
	s.Add("a")
	fc.Step(time.Second)
	s.Add("a")
	s.AddAfter("b", time.Second)
	fc.Step(time.Second)
	s.Add("c")
	mustGet(t, s)
	fc.Step(time.Second)

	st := s.Stats()
	if st.OldestPending != 0 || st.UnfinishedWork != 0 || st.LongestRunning != 0 {
		t.Errorf("ages = %v, %v, %v; want zero for an unnamed queue", st.OldestPending, st.UnfinishedWork, st.LongestRunning)
	}
	if st.Depth != 2 || st.InFlight != 1 || st.Adds != 3 || st.Coalesced != 1 || st.Retries != 1 {
		t.Errorf("Stats = %+v, want Depth 2, InFlight 1, Adds 3, Coalesced 1, Retries 1", st)
	}
	for i := 0; i < 2; i++ {
		it := mustGet(t, s)
		if !it.EnqueuedAt.IsZero() || !it.ReadyAt.IsZero() || !it.DequeuedAt.IsZero() {
			t.Errorf("%s: times %v, %v, %v; want zero", it.Key, it.EnqueuedAt, it.ReadyAt, it.DequeuedAt)
		}
	}
	s.Done("a")
	s.Done("b")
	s.Done("c")
	// It still delays, holds and deduplicates.
	s.Add("a")
	mustGetKey(t, s, "a")
	s.Add("a")
	mustBeEmpty(t, s)
	s.Done("a")
	mustGetKey(t, s, "a")
	s.Done("a")
	s.AddAfter("d", time.Second)
	mustBeEmpty(t, s)
	fc.Step(time.Second)
	mustGetKey(t, s, "d")
	s.Done("d")
}
