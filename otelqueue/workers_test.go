package otelqueue_test

import (
	"context"
	"runtime"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/otelqueue/otelqueue/internal/semconv"

	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/sdk/metric/metricdata"

	"github.com/otelqueue/otelqueue/internal/testutil"
	"github.com/otelqueue/otelqueue/otelqueue"
	"github.com/otelqueue/otelqueue/scheduler"
)

// workersGauge is the expected `workqueue.workers` of one queue.
func workersGauge(attrs attribute.Set, n int64) metricdata.Metrics {
	return metricdata.Metrics{
		Name: semconv.MetricWorkers,
		Unit: "{worker}",
		Data: metricdata.Gauge[int64]{
			DataPoints: []metricdata.DataPoint[int64]{{Attributes: attrs, Value: n}},
		},
	}
}

// TestMetricsWorkers checks `workqueue.workers`: absent when unknown, WithWorkers's
// count without a Runner, the Runner's count (which wins) with one, and the
// controller attribute like every other metric.
func TestMetricsWorkers(t *testing.T) {
	t.Run("unknown", func(t *testing.T) {
		e := newEnv(t, envConfig{})
		if names := metricNames(t, e.collect(t)); slices.Contains(names, semconv.MetricWorkers) {
			t.Errorf("metrics %q: no worker count is known, want no %s", names, semconv.MetricWorkers)
		}
	})
	t.Run("WithWorkers", func(t *testing.T) {
		e := newEnv(t, envConfig{opts: []otelqueue.Option{otelqueue.WithWorkers(4), otelqueue.WithControllerName("orders-controller")}})
		attrs := attribute.NewSet(semconv.AttrName.String(queueName), semconv.AttrController.String("orders-controller"))
		assertMetrics(t, e.collect(t), noTime, workersGauge(attrs, 4))
	})
	t.Run("Runner wins", func(t *testing.T) {
		e := newEnv(t, envConfig{opts: []otelqueue.Option{otelqueue.WithWorkers(8)}})
		r, err := newRunner(e.q, 3, okReconcile)
		if err != nil {
			t.Fatal(err)
		}
		assertMetrics(t, e.collect(t), noTime, workersGauge(queueAttrs, 3))
		runtime.KeepAlive(r) // a Runner collected without running counts no more
	})
	t.Run("invalid", func(t *testing.T) {
		for _, n := range []int{0, -2} {
			q := scheduler.New(scheduler.Config[string]{Name: queueName})
			inst, err := otelqueue.Instrument(q, otelqueue.WithWorkers(n))
			if err == nil {
				_ = inst.Stop()
				t.Errorf("Instrument with WithWorkers(%d) succeeded, want an error", n)
			} else if want := "WithWorkers needs at least 1 worker"; !strings.Contains(err.Error(), want) {
				t.Errorf("Instrument with WithWorkers(%d) = %q, want it to say %q", n, err, want)
			}
			q.ShutDown()
		}
	})
}

// TestRunnerBusy checks RunnerStats.Workers and Busy on a fake clock: busy
// time counts every worker processing a key, those in flight included, and
// stops growing when the workers are idle.
func TestRunnerBusy(t *testing.T) {
	e := newEnv(t, envConfig{})
	started := make(chan string, 2)
	release := map[string]chan struct{}{"a": make(chan struct{}), "b": make(chan struct{})}
	r, err := newRunner(e.q, 2, func(_ context.Context, key string) (otelqueue.Result, error) {
		started <- key
		<-release[key]
		return otelqueue.Result{}, nil
	}, otelqueue.WithRunnerClock(e.clock))
	if err != nil {
		t.Fatal(err)
	}
	if s := r.Stats(); s.Workers != 2 || s.Busy != 0 {
		t.Fatalf("before Run: Workers %d, Busy %v; want 2, 0", s.Workers, s.Busy)
	}
	e.q.Add("a")
	e.q.Add("b")
	runRunner(t, r)
	testutil.Receive(t, started, "a reconcile")
	testutil.Receive(t, started, "the other reconcile")
	e.step(3 * time.Second)
	if b := r.Stats().Busy; b != 6*time.Second {
		t.Errorf("two workers busy for 3s: Busy %v, want 6s", b)
	}
	close(release["a"])
	testutil.WaitFor(t, "a's end", func() bool { return r.Stats().Count(otelqueue.OutcomeSuccess) == 1 })
	e.step(time.Second)
	if b := r.Stats().Busy; b != 7*time.Second {
		t.Errorf("a worked 3s, b 4s so far: Busy %v, want 7s", b)
	}
	close(release["b"])
	testutil.WaitFor(t, "b's end", func() bool { return r.Stats().Count(otelqueue.OutcomeSuccess) == 2 })
	e.step(time.Hour)
	if s := r.Stats(); s.Busy != 7*time.Second || s.Workers != 2 {
		t.Errorf("idle for an hour: Busy %v, Workers %d; want 7s, 2", s.Busy, s.Workers)
	}
}
