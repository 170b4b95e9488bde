package otelqueue_test

import (
	"context"
	"runtime"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/otelqueue/otelqueue/internal/semconv"

	sdkmetric "go.opentelemetry.io/otel/sdk/metric"
	"go.opentelemetry.io/otel/sdk/metric/metricdata"

	"github.com/otelqueue/otelqueue/internal/testutil"
	"github.com/otelqueue/otelqueue/otelqueue"
	"github.com/otelqueue/otelqueue/scheduler"
)

// runErr runs r.Run(ctx) in a goroutine and returns the channel of its
// result.
func runErr[K comparable](r *otelqueue.Runner[K], ctx context.Context) <-chan error {
	done := make(chan error, 1)
	go func() { done <- r.Run(ctx) }()
	return done
}

// wantErr fails the test unless err is an otelqueue error that says want.
func wantErr(t testing.TB, what string, err error, want string) {
	t.Helper()
	if err == nil {
		t.Errorf("%s = nil, want an error saying %q", what, want)
		return
	}
	if !strings.HasPrefix(err.Error(), "otelqueue: ") || !strings.Contains(err.Error(), want) {
		t.Errorf("%s = %q, want an otelqueue error saying %q", what, err, want)
	}
}

// TestRunnerRunContract checks that a Runner runs once: a second Run,
// concurrent or after the first, fails at once and leaves the first one
// working (a key added meanwhile is reconciled, the first Run's ctx alone
// stops it); Run on a queue already shut down and Run with a nil ctx fail.
func TestRunnerRunContract(t *testing.T) {
	t.Run("twice", func(t *testing.T) {
		e := newEnv(t, envConfig{})
		reconciled := make(chan string, 10)
		r, err := newRunner(e.q, 2, func(_ context.Context, key string) (otelqueue.Result, error) {
			reconciled <- key
			return otelqueue.Result{}, nil
		})
		if err != nil {
			t.Fatal(err)
		}
		//lint:ignore SA1012 a nil ctx is the misuse under test
		wantErr(t, "Run(nil)", r.Run(nil), "needs a context, got nil") //nolint:staticcheck
		ctx, cancel := context.WithCancel(context.Background())
		defer cancel()
		first := runErr(r, ctx) // a failed Run(nil) does not count as the one Run
		e.q.Add("a")
		testutil.Receive(t, reconciled, "the first Run's reconcile")

		ctx2, cancel2 := context.WithCancel(context.Background())
		wantErr(t, "a concurrent second Run", testutil.Receive(t, runErr(r, ctx2), "the second Run to return"), "more than once")
		cancel2() // must not stop the first
		e.q.Add("b")
		if k := testutil.Receive(t, reconciled, "the key added after the second Run"); k != "b" {
			t.Errorf("reconciled %q, want b", k)
		}
		select {
		case err := <-first:
			t.Fatalf("the first Run returned %v when the second one's ctx was cancelled", err)
		default:
		}
		cancel()
		if err := testutil.Receive(t, first, "the first Run to return"); err != nil {
			t.Errorf("first Run = %v, want nil", err)
		}
		wantErr(t, "Run after Run", r.Run(context.Background()), "more than once")
	})

	t.Run("queue shut down", func(t *testing.T) {
		e := newEnv(t, envConfig{})
		r, err := newRunner(e.q, 1, okReconcile)
		if err != nil {
			t.Fatal(err)
		}
		e.q.ShutDown()
		wantErr(t, "Run on a shut-down queue", r.Run(context.Background()), `queue "orders", which is already shut down`)
	})

	t.Run("nil Runner", func(t *testing.T) {
		var r *otelqueue.Runner[string]
		wantErr(t, "Run on a nil Runner", r.Run(context.Background()), "nil Runner")
	})
}

// TestRunnerInstrumentOrder checks that the Runner's metrics do not depend on
// whether NewRunner or Instrument came first.
func TestRunnerInstrumentOrder(t *testing.T) {
	for _, runnerFirst := range []bool{false, true} {
		name := "Instrument first"
		if runnerFirst {
			name = "NewRunner first"
		}
		t.Run(name, func(t *testing.T) {
			testutil.NoOTelErrors(t)
			e := &env{reader: sdkmetric.NewManualReader()}
			mp := meterProvider(t, e.reader)
			q := scheduler.New(scheduler.Config[string]{Name: queueName})
			t.Cleanup(q.ShutDown)
			var r *otelqueue.Runner[string]
			newRunner := func() {
				var err error
				if r, err = newRunner(q, 2, okReconcile); err != nil {
					t.Fatal(err)
				}
			}
			if runnerFirst {
				newRunner()
			}
			inst, err := otelqueue.Instrument(q, otelqueue.WithMeterProvider(mp))
			if err != nil {
				t.Fatal(err)
			}
			t.Cleanup(func() { _ = inst.Stop() })
			if !runnerFirst {
				newRunner()
			}
			q.Add("a")
			stop := runRunner(t, r)
			testutil.WaitFor(t, "the reconcile", func() bool { return r.Stats().Count(otelqueue.OutcomeSuccess) == 1 && q.Stats().InFlight == 0 })
			rm := e.collect(t)
			assertMetrics(t, rm, noTime,
				intSum(semconv.MetricActiveWorkers, "{worker}", false, queueAttrs, 0),
				workersGauge(queueAttrs, 2))
			res := findMetric(t, rm, semconv.MetricReconcileResults)
			var success int64 = -1
			for _, dp := range res.Data.(metricdata.Sum[int64]).DataPoints {
				if v, _ := dp.Attributes.Value(semconv.AttrResult); v.AsString() == otelqueue.OutcomeSuccess.String() {
					success = dp.Value
				}
			}
			if success != 1 {
				t.Errorf("reconcile results success = %d, want 1", success)
			}
			stop()
		})
	}
}

