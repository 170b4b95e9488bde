package otelqueue_test

import (
	"context"
	"errors"
	"runtime"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	metricnoop "go.opentelemetry.io/otel/metric/noop"

	"github.com/otelqueue/otelqueue/internal/testutil"
	"github.com/otelqueue/otelqueue/otelqueue"
	"github.com/otelqueue/otelqueue/scheduler"
)

func okReconcile(context.Context, string) (otelqueue.Result, error) { return otelqueue.Result{}, nil }

// TestNewRunnerValidation checks that NewRunner rejects a nil queue, fewer
// than one worker and a nil reconcile, saying which, all at once.
func TestNewRunnerValidation(t *testing.T) {
	q := scheduler.New(scheduler.Config[string]{})
	t.Cleanup(q.ShutDown)
	for _, tc := range []struct {
		name      string
		queue     *scheduler.Scheduler[string]
		workers   int
		reconcile otelqueue.ReconcileFunc[string]
		want      []string
	}{
		{"nil queue", nil, 1, okReconcile, []string{"otelqueue: NewRunner needs a scheduler, got nil"}},
		{"zero workers", q, 0, okReconcile, []string{"otelqueue: NewRunner needs at least 1 worker, got 0"}},
		{"negative workers", q, -3, okReconcile, []string{"otelqueue: NewRunner needs at least 1 worker, got -3"}},
		{"nil reconcile", q, 1, nil, []string{"otelqueue: NewRunner needs a reconcile function, got nil"}},
		{"everything wrong", nil, 0, nil, []string{"needs a scheduler", "at least 1 worker, got 0", "needs a reconcile function"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			r, err := newRunner(tc.queue, tc.workers, tc.reconcile)
			if err == nil || r != nil {
				t.Fatalf("NewRunner = %v, %v; want an error", r, err)
			}
			for _, w := range tc.want {
				if !strings.Contains(err.Error(), w) {
					t.Errorf("error %q does not say %q", err, w)
				}
			}
			if n := strings.Count(err.Error(), "otelqueue: "); n != len(tc.want) {
				t.Errorf("error %q reports %d problems, want %d", err, n, len(tc.want))
			}
		})
	}
	if r, err := newRunner(q, 1, okReconcile); err != nil || r == nil {
		t.Errorf("NewRunner on an uninstrumented queue = %v, %v; want a Runner", r, err)
	}
}

// TestRunnerConcurrency checks that N workers reconcile up to N keys at once,
// never more, and that ActiveWorkers reports them.
func TestRunnerConcurrency(t *testing.T) {
	const workers = 3
	e := newEnv(t, envConfig{})
	var running, most atomic.Int32
	started := make(chan string, 10)
	release := make(chan struct{})
	r, err := newRunner(e.q, workers, func(_ context.Context, key string) (otelqueue.Result, error) {
		n := running.Add(1)
		for m := most.Load(); n > m && !most.CompareAndSwap(m, n); m = most.Load() {
		}
		started <- key
		<-release
		running.Add(-1)
		return otelqueue.Result{}, nil
	})
	if err != nil {
		t.Fatal(err)
	}
	keys := []string{"a", "b", "c", "d", "e"}
	for _, k := range keys {
		e.q.Add(k)
	}
	stop := runRunner(t, r)

	seen := map[string]bool{}
	for range workers {
		seen[testutil.Receive(t, started, "a reconcile")] = true
	}
	// Every worker is busy: the other two keys stay in the queue.
	testutil.WaitFor(t, "three active workers", func() bool { return r.Stats().ActiveWorkers == workers })
	if st := e.q.Stats(); st.InFlight != workers || st.Depth != len(keys)-workers {
		t.Errorf("queue in flight %d, depth %d; want %d, %d", st.InFlight, st.Depth, workers, len(keys)-workers)
	}
	close(release)
	for range len(keys) - workers {
		seen[testutil.Receive(t, started, "a reconcile")] = true
	}
	testutil.WaitFor(t, "five successes", func() bool { return r.Stats().Count(otelqueue.OutcomeSuccess) == uint64(len(keys)) })
	testutil.WaitFor(t, "no active worker", func() bool { return r.Stats().ActiveWorkers == 0 })
	stop()
	if len(seen) != len(keys) {
		t.Errorf("reconciled %v, want each of %v once", seen, keys)
	}
	if m := most.Load(); m != workers {
		t.Errorf("at most %d reconciles ran at once, want %d", m, workers)
	}
}

