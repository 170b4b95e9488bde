package otelqueue_test

import (
	"context"
	"fmt"
	"log/slog"
	"maps"
	"net/http"
	"runtime"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"testing/synctest"
	"time"

	"github.com/otelqueue/otelqueue/inspect"

	"github.com/otelqueue/otelqueue/internal/semconv"

	"go.opentelemetry.io/otel/attribute"
	metricnoop "go.opentelemetry.io/otel/metric/noop"
	"go.opentelemetry.io/otel/sdk/metric/metricdata"
	tracenoop "go.opentelemetry.io/otel/trace/noop"
	"k8s.io/utils/clock"
	testingclock "k8s.io/utils/clock/testing"

	"github.com/otelqueue/otelqueue/internal/testutil"
	"github.com/otelqueue/otelqueue/otelqueue"
	"github.com/otelqueue/otelqueue/scheduler"
)

// noopProviders instrument a queue with no SDK, for the tests that check
// only what Instrument accepts.
var noopProviders = []otelqueue.Option{
	otelqueue.WithMeterProvider(metricnoop.NewMeterProvider()),
	otelqueue.WithTracerProvider(tracenoop.NewTracerProvider()),
}

// instrument is Instrument with noopProviders and opts.
func instrument(q *scheduler.Scheduler[string], opts ...otelqueue.Option) (*otelqueue.Instrumentation, error) {
	return otelqueue.Instrument(q, append(slices.Clone(noopProviders), opts...)...)
}

// cancelled returns a context that is done: Run with it returns at once
// whether it fails or runs (a Run that should fail but runs does not hang
// the test).
func cancelled() context.Context {
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	return ctx
}

// wantErrs checks that err is an otelqueue error that says every one of
// want.
func wantErrs(t *testing.T, what string, err error, want ...string) {
	t.Helper()
	if err == nil {
		t.Errorf("%s succeeded, want an error saying %q", what, want)
		return
	}
	if !strings.HasPrefix(err.Error(), "otelqueue: ") {
		t.Errorf("%s = %q, want an otelqueue error", what, err)
	}
	for _, w := range want {
		if !strings.Contains(err.Error(), w) {
			t.Errorf("%s = %q, want it to say %q", what, err, w)
		}
	}
}

// TestAdaptiveWorkersInvalid checks that NewRunner and Instrument refuse
// AdaptiveWorkers that cannot be used, saying what is wrong, all at once,
// and that a refused Instrument leaves the queue as it was.
func TestAdaptiveWorkersInvalid(t *testing.T) {
	for _, tc := range []struct {
		name string
		a    otelqueue.AdaptiveWorkers
		want []string
	}{
		{"Min 0", otelqueue.AdaptiveWorkers{Max: 4}, []string{"otelqueue: AdaptiveWorkers needs Min of at least 1, got 0"}},
		{"negative Min", otelqueue.AdaptiveWorkers{Min: -2, Max: 4}, []string{"AdaptiveWorkers needs Min of at least 1, got -2"}},
		{"Max under Min", otelqueue.AdaptiveWorkers{Min: 4, Max: 2}, []string{"AdaptiveWorkers needs Max of at least Min (4), got 2"}},
		{"Start under Min", otelqueue.AdaptiveWorkers{Min: 2, Max: 4, Start: 1}, []string{"AdaptiveWorkers.Start 1 is outside [Min, Max] = [2, 4]"}},
		{"Start over Max", otelqueue.AdaptiveWorkers{Min: 2, Max: 4, Start: 5}, []string{"AdaptiveWorkers.Start 5 is outside [Min, Max] = [2, 4]"}},
		{"negative Interval", otelqueue.AdaptiveWorkers{Min: 1, Max: 4, Interval: -time.Second}, []string{"AdaptiveWorkers.Interval must not be negative, got -1s"}},
		{"negative WaitObjective", otelqueue.AdaptiveWorkers{Min: 1, Max: 4, WaitObjective: -time.Millisecond}, []string{"AdaptiveWorkers.WaitObjective must not be negative, got -1ms"}},
		{"everything wrong", otelqueue.AdaptiveWorkers{Max: -1, Start: 3, Interval: -1, WaitObjective: -1},
			[]string{"Min of at least 1, got 0", "Max of at least Min (0), got -1", "Start 3 is outside", "Interval must not be negative", "WaitObjective must not be negative"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			q := scheduler.New(scheduler.Config[string]{Name: queueName})
			defer q.ShutDown()
			r, err := otelqueue.NewRunner(q, max(tc.a.Min, 1), okReconcile, tc.a)
			if r != nil {
				t.Errorf("NewRunner returned a Runner with an error")
			}
			wantErrs(t, "NewRunner", err, tc.want...)

			inst, err := instrument(q, tc.a)
			if inst != nil {
				t.Errorf("Instrument returned an Instrumentation with an error")
				_ = inst.Stop()
			}
			wantErrs(t, "Instrument", err, tc.want...)
			if n := q.MaxInFlight(); n != 0 {
				t.Errorf("after a refused Instrument, MaxInFlight() = %d, want 0 (no limit)", n)
			}
			inst, err = instrument(q)
			if err != nil {
				t.Fatalf("Instrument after a refused one: %v", err)
			}
			_ = inst.Stop()
		})
	}
}

// TestAdaptiveWorkersDefaults checks a valid AdaptiveWorkers through
// Instrument: the pool starts at Start, or at Min without one, limits the
// queue at once, and has decided nothing yet.
func TestAdaptiveWorkersDefaults(t *testing.T) {
	for _, tc := range []struct {
		name string
		a    otelqueue.AdaptiveWorkers
		want inspect.Pool
	}{
		{"WithAdaptiveWorkers", otelqueue.WithAdaptiveWorkers(2, 6), inspect.Pool{Limit: 2, Min: 2, Max: 6}},
		{"Start", otelqueue.AdaptiveWorkers{Min: 1, Max: 8, Start: 5}, inspect.Pool{Limit: 5, Min: 1, Max: 8}},
		{"one", otelqueue.AdaptiveWorkers{Min: 1, Max: 1}, inspect.Pool{Limit: 1, Min: 1, Max: 1}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			q := scheduler.New(scheduler.Config[string]{Name: queueName})
			defer q.ShutDown()
			inst, err := instrument(q, tc.a)
			if err != nil {
				t.Fatal(err)
			}
			defer inst.Stop()
			st, ok := inst.AdaptiveStats()
			if !ok || st != tc.want {
				t.Errorf("AdaptiveStats() = %+v, %v; want %+v, true", st, ok, tc.want)
			}
			if n := q.MaxInFlight(); n != tc.want.Limit {
				t.Errorf("MaxInFlight() = %d, want the pool's limit %d", n, tc.want.Limit)
			}
		})
	}
	if otelqueue.DefaultAdaptiveInterval <= 0 || otelqueue.DefaultWaitObjective <= 0 {
		t.Errorf("defaults %v, %v; want positive", otelqueue.DefaultAdaptiveInterval, otelqueue.DefaultWaitObjective)
	}
}