// TestInstrumentTwice checks that a second Instrument of one queue is
// refused until the first is stopped, so nothing is counted twice.
func TestInstrumentTwice(t *testing.T) {
	e := newEnv(t, envConfig{})
	inst, err := otelqueue.Instrument(e.q, otelqueue.WithMeterProvider(e.mp), otelqueue.WithTracerProvider(e.tp))
	if inst != nil {
		t.Cleanup(func() { _ = inst.Stop() })
	}
	wantErr(t, "a second Instrument", err, `scheduler "orders" is instrumented already`)
	e.q.Add("a")
	assertMetrics(t, e.collect(t), noTime, intSum(semconv.MetricAdds, "{item}", true, queueAttrs, 1))

	if err := e.inst.Stop(); err != nil {
		t.Fatal(err)
	}
	again, err := otelqueue.Instrument(e.q, otelqueue.WithMeterProvider(e.mp), otelqueue.WithTracerProvider(e.tp))
	if err != nil {
		t.Fatalf("Instrument after Stop: %v", err)
	}
	t.Cleanup(func() { _ = again.Stop() })
	e.q.Add("b")
	assertMetrics(t, e.collect(t), noTime, intSum(semconv.MetricAdds, "{item}", true, queueAttrs, 2))
}

// TestInstrumentConcurrent checks that of several Instrument calls racing on
// one queue exactly one succeeds.
func TestInstrumentConcurrent(t *testing.T) {
	testutil.NoOTelErrors(t)
	q := scheduler.New(scheduler.Config[string]{Name: queueName})
	t.Cleanup(q.ShutDown)
	mp := meterProvider(t, sdkmetric.NewManualReader())
	var (
		wg   sync.WaitGroup
		mu   sync.Mutex
		won  []*otelqueue.Instrumentation
		errs int
	)
	for range 8 {
		wg.Go(func() {
			inst, err := otelqueue.Instrument(q, otelqueue.WithMeterProvider(mp))
			mu.Lock()
			defer mu.Unlock()
			if err != nil {
				errs++
				return
			}
			won = append(won, inst)
		})
	}
	wg.Wait()
	for _, inst := range won {
		_ = inst.Stop()
	}
	if len(won) != 1 || errs != 7 {
		t.Errorf("%d Instrument calls succeeded and %d failed, want 1 and 7", len(won), errs)
	}
}

// meterProvider returns an SDK MeterProvider reading through reader, shut
// down when the test ends.
func meterProvider(t testing.TB, reader sdkmetric.Reader) *sdkmetric.MeterProvider {
	mp := sdkmetric.NewMeterProvider(sdkmetric.WithReader(reader))
	t.Cleanup(func() { _ = mp.Shutdown(context.Background()) })
	return mp
}

// TestRunnerGoexit checks that a reconcile calling runtime.Goexit does not
// cost the Runner a worker: it is counted as a panic, with a cause that
// says what happened, its key is retried, and the Runner still runs its
// full number of reconciles at once.
func TestRunnerGoexit(t *testing.T) {
	const workers = 2
	e := newEnv(t, envConfig{})
	var once sync.Once
	running := make(chan string, 10)
	release := make(chan struct{})
	r, err := newRunner(e.q, workers, func(_ context.Context, key string) (otelqueue.Result, error) {
		if key == "exit" {
			once.Do(runtime.Goexit)
			return otelqueue.Result{}, nil
		}
		running <- key
		<-release
		return otelqueue.Result{}, nil
	}, otelqueue.WithRunnerClock(e.clock))
	if err != nil {
		t.Fatal(err)
	}
	done := runErr(r, context.Background())
	t.Cleanup(func() {
		e.q.ShutDown()
		if err := testutil.Receive(t, done, "Run to return"); err != nil {
			t.Errorf("Run = %v", err)
		}
	})
	e.q.Add("exit")
	testutil.WaitFor(t, "the attempt that calls Goexit", func() bool { return r.Stats().Count(otelqueue.OutcomePanic) == 1 && e.q.Stats().InFlight == 0 })
	e.step(time.Second) // its retry, after the backoff, succeeds
	testutil.WaitFor(t, "its retry", func() bool { return r.Stats().Count(otelqueue.OutcomeSuccess) == 1 && e.q.Stats().InFlight == 0 })
	// Both workers still there: two reconciles at once.
	e.q.Add("a")
	e.q.Add("b")
	testutil.Receive(t, running, "a reconcile")
	testutil.Receive(t, running, "a second reconcile at the same time")
	close(release)
	testutil.WaitFor(t, "a and b", func() bool { return r.Stats().Count(otelqueue.OutcomeSuccess) == 3 })
	select {
	case err := <-done:
		t.Fatalf("Run returned %v with its ctx live", err)
	default:
	}

	_, _, rec := e.endedAttempt(t, "exit", 1)
	if st := rec.Status(); !strings.Contains(st.Description, "runtime.Goexit") || strings.Contains(st.Description, "<nil>") {
		t.Errorf("status of the attempt that called Goexit: %q, want the cause (runtime.Goexit), not a nil panic", st.Description)
	}
	if got := attrMap(rec.Attributes())[semconv.AttrResult].AsString(); got != otelqueue.OutcomePanic.String() {
		t.Errorf("result %q, want panic", got)
	}
}