// TestRunnerSameKeyNeverConcurrent checks that a key added while it is
// reconciled runs once more afterwards, never on two workers at once.
func TestRunnerSameKeyNeverConcurrent(t *testing.T) {
	e := newEnv(t, envConfig{})
	started := make(chan struct{}, 10)
	release := make(chan struct{}, 10)
	var running, calls atomic.Int32
	r, err := newRunner(e.q, 4, func(context.Context, string) (otelqueue.Result, error) {
		if running.Add(1) > 1 {
			t.Error("the same key is reconciled twice at once")
		}
		calls.Add(1)
		started <- struct{}{}
		<-release
		running.Add(-1)
		return otelqueue.Result{}, nil
	})
	if err != nil {
		t.Fatal(err)
	}
	e.q.Add("a")
	runRunner(t, r)
	testutil.Receive(t, started, "the first reconcile")
	e.q.Add("a")
	e.q.Add("a")
	release <- struct{}{}
	testutil.Receive(t, started, "the second reconcile")
	release <- struct{}{}
	testutil.WaitFor(t, "two successes", func() bool { return r.Stats().Count(otelqueue.OutcomeSuccess) == 2 && e.q.Stats().InFlight == 0 })
	if n := calls.Load(); n != 2 {
		t.Errorf("%d reconciles, want 2", n)
	}
}

// TestRunnerResults checks what the Runner does with each outcome: Requeue
// goes through the rate limiter (AddRateLimited), RequeueAfter forgets the
// failures and waits its delay (Forget + AddAfter), an error goes through the
// rate limiter with growing backoff, and success forgets.
func TestRunnerResults(t *testing.T) {
	type outcome struct {
		res otelqueue.Result
		err error
	}
	// run makes a Runner whose reconcile of "k" returns the given outcomes in
	// turn, then succeeds; it reports each call on the returned channel.
	run := func(t *testing.T, outcomes ...outcome) (*env, *otelqueue.Runner[string], chan int) {
		e := newEnv(t, envConfig{})
		calls := make(chan int, 10)
		var n atomic.Int32
		r, err := newRunner(e.q, 1, func(context.Context, string) (otelqueue.Result, error) {
			i := int(n.Add(1))
			calls <- i
			if i <= len(outcomes) {
				return outcomes[i-1].res, outcomes[i-1].err
			}
			return otelqueue.Result{}, nil
		}, otelqueue.WithRunnerClock(e.clock))
		if err != nil {
			t.Fatal(err)
		}
		e.q.Add("k")
		runRunner(t, r)
		return e, r, calls
	}
	// settled waits until call n of the reconcile is done with the queue.
	settled := func(t *testing.T, e *env, calls chan int, n int) {
		t.Helper()
		if got := testutil.Receive(t, calls, "a reconcile"); got != n {
			t.Fatalf("call %d, want %d", got, n)
		}
		testutil.WaitFor(t, "the Done", func() bool { return e.q.Stats().InFlight == 0 })
	}
	// notYet checks that the key still waits for its delay.
	notYet := func(t *testing.T, e *env) {
		t.Helper()
		if st := e.q.Stats(); st.Delayed != 1 || st.Depth != 0 || st.InFlight != 0 {
			t.Fatalf("queue %+v, want the key delayed", st)
		}
	}

	t.Run("requeue", func(t *testing.T) {
		e, r, calls := run(t, outcome{res: otelqueue.Result{Requeue: true}}, outcome{res: otelqueue.Result{Requeue: true}})
		settled(t, e, calls, 1)
		notYet(t, e)
		if n := e.q.NumRequeues("k"); n != 1 {
			t.Errorf("NumRequeues after a Requeue = %d, want 1", n)
		}
		e.step(time.Second) // first backoff
		settled(t, e, calls, 2)
		e.step(time.Second) // the second backoff is 2s
		notYet(t, e)
		e.step(time.Second)
		settled(t, e, calls, 3)
		if n := e.q.NumRequeues("k"); n != 0 {
			t.Errorf("NumRequeues after success = %d, want 0 (forgotten)", n)
		}
		testutil.WaitFor(t, "the results", func() bool {
			return r.Stats() == otelqueue.RunnerStatsOf(1, outcomeCounts{otelqueue.OutcomeRequeue: 2, otelqueue.OutcomeSuccess: 1})
		})
	})

	t.Run("requeue after", func(t *testing.T) {
		e, r, calls := run(t,
			outcome{err: errors.New("boom")}, // a failure for RequeueAfter to forget
			outcome{res: otelqueue.Result{RequeueAfter: 30 * time.Second, Requeue: true}})
		settled(t, e, calls, 1)
		e.step(time.Second)
		settled(t, e, calls, 2)
		if n := e.q.NumRequeues("k"); n != 0 {
			t.Errorf("NumRequeues after RequeueAfter = %d, want 0 (forgotten)", n)
		}
		e.step(29 * time.Second) // RequeueAfter takes precedence over Requeue
		notYet(t, e)
		e.step(time.Second)
		settled(t, e, calls, 3)
		testutil.WaitFor(t, "the results", func() bool {
			return r.Stats() == otelqueue.RunnerStatsOf(1, outcomeCounts{otelqueue.OutcomeError: 1, otelqueue.OutcomeRequeueAfter: 1, otelqueue.OutcomeSuccess: 1})
		})
		if st := e.q.Stats(); st.Retries != 2 {
			t.Errorf("retries %d, want 2 (one AddRateLimited, one AddAfter)", st.Retries)
		}
	})

	t.Run("error", func(t *testing.T) {
		e, r, calls := run(t, outcome{err: errors.New("one")}, outcome{err: errors.New("two")})
		settled(t, e, calls, 1)
		notYet(t, e)
		e.step(time.Second)
		settled(t, e, calls, 2)
		if n := e.q.NumRequeues("k"); n != 2 {
			t.Errorf("NumRequeues after two errors = %d, want 2", n)
		}
		e.step(time.Second) // backoff doubled: not yet
		notYet(t, e)
		e.step(time.Second)
		settled(t, e, calls, 3)
		testutil.WaitFor(t, "the results", func() bool {
			return r.Stats() == otelqueue.RunnerStatsOf(1, outcomeCounts{otelqueue.OutcomeError: 2, otelqueue.OutcomeSuccess: 1})
		})
	})

	t.Run("error wins over result", func(t *testing.T) {
		e, r, calls := run(t, outcome{res: otelqueue.Result{RequeueAfter: time.Hour}, err: errors.New("boom")})
		settled(t, e, calls, 1)
		e.step(time.Second) // the rate limiter's backoff, not the hour
		settled(t, e, calls, 2)
		testutil.WaitFor(t, "the results", func() bool {
			return r.Stats() == otelqueue.RunnerStatsOf(1, outcomeCounts{otelqueue.OutcomeError: 1, otelqueue.OutcomeSuccess: 1})
		})
	})
}