// TestNewRunnerAdaptiveWorkerCount checks that NewRunner refuses a worker
// count (the pool's starting count) outside AdaptiveWorkers' bounds, or
// other than Start, and takes one at either bound.
func TestNewRunnerAdaptiveWorkerCount(t *testing.T) {
	q := scheduler.New(scheduler.Config[string]{Name: queueName})
	t.Cleanup(q.ShutDown)
	a := otelqueue.AdaptiveWorkers{Min: 2, Max: 4}
	for _, workers := range []int{1, 5} {
		r, err := otelqueue.NewRunner(q, workers, okReconcile, a)
		if r != nil {
			t.Errorf("NewRunner with %d workers returned a Runner with an error", workers)
		}
		wantErrs(t, fmt.Sprintf("NewRunner with %d workers", workers), err,
			fmt.Sprintf("NewRunner's %d workers, the adaptive pool's starting count, are outside AdaptiveWorkers' [Min, Max] = [2, 4]", workers))
	}
	for _, workers := range []int{2, 4} {
		if _, err := otelqueue.NewRunner(q, workers, okReconcile, a); err != nil {
			t.Errorf("NewRunner with %d workers: %v", workers, err)
		}
	}
	// A Runner starts at its worker count: Start is 0 or that count.
	_, err := otelqueue.NewRunner(q, 3, okReconcile, otelqueue.AdaptiveWorkers{Min: 2, Max: 4, Start: 2})
	wantErrs(t, "NewRunner with 3 workers and Start 2", err, "AdaptiveWorkers.Start 2 differs from NewRunner's 3 workers")
	if _, err := otelqueue.NewRunner(q, 3, okReconcile, otelqueue.AdaptiveWorkers{Min: 2, Max: 4, Start: 3}); err != nil {
		t.Errorf("NewRunner with 3 workers and Start 3: %v", err)
	}
}

// TestAdaptiveRunnerNeedsInstrument checks that Run of an adaptive Runner
// on a queue that is not instrumented (never, or no longer) fails at once,
// naming the queue and Instrument, limits nothing and leaves the queue
// running; the Runner runs once the queue is instrumented.
func TestAdaptiveRunnerNeedsInstrument(t *testing.T) {
	q := scheduler.New(scheduler.Config[string]{Name: queueName})
	t.Cleanup(q.ShutDown)
	r, err := otelqueue.NewRunner(q, 2, okReconcile, otelqueue.WithAdaptiveWorkers(1, 4))
	if err != nil {
		t.Fatal(err)
	}
	run := func(what string) {
		t.Helper()
		wantErrs(t, "Run "+what, r.Run(cancelled()),
			`otelqueue: Run with AdaptiveWorkers: queue "orders" is not instrumented`, "call otelqueue.Instrument on it before Run")
		if _, ok := r.AdaptiveStats(); ok {
			t.Errorf("%s: AdaptiveStats after a failed Run reports a pool", what)
		}
		if n := q.MaxInFlight(); n != 0 {
			t.Errorf("%s: MaxInFlight() = %d after a failed Run, want 0", what, n)
		}
		if q.ShuttingDown() {
			t.Fatalf("%s: a failed Run shut the queue down", what)
		}
	}
	run("on a queue never instrumented")
	inst, err := instrument(q)
	if err != nil {
		t.Fatal(err)
	}
	if err := inst.Stop(); err != nil {
		t.Fatal(err)
	}
	run("after the Instrumentation was stopped")

	inst, err = instrument(q)
	if err != nil {
		t.Fatal(err)
	}
	defer inst.Stop()
	stop := runRunner(t, r)
	if st := waitPool(t, inst); st.Limit != 2 || q.MaxInFlight() != 2 {
		t.Errorf("Run once instrumented: %+v, MaxInFlight %d; want the limit 2", st, q.MaxInFlight())
	}
	stop()
}

// waitPool waits until the queue of inst has an adaptive pool, and returns
// its stats.
func waitPool(t *testing.T, inst *otelqueue.Instrumentation) inspect.Pool {
	t.Helper()
	var st inspect.Pool
	testutil.WaitFor(t, "the queue's adaptive pool", func() bool {
		var ok bool
		st, ok = inst.AdaptiveStats()
		return ok
	})
	return st
}

// TestAdaptiveOnePoolPerQueue checks that a queue has at most one adaptive
// pool: a second, from a Runner or from Instrument, is refused with an
// error that says so, and leaves the first in charge.
func TestAdaptiveOnePoolPerQueue(t *testing.T) {
	const taken = `otelqueue: queue "orders" has an adaptive worker pool already`
	t.Run("two Runners", func(t *testing.T) {
		e := newEnv(t, envConfig{})
		r1, err := otelqueue.NewRunner(e.q, 2, okReconcile, otelqueue.WithAdaptiveWorkers(1, 4), otelqueue.WithRunnerClock(e.clock))
		if err != nil {
			t.Fatal(err)
		}
		stop := runRunner(t, r1)
		waitPool(t, e.inst)
		r2, err := otelqueue.NewRunner(e.q, 3, okReconcile, otelqueue.WithAdaptiveWorkers(2, 8))
		if err != nil {
			t.Fatal(err)
		}
		wantErrs(t, "Run of a second adaptive Runner", r2.Run(cancelled()), taken)
		if _, ok := r2.AdaptiveStats(); ok {
			t.Errorf("the refused Runner reports a pool")
		}
		if st, ok := r1.AdaptiveStats(); !ok || st.Max != 4 || e.q.MaxInFlight() != 2 {
			t.Errorf("the first Runner's pool: %+v, %v, MaxInFlight %d; want Max 4, limit 2", st, ok, e.q.MaxInFlight())
		}
		stop()
		if _, ok := e.inst.AdaptiveStats(); ok {
			t.Errorf("AdaptiveStats reports a pool after the Runner's Run returned")
		}
	})
	t.Run("Instrument, then a Runner", func(t *testing.T) {
		e := newEnv(t, envConfig{opts: []otelqueue.Option{otelqueue.WithAdaptiveWorkers(1, 3)}})
		r, err := otelqueue.NewRunner(e.q, 2, okReconcile, otelqueue.WithAdaptiveWorkers(1, 8), otelqueue.WithRunnerClock(e.clock))
		if err != nil {
			t.Fatal(err)
		}
		wantErrs(t, "Run of an adaptive Runner on a queue instrumented with AdaptiveWorkers", r.Run(cancelled()), taken)
		if st, ok := e.inst.AdaptiveStats(); !ok || st.Max != 3 || e.q.MaxInFlight() != 1 {
			t.Errorf("the Instrumentation's pool: %+v, %v, MaxInFlight %d; want Max 3, limit 1", st, ok, e.q.MaxInFlight())
		}
		// Once the other pool is gone, the Runner runs with its own.
		if err := e.inst.Stop(); err != nil {
			t.Fatal(err)
		}
		inst, err := instrument(e.q)
		if err != nil {
			t.Fatal(err)
		}
		defer inst.Stop()
		runRunner(t, r)
		if st := waitPool(t, inst); st.Max != 8 || st.Limit != 2 {
			t.Errorf("the Runner's pool: %+v, want Max 8, limit 2", st)
		}
	})
	t.Run("a Runner, then Instrument", func(t *testing.T) {
		e := newEnv(t, envConfig{})
		r, err := otelqueue.NewRunner(e.q, 2, okReconcile, otelqueue.WithAdaptiveWorkers(1, 4), otelqueue.WithRunnerClock(e.clock))
		if err != nil {
			t.Fatal(err)
		}
		runRunner(t, r)
		waitPool(t, e.inst)
		if err := e.inst.Stop(); err != nil {
			t.Fatal(err)
		}
		inst, err := instrument(e.q, otelqueue.WithAdaptiveWorkers(1, 8))
		if inst != nil {
			_ = inst.Stop()
		}
		wantErrs(t, "Instrument with AdaptiveWorkers of a queue an adaptive Runner runs", err, taken)
		if st, ok := r.AdaptiveStats(); !ok || st.Max != 4 || e.q.MaxInFlight() != 2 {
			t.Errorf("the Runner's pool: %+v, %v, MaxInFlight %d; want Max 4, limit 2", st, ok, e.q.MaxInFlight())
		}
		// The refused Instrument installed nothing.
		inst, err = instrument(e.q)
		if err != nil {
			t.Fatalf("Instrument after a refused one: %v", err)
		}
		_ = inst.Stop()
	})
}

