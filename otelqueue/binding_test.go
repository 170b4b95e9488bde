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
	"weak"

	"github.com/otelqueue/otelqueue/internal/semconv"

	"go.opentelemetry.io/otel/attribute"
	sdkmetric "go.opentelemetry.io/otel/sdk/metric"
	"go.opentelemetry.io/otel/sdk/metric/metricdata"

	"github.com/otelqueue/otelqueue/internal/testutil"
	"github.com/otelqueue/otelqueue/otelqueue"
	"github.com/otelqueue/otelqueue/scheduler"
)

// TestBindingsDoNotKeepSchedulers checks that what ties a scheduler to its
// Instrumentation and Runner goes away with the scheduler: controller-runtime
// builds a queue at every start, and a long-running process must not keep
// them all.
func TestBindingsDoNotKeepSchedulers(t *testing.T) {
	testutil.NoOTelErrors(t)
	mp := meterProvider(t, sdkmetric.NewManualReader())
	const n = 50
	queues := make([]weak.Pointer[scheduler.Scheduler[string]], 0, n)
	for range n {
		q := scheduler.New(scheduler.Config[string]{Name: queueName})
		queues = append(queues, weak.Make(q))
		if _, err := otelqueue.NewRunner(q, 1, okReconcile); err != nil {
			t.Fatal(err)
		}
		inst, err := otelqueue.Instrument(q, otelqueue.WithMeterProvider(mp))
		if err != nil {
			t.Fatal(err)
		}
		q.Add("a")
		k, _ := q.Get()
		q.Done(k)
		if err := inst.Stop(); err != nil {
			t.Fatal(err)
		}
		q.ShutDown()
	}
	testutil.WaitFor(t, "the instrumented schedulers, dropped, to be collected", func() bool {
		runtime.GC()
		for _, q := range queues {
			if q.Value() != nil {
				return false
			}
		}
		return true
	})
}

// workersValue returns `workqueue.workers` of queueAttrs, or -1 when absent.
func workersValue(t *testing.T, rm metricdata.ResourceMetrics) int64 {
	t.Helper()
	for _, sm := range rm.ScopeMetrics {
		for _, m := range sm.Metrics {
			if m.Name == semconv.MetricWorkers {
				return pointValue(t, m.Name, m.Data.(metricdata.Gauge[int64]).DataPoints, queueAttrs)
			}
		}
	}
	return -1
}

// TestRunnersOfOneQueueAddUp: two Runners of one instrumented queue are
// both reported, summed (not the last one made), and a Runner's workers
// stop counting when its Run returns.
func TestRunnersOfOneQueueAddUp(t *testing.T) {
	e := newEnv(t, envConfig{})
	first, err := otelqueue.NewRunner(e.q, 3, okReconcile)
	if err != nil {
		t.Fatal(err)
	}
	second, err := otelqueue.NewRunner(e.q, 2, func(context.Context, string) (otelqueue.Result, error) {
		return otelqueue.Result{}, errors.New("boom")
	})
	if err != nil {
		t.Fatal(err)
	}
	if n := workersValue(t, e.collect(t)); n != 5 {
		t.Fatalf("%s = %d with Runners of 3 and 2 workers, want 5", semconv.MetricWorkers, n)
	}

	// The second Runner runs and fails one key, then stops.
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- second.Run(ctx) }()
	e.q.Add("a")
	testutil.WaitFor(t, "the failed reconcile", func() bool {
		return second.Stats().Count(otelqueue.OutcomeError) == 1 && e.q.Stats().InFlight == 0
	})
	cancel()
	if err := testutil.Receive(t, done, "Run to return"); err != nil {
		t.Fatal(err)
	}
	rm := e.collect(t)
	if n := workersValue(t, rm); n != 3 {
		t.Errorf("%s = %d once the 2-worker Runner stopped, want 3", semconv.MetricWorkers, n)
	}
	errAttrs := attribute.NewSet(append(queueAttrs.ToSlice(), semconv.AttrResult.String("error"))...)
	if n := intValue(t, rm, semconv.MetricReconcileResults, errAttrs); n != 1 {
		t.Errorf("%s{result=error} = %d, want the stopped Runner's 1", semconv.MetricReconcileResults, n)
	}
	if st := first.Stats(); st.Reconciles() != 0 || st.Workers != 3 {
		t.Errorf("the first Runner's Stats = %+v: another Runner's work counted for it", st)
	}
	runtime.KeepAlive(first)
}

// TestUnrunRunnerCollected: a Runner dropped without running gives its
// workers back when it is collected.
func TestUnrunRunnerCollected(t *testing.T) {
	e := newEnv(t, envConfig{opts: []otelqueue.Option{otelqueue.WithWorkers(7)}})
	if _, err := otelqueue.NewRunner(e.q, 3, okReconcile); err != nil {
		t.Fatal(err)
	}
	testutil.WaitFor(t, "the dropped Runner's workers to go", func() bool {
		runtime.GC()
		return workersValue(t, e.collect(t)) == 7 // WithWorkers's count again
	})
}

// TestInstrumentInstallsAtomically: of concurrent Instruments of one
// scheduler exactly one succeeds, and Instrument refuses a scheduler whose
// Observer someone else installed rather than replace it.
func TestInstrumentInstallsAtomically(t *testing.T) {
	mp := meterProvider(t, sdkmetric.NewManualReader())
	q := scheduler.New(scheduler.Config[string]{Name: queueName})
	t.Cleanup(q.ShutDown)
	var wg sync.WaitGroup
	insts := make(chan *otelqueue.Instrumentation, 8)
	for range 8 {
		wg.Go(func() {
			if inst, err := otelqueue.Instrument(q, otelqueue.WithMeterProvider(mp)); err == nil {
				insts <- inst
			} else if !strings.Contains(err.Error(), "instrumented already") {
				t.Errorf("a losing Instrument said %q, want it to say the scheduler is instrumented already", err)
			}
		})
	}
	wg.Wait()
	close(insts)
	var won []*otelqueue.Instrumentation
	for inst := range insts {
		won = append(won, inst)
	}
	if len(won) != 1 {
		t.Fatalf("%d concurrent Instruments succeeded, want 1", len(won))
	}
	if err := won[0].Stop(); err != nil {
		t.Fatal(err)
	}

	own := &countingObserver{}
	q.SetObserver(own)
	_, err := otelqueue.Instrument(q, otelqueue.WithMeterProvider(mp))
	if err == nil || !strings.Contains(err.Error(), "has an Observer already") {
		t.Fatalf("Instrument over another Observer = %v, want a refusal", err)
	}
	if q.Observer() != scheduler.Observer[string](own) {
		t.Error("a refused Instrument replaced the Observer")
	}
}

// countingObserver is an Observer that is not otelqueue's.
type countingObserver struct{ n atomic.Int64 }

func (o *countingObserver) Dequeued(ctx context.Context, _ *scheduler.Item[string]) context.Context {
	o.n.Add(1)
	return ctx
}
func (o *countingObserver) Done(context.Context, string, time.Time, time.Time) {}