// TestRunnerPanic checks that a panicking reconcile is recovered, counted,
// and that its key is never lost: it comes back after the backoff, and the
// worker goes on with other keys.
func TestRunnerPanic(t *testing.T) {
	e := newEnv(t, envConfig{})
	var panics atomic.Int32
	done := make(chan string, 10)
	r, err := newRunner(e.q, 1, func(_ context.Context, key string) (otelqueue.Result, error) {
		if key == "bad" && panics.Add(1) <= 2 {
			panic("bad key")
		}
		done <- key
		return otelqueue.Result{}, nil
	}, otelqueue.WithRunnerClock(e.clock))
	if err != nil {
		t.Fatal(err)
	}
	e.q.Add("bad")
	e.q.Add("good")
	runRunner(t, r)
	if k := testutil.Receive(t, done, "the good key"); k != "good" {
		t.Fatalf("reconciled %q", k)
	}
	testutil.WaitFor(t, "the panic", func() bool { return r.Stats().Count(otelqueue.OutcomePanic) == 1 && e.q.Stats().InFlight == 0 })
	if n := e.q.NumRequeues("bad"); n != 1 {
		t.Errorf("NumRequeues after a panic = %d, want 1", n)
	}
	e.step(time.Second)
	testutil.WaitFor(t, "the second panic", func() bool { return r.Stats().Count(otelqueue.OutcomePanic) == 2 && e.q.Stats().InFlight == 0 })
	e.step(2 * time.Second)
	if k := testutil.Receive(t, done, "the bad key, at last"); k != "bad" {
		t.Fatalf("reconciled %q", k)
	}
	testutil.WaitFor(t, "the results", func() bool {
		return r.Stats() == otelqueue.RunnerStatsOf(1, outcomeCounts{otelqueue.OutcomePanic: 2, otelqueue.OutcomeSuccess: 2})
	})
}