// TestAdaptiveInstrumentAgain checks that after Stop, which removes the
// pool and its limit, the queue takes a new Instrumentation with a new
// pool.
func TestAdaptiveInstrumentAgain(t *testing.T) {
	q := scheduler.New(scheduler.Config[string]{Name: queueName})
	t.Cleanup(q.ShutDown)
	inst, err := instrument(q, otelqueue.AdaptiveWorkers{Min: 2, Max: 4})
	if err != nil {
		t.Fatal(err)
	}
	if n := q.MaxInFlight(); n != 2 {
		t.Fatalf("MaxInFlight() = %d, want 2", n)
	}
	if err := inst.Stop(); err != nil {
		t.Fatal(err)
	}
	if _, ok := inst.AdaptiveStats(); ok || q.MaxInFlight() != 0 {
		t.Fatalf("after Stop: AdaptiveStats ok %v, MaxInFlight %d; want false, 0", ok, q.MaxInFlight())
	}
	inst, err = instrument(q, otelqueue.AdaptiveWorkers{Min: 3, Max: 5})
	if err != nil {
		t.Fatalf("Instrument with AdaptiveWorkers after Stop: %v", err)
	}
	defer inst.Stop()
	want := inspect.Pool{Limit: 3, Min: 3, Max: 5}
	if st, ok := inst.AdaptiveStats(); !ok || st != want || q.MaxInFlight() != 3 {
		t.Errorf("AdaptiveStats() = %+v, %v, MaxInFlight %d; want %+v, true, 3", st, ok, q.MaxInFlight(), want)
	}
}

// TestAdaptiveWithWorkers checks Instrument's AdaptiveWorkers with
// WithWorkers, the goroutines that take keys: they cap Max (and Start),
// Min above them is refused, and `workqueue.workers` reports the pool's limit,
// not WithWorkers's count.
func TestAdaptiveWithWorkers(t *testing.T) {
	t.Run("caps Max", func(t *testing.T) {
		e := newEnv(t, envConfig{opts: []otelqueue.Option{otelqueue.WithWorkers(4), otelqueue.AdaptiveWorkers{Min: 1, Max: 8}}})
		want := inspect.Pool{Limit: 1, Min: 1, Max: 4}
		if st, ok := e.inst.AdaptiveStats(); !ok || st != want {
			t.Errorf("AdaptiveStats() = %+v, %v; want %+v, true", st, ok, want)
		}
		assertMetrics(t, e.collect(t), noTime, workersGauge(queueAttrs, 1))
	})
	t.Run("caps Start", func(t *testing.T) {
		e := newEnv(t, envConfig{opts: []otelqueue.Option{otelqueue.WithWorkers(4), otelqueue.AdaptiveWorkers{Min: 1, Max: 8, Start: 6}}})
		want := inspect.Pool{Limit: 4, Min: 1, Max: 4}
		if st, ok := e.inst.AdaptiveStats(); !ok || st != want || e.q.MaxInFlight() != 4 {
			t.Errorf("AdaptiveStats() = %+v, %v, MaxInFlight %d; want %+v, true, 4", st, ok, e.q.MaxInFlight(), want)
		}
	})
	t.Run("Min above", func(t *testing.T) {
		q := scheduler.New(scheduler.Config[string]{Name: queueName})
		defer q.ShutDown()
		inst, err := instrument(q, otelqueue.WithWorkers(2), otelqueue.AdaptiveWorkers{Min: 3, Max: 8})
		if inst != nil {
			_ = inst.Stop()
		}
		wantErrs(t, "Instrument with WithWorkers(2) and Min 3", err,
			"AdaptiveWorkers.Min 3 is above the 2 workers that take keys", "raise the workers or lower Min")
		if n := q.MaxInFlight(); n != 0 {
			t.Errorf("MaxInFlight() = %d after a refused Instrument, want 0", n)
		}
	})
}

// TestAdaptiveStatsWithoutPool checks that AdaptiveStats reports no pool
// for a nil Runner or Instrumentation, a queue without AdaptiveWorkers, and
// an adaptive Runner that is not running.
func TestAdaptiveStatsWithoutPool(t *testing.T) {
	var r *otelqueue.Runner[string]
	if st, ok := r.AdaptiveStats(); ok || st != (inspect.Pool{}) {
		t.Errorf("nil Runner: AdaptiveStats() = %+v, %v; want zero, false", st, ok)
	}
	var inst *otelqueue.Instrumentation
	if st, ok := inst.AdaptiveStats(); ok || st != (inspect.Pool{}) {
		t.Errorf("nil Instrumentation: AdaptiveStats() = %+v, %v; want zero, false", st, ok)
	}
	e := newEnv(t, envConfig{})
	if _, ok := e.inst.AdaptiveStats(); ok {
		t.Errorf("Instrumentation without AdaptiveWorkers reports a pool")
	}
	plain, err := otelqueue.NewRunner(e.q, 2, okReconcile, otelqueue.WithRunnerClock(e.clock))
	if err != nil {
		t.Fatal(err)
	}
	adaptive, err := otelqueue.NewRunner(e.q, 2, okReconcile, otelqueue.WithAdaptiveWorkers(1, 4))
	if err != nil {
		t.Fatal(err)
	}
	if _, ok := adaptive.AdaptiveStats(); ok {
		t.Errorf("an adaptive Runner before Run reports a pool")
	}
	runRunner(t, plain)
	testutil.WaitBlocked(t, "waitReadyLocked", testutil.CondWait, 2)
	if _, ok := plain.AdaptiveStats(); ok {
		t.Errorf("a running Runner without AdaptiveWorkers reports a pool")
	}
	if _, ok := e.inst.AdaptiveStats(); ok || e.q.MaxInFlight() != 0 {
		t.Errorf("a running Runner without AdaptiveWorkers: the queue reports a pool (%v) or a limit (%d)", ok, e.q.MaxInFlight())
	}
	runtime.KeepAlive(adaptive)
}

