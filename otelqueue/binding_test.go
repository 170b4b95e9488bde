package otelqueue_test

import (
	"runtime"
	"testing"

	sdkmetric "go.opentelemetry.io/otel/sdk/metric"

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
	queues := make([]*scheduler.Scheduler[string], 0, n) // alive until counted, then dead
	for range n {
		q := scheduler.New(scheduler.Config[string]{Name: queueName})
		queues = append(queues, q)
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
	during := otelqueue.Bindings()
	if during < n {
		t.Fatalf("%d bindings with %d queues alive, want at least %d", during, n, n)
	}
	runtime.KeepAlive(queues)
	testutil.WaitFor(t, "the bindings of the collected schedulers to go", func() bool {
		runtime.GC()
		return otelqueue.Bindings() <= during-n
	})
}