// TestRunnerShutdown checks Run's graceful stop: after ctx is cancelled, the
// in-flight reconcile sees its ctx cancelled, Run waits for it to return,
// then shuts the queue down and returns nil.
func TestRunnerShutdown(t *testing.T) {
	e := newEnv(t, envConfig{})
	inReconcile := make(chan struct{})
	cancelled := make(chan struct{})
	release := make(chan struct{})
	var calls atomic.Int32
	r, err := newRunner(e.q, 2, func(ctx context.Context, key string) (otelqueue.Result, error) {
		calls.Add(1)
		close(inReconcile)
		<-ctx.Done()
		close(cancelled)
		<-release
		return otelqueue.Result{}, nil
	})
	if err != nil {
		t.Fatal(err)
	}
	e.q.Add("a")
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- r.Run(ctx) }()
	testutil.Receive(t, inReconcile, "the reconcile")
	cancel()
	testutil.Receive(t, cancelled, "the reconcile's ctx to be cancelled")
	select {
	case err := <-done:
		t.Fatalf("Run returned %v while a reconcile was in flight", err)
	default:
	}
	close(release)
	if err := testutil.Receive(t, done, "Run to return"); err != nil {
		t.Errorf("Run = %v, want nil", err)
	}
	if !e.q.ShuttingDown() {
		t.Error("Run returned without shutting the queue down")
	}
	if st := e.q.Stats(); st.InFlight != 0 {
		t.Errorf("%d keys in flight after Run", st.InFlight)
	}
	if n := calls.Load(); n != 1 {
		t.Errorf("%d reconciles, want 1", n)
	}
	if r.Stats().Count(otelqueue.OutcomeSuccess) != 1 {
		t.Errorf("Runner stats %+v", r.Stats())
	}
}

// TestRunnerStopsWhenQueueShutsDown checks that Run returns when the queue is
// shut down under it, with its ctx still live. (Run on a queue shut down
// before it starts is an error: TestRunnerRunContract.)
func TestRunnerStopsWhenQueueShutsDown(t *testing.T) {
	e := newEnv(t, envConfig{})
	running := make(chan struct{}, 1)
	r, err := newRunner(e.q, 3, func(context.Context, string) (otelqueue.Result, error) {
		running <- struct{}{}
		return otelqueue.Result{}, nil
	})
	if err != nil {
		t.Fatal(err)
	}
	done := make(chan error, 1)
	var wg sync.WaitGroup
	wg.Go(func() { done <- r.Run(context.Background()) })
	e.q.Add("a")
	testutil.Receive(t, running, "Run to be running")
	e.q.ShutDown()
	if err := testutil.Receive(t, done, "Run to return"); err != nil {
		t.Errorf("Run = %v, want nil", err)
	}
	wg.Wait()
}

// TestRunnerAdaptiveStartsWhatThePoolLets: a Runner with an adaptive pool
// of Max 50,000 starts the goroutines its pool lets take keys, not 50,000
// (90 MB of stacks in 2 s).
func TestRunnerAdaptiveStartsWhatThePoolLets(t *testing.T) {
	q := scheduler.New(scheduler.Config[string]{Name: "wide"})
	inst, err := otelqueue.Instrument(q, otelqueue.WithMeterProvider(metricnoop.NewMeterProvider()))
	if err != nil {
		t.Fatal(err)
	}
	defer inst.Stop()
	before := runtime.NumGoroutine()
	r, err := otelqueue.NewRunner(q, 2, func(context.Context, string) (otelqueue.Result, error) { return otelqueue.Result{}, nil },
		otelqueue.AdaptiveWorkers{Min: 1, Max: 50000, Interval: time.Hour})
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error)
	go func() { done <- r.Run(ctx) }()
	q.Add("a")
	time.Sleep(100 * time.Millisecond)
	if n := runtime.NumGoroutine() - before; n > 20 {
		t.Errorf("%d goroutines more with the Runner running, want about 2 workers and the pool", n)
	}
	cancel()
	if err := <-done; err != nil {
		t.Fatal(err)
	}
}