// TestAdaptiveWorkersLastWins checks AdaptiveWorkers given twice: the last
// is used (and checked), as with every option.
func TestAdaptiveWorkersLastWins(t *testing.T) {
	t.Run("Instrument", func(t *testing.T) {
		e := newEnv(t, envConfig{opts: []otelqueue.Option{
			otelqueue.AdaptiveWorkers{Min: 1, Max: 2},
			otelqueue.AdaptiveWorkers{Min: 2, Max: 6, Start: 3},
		}})
		want := inspect.Pool{Limit: 3, Min: 2, Max: 6}
		if st, ok := e.inst.AdaptiveStats(); !ok || st != want {
			t.Errorf("AdaptiveStats() = %+v, %v; want %+v, true", st, ok, want)
		}
		q := scheduler.New(scheduler.Config[string]{Name: queueName})
		defer q.ShutDown()
		inst, err := instrument(q, otelqueue.AdaptiveWorkers{}, otelqueue.WithAdaptiveWorkers(1, 2))
		if err != nil {
			t.Errorf("Instrument with an invalid AdaptiveWorkers then a valid one: %v", err)
		} else {
			_ = inst.Stop()
		}
		inst, err = instrument(q, otelqueue.WithAdaptiveWorkers(1, 2), otelqueue.AdaptiveWorkers{})
		if inst != nil {
			_ = inst.Stop()
		}
		wantErrs(t, "Instrument with a valid AdaptiveWorkers then an invalid one", err, "Min of at least 1, got 0")
	})
	t.Run("Runner", func(t *testing.T) {
		e := newEnv(t, envConfig{})
		// 5 workers: outside the first's bounds, inside the last's.
		r, err := otelqueue.NewRunner(e.q, 5, okReconcile, otelqueue.WithAdaptiveWorkers(1, 2), otelqueue.WithAdaptiveWorkers(2, 6), otelqueue.WithRunnerClock(e.clock))
		if err != nil {
			t.Fatal(err)
		}
		runRunner(t, r)
		st := waitPool(t, e.inst)
		if want := (inspect.Pool{Limit: 5, Min: 2, Max: 6}); st != want {
			t.Errorf("AdaptiveStats() = %+v, want %+v", st, want)
		}
		_, err = otelqueue.NewRunner(e.q, 1, okReconcile, otelqueue.WithAdaptiveWorkers(1, 2), otelqueue.AdaptiveWorkers{Max: 2})
		wantErrs(t, "NewRunner with a valid AdaptiveWorkers then an invalid one", err, "Min of at least 1, got 0")
	})
}

// TestAdaptiveStopEndsPool checks that Instrumentation.Stop ends the pool's
// goroutine (its ticker is stopped when Stop returns) and lifts its limit.
func TestAdaptiveStopEndsPool(t *testing.T) {
	clk := newTickClock()
	e := newEnv(t, envConfig{sched: scheduler.Config[string]{Clock: clk}, opts: []otelqueue.Option{otelqueue.AdaptiveWorkers{Min: 2, Max: 4}}})
	tk := clk.ticker(t)
	if n := e.q.MaxInFlight(); n != 2 {
		t.Fatalf("MaxInFlight() = %d, want 2", n)
	}
	if err := e.inst.Stop(); err != nil {
		t.Fatal(err)
	}
	if !tk.stopped.Load() {
		t.Errorf("after Stop, the pool's ticker is not stopped: its goroutine still runs")
	}
	if _, ok := e.inst.AdaptiveStats(); ok {
		t.Errorf("after Stop, AdaptiveStats reports a pool")
	}
	if n := e.q.MaxInFlight(); n != 0 {
		t.Errorf("after Stop, MaxInFlight() = %d, want 0", n)
	}
	// Unlimited: three keys out at once.
	for _, k := range []string{"a", "b", "c"} {
		e.q.Add(k)
	}
	for range 3 {
		e.get(t)
	}
}

// TestAdaptiveShutDownEndsPool checks that the queue's ShutDown ends the
// goroutine of a pool given to Instrument, and that Stop still works after.
func TestAdaptiveShutDownEndsPool(t *testing.T) {
	clk := newTickClock()
	e := newEnv(t, envConfig{sched: scheduler.Config[string]{Clock: clk}, opts: []otelqueue.Option{otelqueue.AdaptiveWorkers{Min: 2, Max: 4}}})
	tk := clk.ticker(t)
	e.q.ShutDown()
	testutil.WaitFor(t, "the pool's goroutine to stop its ticker after ShutDown", tk.stopped.Load)
	if err := e.inst.Stop(); err != nil {
		t.Fatal(err)
	}
	if n := e.q.MaxInFlight(); n != 0 {
		t.Errorf("after Stop, MaxInFlight() = %d, want 0", n)
	}
}

// TestAdaptiveRunnerLifecycle checks an adaptive Runner: Run starts the
// pool's count of workers, attaches the pool at the Runner's worker count (RunnerStats.Workers,
// `workqueue.workers` and the queue's limit all say so), and detaches it when it
// returns.
func TestAdaptiveRunnerLifecycle(t *testing.T) {
	e := newEnv(t, envConfig{})
	r, err := otelqueue.NewRunner(e.q, 3, okReconcile, otelqueue.WithAdaptiveWorkers(1, 8), otelqueue.WithRunnerClock(e.clock))
	if err != nil {
		t.Fatal(err)
	}
	stop := runRunner(t, r)
	st := waitPool(t, e.inst)
	want := inspect.Pool{Limit: 3, Min: 1, Max: 8}
	if st != want {
		t.Errorf("Instrumentation.AdaptiveStats() = %+v, want %+v", st, want)
	}
	if rst, ok := r.AdaptiveStats(); !ok || rst != want {
		t.Errorf("Runner.AdaptiveStats() = %+v, %v; want %+v, true", rst, ok, want)
	}
	if w := r.Stats().Workers; w != 3 {
		t.Errorf("RunnerStats.Workers = %d, want the limit 3", w)
	}
	if n := e.q.MaxInFlight(); n != 3 {
		t.Errorf("MaxInFlight() = %d, want 3", n)
	}
	assertMetrics(t, e.collect(t), noTime, workersGauge(queueAttrs, 3))
	// As many workers wait for keys as the pool lets take them, not Max:
	// the Runner starts more as the pool grows.
	testutil.WaitBlocked(t, "waitReadyLocked", testutil.CondWait, 3)
	time.Sleep(50 * time.Millisecond)
	if n := testutil.BlockedIn("waitReadyLocked", testutil.CondWait); n != 3 {
		t.Errorf("%d workers wait for keys, want the pool's 3 (not Max, 8)", n)
	}
	stop()
	if _, ok := r.AdaptiveStats(); ok {
		t.Errorf("Runner.AdaptiveStats reports a pool after Run returned")
	}
	if _, ok := e.inst.AdaptiveStats(); ok {
		t.Errorf("Instrumentation.AdaptiveStats reports a pool after Run returned")
	}
	if w := r.Stats().Workers; w != 3 {
		t.Errorf("after Run: RunnerStats.Workers = %d, want the configured 3", w)
	}
}

// TestAdaptiveRunnerReturnsOnShutDown checks that Run of an adaptive Runner
// returns when its queue is shut down under it, as Run of any Runner does
// (it hung before a0a17a4: the pool's goroutine stopped only with ctx).
// It runs in a synctest bubble, so that "every goroutine is blocked and Run
// has not returned" is a fact, not a timeout.
func TestAdaptiveRunnerReturnsOnShutDown(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		q := scheduler.New(scheduler.Config[string]{Name: queueName})
		inst, err := instrument(q)
		if err != nil {
			t.Fatal(err)
		}
		defer inst.Stop()
		r, err := otelqueue.NewRunner(q, 1, okReconcile, otelqueue.WithAdaptiveWorkers(1, 2))
		if err != nil {
			t.Fatal(err)
		}
		ctx, cancel := context.WithCancel(context.Background())
		defer cancel()
		done := make(chan error, 1)
		go func() { done <- r.Run(ctx) }()
		synctest.Wait()
		if _, ok := r.AdaptiveStats(); !ok {
			t.Fatal("the Runner's pool is not attached")
		}
		q.ShutDown()
		synctest.Wait()
		select {
		case err := <-done:
			if err != nil {
				t.Errorf("Run = %v after ShutDown, want nil", err)
			}
			if _, ok := r.AdaptiveStats(); ok {
				t.Errorf("the pool is still attached after Run returned")
			}
		default:
			t.Errorf("Run has not returned after ShutDown, every goroutine blocked: the pool's goroutine must stop with the queue")
			cancel()
			<-done
		}
	})
}

// tickClock is a FakeClock whose tickers (only the adaptive pool makes
// one) tick when the test calls tick, not when the clock steps: the pool
// then decides at the Done of an attempt, at the time of its end, or at a
// tick, at the time of the clock, never at a time its goroutine happens to
// read the clock.
type tickClock struct {
	*testingclock.FakeClock
	mu      sync.Mutex
	tickers []*manualTicker
}

var _ clock.WithTicker = (*tickClock)(nil)

func newTickClock() *tickClock { return &tickClock{FakeClock: testingclock.NewFakeClock(t0)} }

type manualTicker struct {
	c       chan time.Time
	stopped atomic.Bool
}

func (m *manualTicker) C() <-chan time.Time { return m.c }
func (m *manualTicker) Stop()               { m.stopped.Store(true) }

func (c *tickClock) NewTicker(time.Duration) clock.Ticker {
	m := &manualTicker{c: make(chan time.Time)}
	c.mu.Lock()
	c.tickers = append(c.tickers, m)
	c.mu.Unlock()
	return m
}

// ticker waits for the pool to make its ticker, and returns it.
func (c *tickClock) ticker(t testing.TB) *manualTicker {
	t.Helper()
	var m *manualTicker
	testutil.WaitFor(t, "the pool's ticker", func() bool {
		c.mu.Lock()
		defer c.mu.Unlock()
		if n := len(c.tickers); n > 0 {
			m = c.tickers[n-1]
			return true
		}
		return false
	})
	return m
}

// tick hands the pool's ticker a tick and waits until the pool has
// evaluated and waits for the next.
func (c *tickClock) tick(t testing.TB) {
	t.Helper()
	m := c.ticker(t)
	if m.stopped.Load() {
		t.Fatal("the pool's ticker is stopped")
	}
	guard := time.NewTimer(testutil.Timeout)
	defer guard.Stop()
	select {
	case m.c <- c.Now():
	case <-guard.C:
		t.Fatalf("timed out after %v waiting for the pool to take a tick", testutil.Timeout)
	}
	testutil.WaitBlocked(t, "(*pool).run", "select", 1)
}

// flight is an attempt in flight: its key and the end of its work.
type flight struct {
	key string
	end time.Time
}

// driver works a queue in the test's goroutine on a tickClock: it takes
// keys while fewer than the queue's limit are in flight, and calls Done
// when their work is over. Every Done, and with it every decision the pool
// makes at a Done, happens in the test's goroutine, at a known time.
type driver struct {
	t       *testing.T
	q       *scheduler.Scheduler[string]
	clk     *tickClock
	work    time.Duration
	flights []flight
	keys    int
}

func (d *driver) add(n int) {
	for range n {
		d.q.Add("key-" + strconv.Itoa(d.keys))
		d.keys++
	}
}

// dispatch takes the keys the limit lets out.
func (d *driver) dispatch() {
	d.t.Helper()
	for len(d.flights) < d.q.MaxInFlight() && d.q.Len() > 0 {
		ctx, cancel := context.WithTimeout(context.Background(), testutil.Timeout)
		it, err := d.q.GetContext(ctx)
		cancel()
		if err != nil {
			d.t.Fatalf("GetContext with %d in flight, limit %d, %d ready: %v", len(d.flights), d.q.MaxInFlight(), d.q.Len(), err)
		}
		d.flights = append(d.flights, flight{key: it.Key, end: d.clk.Now().Add(d.work)})
	}
}

// run steps the clock by step for dur, adding a key every `every` steps (none
// when 0); after each step, the attempts whose work is over are Done, and
// the limit's worth are taken.
func (d *driver) run(dur, step time.Duration, every int) {
	d.t.Helper()
	for i, end := 0, d.clk.Now().Add(dur); d.clk.Now().Before(end); i++ {
		d.clk.Step(step)
		now := d.clk.Now()
		kept := d.flights[:0]
		for _, f := range d.flights {
			if f.end.After(now) {
				kept = append(kept, f)
			} else {
				d.q.Done(f.key)
			}
		}
		d.flights = kept
		if every > 0 && i%every == 0 {
			d.add(1)
		}
		d.dispatch()
	}
}

// adaptiveEnv is an env whose queue has an adaptive pool between 1 and 16,
// starting at 2, deciding every second, on a tickClock, logging to logs.
type adaptiveEnv struct {
	*env
	clk  *tickClock
	logs *logRecords
	d    *driver
}

func newAdaptiveEnv(t *testing.T) *adaptiveEnv {
	t.Helper()
	clk := newTickClock()
	logs := new(logRecords)
	e := newEnv(t, envConfig{
		sched: scheduler.Config[string]{Clock: clk},
		opts: []otelqueue.Option{otelqueue.AdaptiveWorkers{
			Min: 1, Max: 16, Start: 2, Interval: time.Second, Logger: slog.New(logs),
		}},
	})
	return &adaptiveEnv{env: e, clk: clk, logs: logs, d: &driver{t: t, q: e.q, clk: clk}}
}

func (a *adaptiveEnv) stats(t *testing.T) inspect.Pool {
	t.Helper()
	st, ok := a.inst.AdaptiveStats()
	if !ok {
		t.Fatal("AdaptiveStats reports no pool")
	}
	return st
}

// change is a change of the limit, as a log line or a span event tells it.
type change struct {
	from, to int
	reason   string
}

func (c change) String() string { return fmt.Sprintf("%d→%d %s", c.from, c.to, c.reason) }

// logged returns the changes of the pool's log lines, checking that each
// names the queue and has a detail.
func (a *adaptiveEnv) logged(t *testing.T) []change {
	t.Helper()
	var out []change
	for _, rec := range a.logs.all() {
		if rec.msg != "adaptive workers" {
			t.Errorf("log line %q, want only \"adaptive workers\"", rec.msg)
			continue
		}
		if rec.level != slog.LevelInfo || rec.attrs["queue"] != queueName || rec.attrs["detail"] == "" {
			t.Errorf("log line %v %+v, want INFO with queue %q and a detail", rec.level, rec.attrs, queueName)
		}
		from, err1 := strconv.Atoi(rec.attrs["from"])
		to, err2 := strconv.Atoi(rec.attrs["to"])
		if err1 != nil || err2 != nil {
			t.Fatalf("log line with from %q, to %q: want numbers", rec.attrs["from"], rec.attrs["to"])
		}
		out = append(out, change{from: from, to: to, reason: string(rec.attrs["reason"])})
	}
	return out
}

// eventSpan is a "reconcile" span's `workers changed`.
type eventSpan struct {
	change
	at, spanStart, spanEnd time.Time
}

// events returns the `workers changed` of the ended spans, in the order
// the spans ended, checking that only "reconcile" spans have them.
func (a *adaptiveEnv) events(t *testing.T) []eventSpan {
	t.Helper()
	var out []eventSpan
	for _, s := range a.sr.Ended() {
		for _, ev := range s.Events() {
			if ev.Name != semconv.EventWorkersChanged {
				continue
			}
			if s.Name() != semconv.SpanReconcile {
				t.Errorf("span %q has the event %q, want only %q spans", s.Name(), ev.Name, semconv.SpanReconcile)
			}
			attrs := attrMap(ev.Attributes)
			out = append(out, eventSpan{
				change: change{
					from:   int(attrs[semconv.AttrWorkersFrom].AsInt64()),
					to:     int(attrs[semconv.AttrWorkersTo].AsInt64()),
					reason: string(attrs[semconv.AttrWorkersReason].AsString()),
				},
				at: ev.Time, spanStart: s.StartTime(), spanEnd: s.EndTime(),
			})
		}
	}
	return out
}

// grow runs 100 keys a second of 100ms of work (10 workers busy, a demand
// of 20) for 8 seconds, in steps of 10ms, with no tick: the pool decides at
// the Dones.
func (a *adaptiveEnv) grow(t *testing.T) {
	t.Helper()
	a.d.work = 100 * time.Millisecond
	a.d.run(8*time.Second, 10*time.Millisecond, 1)
}

// drain stops the arrivals and lets the workers clear the backlog.
func (a *adaptiveEnv) drain(t *testing.T) {
	t.Helper()
	a.d.run(5*time.Second, 10*time.Millisecond, 0)
	if n, in := a.q.Len(), len(a.d.flights); n != 0 || in != 0 {
		t.Fatalf("after the drain, %d keys ready and %d in flight, want none", n, in)
	}
}

// trickle runs 5 keys a second of one step's work (a demand of 1) for dur.
func (a *adaptiveEnv) trickle(t *testing.T, dur time.Duration) {
	t.Helper()
	a.d.work = time.Nanosecond // done at the next step
	a.d.run(dur, 10*time.Millisecond, 20)
}

// checkChanges checks the changes: a chain from the pool's start (each from
// the previous one's to, the first from 2) to its limit now, one for each
// change AdaptiveStats counts, with reasons among want.
func checkChanges(t *testing.T, changes []change, st inspect.Pool, want ...string) {
	t.Helper()
	if len(changes) == 0 || uint64(len(changes)) != st.Changes {
		t.Fatalf("changes %v, AdaptiveStats.Changes %d; want as many, at least 1", changes, st.Changes)
	}
	from := 2
	for i, c := range changes {
		if c.from != from || c.to == c.from || c.to < st.Min || c.to > st.Max {
			t.Errorf("change %d: %v, want from %d to another count within [%d, %d] (changes %v)", i, c, from, st.Min, st.Max, changes)
		}
		if !slices.Contains(want, c.reason) {
			t.Errorf("change %d: %v, want a reason among %q", i, c, want)
		}
		if (c.reason == "demand" || c.reason == "wait") != (c.to > c.from) {
			t.Errorf("change %d: %v: a grow is for the demand or the wait, and only those grow", i, c)
		}
		from = c.to
	}
	if from != st.Limit {
		t.Errorf("the changes %v end at %d, AdaptiveStats.Limit %d", changes, from, st.Limit)
	}
}

// changesByReason is the expected `workqueue.workers.changes` after changes.
func changesByReason(changes []change) metricdata.Metrics {
	n := make(map[string]int64)
	for _, c := range changes {
		n[c.reason]++
	}
	var points []metricdata.DataPoint[int64]
	for _, reason := range slices.Sorted(maps.Keys(n)) {
		attrs := attribute.NewSet(append(queueAttrs.ToSlice(), semconv.AttrReason.String(string(reason)))...)
		points = append(points, metricdata.DataPoint[int64]{Attributes: attrs, Value: n[reason]})
	}
	return metricdata.Metrics{
		Name: semconv.MetricWorkersChanges,
		Unit: "{change}",
		Data: metricdata.Sum[int64]{Temporality: metricdata.CumulativeTemporality, IsMonotonic: true, DataPoints: points},
	}
}

// TestAdaptiveGrowsAndShrinks drives an instrumented queue with an adaptive
// pool on a fake clock: under a load that needs more than its start, it
// grows, for the demand or the wait; every change made at an attempt's
// Done is an event of that attempt's "reconcile" span and a log line, and
// `workqueue.workers` and the queue's limit follow. When the load drops to a
// trickle, it shrinks for low utilization, by steps of at least 2.
// `workqueue.workers.changes` counts the changes by reason.
func TestAdaptiveGrowsAndShrinks(t *testing.T) {
	a := newAdaptiveEnv(t)
	a.grow(t)
	st := a.stats(t)
	if st.Limit <= 2 || st.Changes == 0 || (st.Reason != "demand" && st.Reason != "wait") {
		t.Fatalf("after 8s of a load that needs 20: %+v; want grown from 2, for the demand or the wait", st)
	}
	if st.Needed <= 2 || st.Detail == "" || !strings.Contains(st.Detail, "needed") {
		t.Errorf("AdaptiveStats Needed %d, Detail %q; want the demand's count over 2 and the figures", st.Needed, st.Detail)
	}
	if n := a.q.MaxInFlight(); n != st.Limit {
		t.Errorf("MaxInFlight() = %d, want the limit %d", n, st.Limit)
	}
	logged := a.logged(t)
	assertMetrics(t, a.collect(t), noTime, workersGauge(queueAttrs, int64(st.Limit)), changesByReason(logged))

	checkChanges(t, logged, st, "demand", "wait")
	events := a.events(t)
	var evChanges []change
	for _, ev := range events {
		evChanges = append(evChanges, ev.change)
	}
	if !slices.Equal(evChanges, logged) {
		t.Errorf("span events %v, log lines %v: want one event for each change, all made at a Done", evChanges, logged)
	}
	if n := len(events); n > 0 && !events[n-1].spanEnd.Equal(st.Changed) {
		t.Errorf("the last change's span ended at %v, AdaptiveStats.Changed %v: want the change made at its Done", events[n-1].spanEnd, st.Changed)
	}
	grown := st

	a.drain(t)
	a.trickle(t, 40*time.Second)
	st = a.stats(t)
	if st.Limit >= grown.Limit || st.Reason != "low-utilization" {
		t.Fatalf("after 40s of a trickle that needs 1: %+v; want shrunk from %d for low utilization", st, grown.Limit)
	}
	if n := a.q.MaxInFlight(); n != st.Limit {
		t.Errorf("MaxInFlight() = %d, want the limit %d", n, st.Limit)
	}
	logged = a.logged(t)
	t.Logf("changes: %v", logged)
	assertMetrics(t, a.collect(t), noTime, workersGauge(queueAttrs, int64(st.Limit)), changesByReason(logged))
	checkChanges(t, logged, st, "demand", "wait", "low-utilization")
	shrinks := 0
	for _, c := range logged[grown.Changes:] {
		if c.reason == "low-utilization" {
			shrinks++
			if c.to > c.from-2 && c.to != st.Min {
				t.Errorf("shrink %v: a step of 1 that is not to Min", c)
			}
		}
	}
	if shrinks == 0 {
		t.Errorf("no shrink for low utilization in %v", logged[grown.Changes:])
	}
	evChanges = evChanges[:0]
	for _, ev := range a.events(t) {
		evChanges = append(evChanges, ev.change)
	}
	if !slices.Equal(evChanges, logged) {
		t.Errorf("span events %v, log lines %v: want one event for each change, all made at a Done", evChanges, logged)
	}
}

// TestInspectorAdaptiveDecisions: the inspector shows the pool's last
// decisions, the latest first, at most MaxDecisions: the ones its log lines
// tell, with their figures.
func TestInspectorAdaptiveDecisions(t *testing.T) {
	a := newAdaptiveEnv(t)
	h := &otelqueue.Inspector{}
	if got := queueOf(t, h.Page(), queueName).Decisions; len(got) != 0 {
		t.Fatalf("decisions before any: %+v", got)
	}
	// Loads that grow the pool and let it shrink, until it decided more
	// often than the page keeps.
	var logged []change
	for range 10 {
		a.grow(t)
		a.d.run(30*time.Second, 10*time.Millisecond, 0) // no arrivals: the backlog drains
		a.trickle(t, 40*time.Second)
		if logged = a.logged(t); len(logged) > otelqueue.MaxDecisions {
			break
		}
	}
	if len(logged) <= otelqueue.MaxDecisions {
		t.Fatalf("%d decisions logged, want more than the %d kept to see the oldest dropped", len(logged), otelqueue.MaxDecisions)
	}
	t.Logf("%d decisions: %v", len(logged), logged)
	got := queueOf(t, h.Page(), queueName).Decisions
	if len(got) != otelqueue.MaxDecisions {
		t.Fatalf("%d decisions on the page, want %d", len(got), otelqueue.MaxDecisions)
	}
	for i, d := range got {
		want := logged[len(logged)-1-i]
		if (change{from: d.From, to: d.To, reason: d.Reason}) != want || d.Detail == "" {
			t.Errorf("decision %d (latest first): %+v, want %v with its figures", i, d, want)
		}
		if i > 0 && d.At.After(got[i-1].At) {
			t.Errorf("decision %d at %v is after the one before it on the page (%v): want the latest first", i, d.At, got[i-1].At)
		}
	}
	if st := a.stats(t); !got[0].At.Equal(st.Changed) || got[0].Reason != st.Reason {
		t.Errorf("the latest decision %+v, AdaptiveStats %+v: want the same", got[0], st)
	}
	_, html := get(t, h, http.MethodGet, "/", "")
	if n := strings.Count(html, `data-field="decision"`); n != otelqueue.MaxDecisions {
		t.Errorf("the HTML page shows %d decisions, want %d", n, otelqueue.MaxDecisions)
	}
}

// TestAdaptiveEventTime checks the time of `workers changed`: that of the
// Done that made the change, within its "reconcile" span.
func TestAdaptiveEventTime(t *testing.T) {
	a := newAdaptiveEnv(t)
	a.grow(t)
	events := a.events(t)
	if len(events) == 0 {
		t.Fatal("no semconv.EventWorkersChanged")
	}
	for _, ev := range events {
		// The regression this guards: the event had no timestamp, so the
		// SDK stamped it with time.Now(), not the Done's time.
		if ev.at.Before(ev.spanStart) || ev.at.After(ev.spanEnd) {
			t.Errorf("semconv.EventWorkersChanged %v at %v, outside its span [%v, %v]: want the time of the Done that made the change", ev.change, ev.at, ev.spanStart, ev.spanEnd)
		}
	}
}

// TestAdaptiveTickerChange checks a change the pool's ticker makes, with no
// attempt ending: keys that take longer than six intervals leave the pool
// with no sample, so it extends its window up to six intervals, then
// decides on what it has (the backlog and the longest run). The change has
// a log line and no span event.
func TestAdaptiveTickerChange(t *testing.T) {
	a := newAdaptiveEnv(t)
	a.d.work = 7 * time.Second
	a.d.add(200)
	a.d.dispatch()
	for i := range 5 {
		a.clk.Step(time.Second)
		a.clk.tick(t)
		if st := a.stats(t); st.Changes != 0 || st.Needed != 0 || st.Limit != 2 {
			t.Fatalf("tick %d: %+v; want no decision yet (the window is extended up to 6 intervals)", i+1, st)
		}
	}
	a.clk.Step(time.Second)
	a.clk.tick(t)
	st := a.stats(t)
	if st.Changes != 1 || st.Limit <= 2 || st.Reason != "demand" || !st.Changed.Equal(t0.Add(6*time.Second)) {
		t.Fatalf("after 6 intervals: %+v; want one change, a grow for the demand at %v", st, t0.Add(6*time.Second))
	}
	if n := a.q.MaxInFlight(); n != st.Limit {
		t.Errorf("MaxInFlight() = %d, want %d", n, st.Limit)
	}
	want := []change{{from: 2, to: st.Limit, reason: "demand"}}
	if got := a.logged(t); !slices.Equal(got, want) {
		t.Errorf("log lines %v, want %v", got, want)
	}
	// The two attempts in flight end at 7s (the pool, with two reconciles
	// in its new window, extends it): neither has the event.
	a.d.run(time.Second, time.Second, 0)
	if n := len(testutil.SpansNamed(a.sr.Ended(), semconv.SpanReconcile)); n != 2 {
		t.Fatalf("%d reconcile spans ended, want 2", n)
	}
	if st := a.stats(t); st.Changes != 1 {
		t.Fatalf("after the Dones at 7s: %+v, want no other change", st)
	}
	if ev := a.events(t); len(ev) != 0 {
		t.Errorf("span events %v for a change the ticker made, want none", ev)
	}
}

// TestAdaptiveQuietQueueShrinksToMin checks that a queue that no longer
// needs its workers gets down to Min: with no keys at all (the pool's
// ticker decides), or a trickle that needs one worker.
func TestAdaptiveQuietQueueShrinksToMin(t *testing.T) {
	t.Run("idle", func(t *testing.T) {
		a := newAdaptiveEnv(t)
		a.grow(t)
		a.drain(t)
		grown := a.stats(t)
		for range 60 {
			a.clk.Step(time.Second)
			a.clk.tick(t)
		}
		st := a.stats(t)
		// The regression this guards: with no reconciles no window was a
		// sample, and the pool never shrank an idle queue.
		if st.Changes == grown.Changes || st.Limit != 1 || st.Reason != "low-utilization" {
			t.Errorf("after 60 idle intervals from %+v: %+v; want the limit 1, for low utilization", grown, st)
		}
	})
	t.Run("trickle", func(t *testing.T) {
		a := newAdaptiveEnv(t)
		a.grow(t)
		a.drain(t)
		a.trickle(t, 60*time.Second)
		st := a.stats(t)
		// The regression this guards: the shrink went to withMargin(1) = 2.
		if st.Limit != 1 {
			t.Errorf("after a trickle that needs one worker: %+v; want the limit 1", st)
		}
	})
}

// TestAdaptiveRunnerFollowsLimit runs an adaptive Runner whose reconciles
// take fake time, on a backlog: the pool grows, and RunnerStats.Workers,
// `workqueue.workers` and the queue's limit follow it; the changes are logged to
// the Runner's logger (AdaptiveWorkers.Logger being nil).
func TestAdaptiveRunnerFollowsLimit(t *testing.T) {
	clk := newTickClock()
	e := newEnv(t, envConfig{sched: scheduler.Config[string]{Clock: clk}, noTracing: true})
	logs := new(logRecords)
	const keys = 300
	work := 100 * time.Millisecond
	r, err := otelqueue.NewRunner(e.q, 2, func(context.Context, string) (otelqueue.Result, error) {
		<-clk.After(work)
		return otelqueue.Result{}, nil
	}, otelqueue.AdaptiveWorkers{Min: 1, Max: 8, Interval: time.Second}, otelqueue.WithRunnerClock(clk), otelqueue.WithLogger(slog.New(logs)))
	if err != nil {
		t.Fatal(err)
	}
	for i := range keys {
		e.q.Add("key-" + strconv.Itoa(i))
	}
	stop := runRunner(t, r)
	waitPool(t, e.inst)
	for int(r.Stats().Reconciles()) < keys {
		// Every reconcile the limit lets run waits for the clock (or the
		// last ones have just ended).
		testutil.WaitFor(t, "the reconciles the limit lets run", func() bool {
			want := min(e.q.MaxInFlight(), keys-int(r.Stats().Reconciles()))
			return want == 0 || (clk.Waiters() == want && r.Stats().ActiveWorkers == want)
		})
		clk.Step(work)
	}
	testutil.WaitFor(t, "the last Done", func() bool { return e.q.Stats().InFlight == 0 })
	st, ok := r.AdaptiveStats()
	if !ok || st.Changes == 0 || st.Limit <= 2 {
		t.Fatalf("after a backlog of %d keys of %v at 2: %+v, %v; want grown", keys, work, st, ok)
	}
	if w := r.Stats().Workers; w != st.Limit {
		t.Errorf("RunnerStats.Workers = %d, want the limit %d", w, st.Limit)
	}
	if n := e.q.MaxInFlight(); n != st.Limit {
		t.Errorf("MaxInFlight() = %d, want the limit %d", n, st.Limit)
	}
	assertMetrics(t, e.collect(t), noTime, workersGauge(queueAttrs, int64(st.Limit)))
	changes := 0
	for _, rec := range logs.all() {
		if rec.msg == "adaptive workers" && rec.attrs["from"] != rec.attrs["to"] {
			changes++
		}
	}
	if uint64(changes) != st.Changes {
		t.Errorf("%d changes logged to the Runner's logger, AdaptiveStats.Changes %d", changes, st.Changes)
	}
	stop()
	if w := r.Stats().Workers; w != 2 {
		t.Errorf("after Run: RunnerStats.Workers = %d, want the configured 2", w)
	}
}

// TestAdaptiveRunnerPausesUninstrumented checks that an adaptive Runner's
// pool decides nothing while its queue's Instrumentation is stopped (it
// has nothing to decide on), and decides again once the queue is
// instrumented again.
func TestAdaptiveRunnerPausesUninstrumented(t *testing.T) {
	clk := newTickClock()
	e := newEnv(t, envConfig{sched: scheduler.Config[string]{Clock: clk}})
	release := make(chan struct{})
	r, err := otelqueue.NewRunner(e.q, 1, func(context.Context, string) (otelqueue.Result, error) {
		<-release
		return otelqueue.Result{}, nil
	}, otelqueue.AdaptiveWorkers{Min: 1, Max: 4, Interval: time.Second}, otelqueue.WithRunnerClock(clk))
	if err != nil {
		t.Fatal(err)
	}
	for i := range 50 {
		e.q.Add("key-" + strconv.Itoa(i))
	}
	runRunner(t, r)
	var once sync.Once
	t.Cleanup(func() { once.Do(func() { close(release) }) }) // before Run's stop
	waitPool(t, e.inst)
	testutil.WaitFor(t, "the first reconcile", func() bool { return r.Stats().ActiveWorkers == 1 })
	if err := e.inst.Stop(); err != nil {
		t.Fatal(err)
	}
	for i := range 8 {
		clk.Step(time.Second)
		clk.tick(t)
		if st, _ := r.AdaptiveStats(); st.Needed != 0 || st.Changes != 0 {
			t.Fatalf("tick %d with the queue not instrumented: %+v, want no decision", i+1, st)
		}
	}
	if st, _ := r.AdaptiveStats(); st.Reason != "uninstrumented" || st.Limit != 1 {
		t.Errorf("not instrumented: %+v, want the Runner's 1 worker for %s", st, "uninstrumented")
	}
	inst, err := instrument(e.q)
	if err != nil {
		t.Fatal(err)
	}
	defer inst.Stop()
	// A window from the new instrumentation on: a backlog of 49 keys and
	// one run that does not end, so the demand needs more once the window
	// is long enough to judge.
	for i := 0; ; i++ {
		clk.Step(time.Second)
		clk.tick(t)
		st, _ := r.AdaptiveStats()
		if st.Changes == 1 && st.Reason == "demand" && e.q.MaxInFlight() == st.Limit {
			break
		}
		if i == 10 {
			t.Fatalf("instrumented again, 10 ticks later: %+v, MaxInFlight %d; want a grow for the demand", st, e.q.MaxInFlight())
		}
	}
}

// TestAdaptiveIntervalFloor: an Interval under 100 ms is refused, where
// 1ns was accepted and an idle pool's ticker burned a core.
func TestAdaptiveIntervalFloor(t *testing.T) {
	q := scheduler.New(scheduler.Config[string]{Name: "floor"})
	defer q.ShutDown()
	_, err := otelqueue.Instrument(q, otelqueue.AdaptiveWorkers{Min: 1, Max: 4, Interval: time.Nanosecond})
	if err == nil || !strings.Contains(err.Error(), "AdaptiveWorkers.Interval 1ns is under 100ms") {
		t.Errorf("Interval 1ns: %v, want an error that names the floor", err)
	}
}
