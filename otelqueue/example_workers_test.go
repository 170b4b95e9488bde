package otelqueue_test

import (
	"context"
	"fmt"
	"log"
	"time"

	"github.com/otelqueue/otelqueue/internal/semconv"

	sdkmetric "go.opentelemetry.io/otel/sdk/metric"
	"go.opentelemetry.io/otel/sdk/metric/metricdata"
	testingclock "k8s.io/utils/clock/testing"

	"github.com/otelqueue/otelqueue/otelqueue"
	"github.com/otelqueue/otelqueue/scheduler"
)

// Report the worker count of a queue that your own goroutines work (no
// Runner), so that utilization can be computed in PromQL:
// rate(workqueue_work_duration_seconds_sum[5m]) / workqueue_workers.
func ExampleWithWorkers() {
	ctx := context.Background()
	reader := sdkmetric.NewManualReader()
	mp := sdkmetric.NewMeterProvider(sdkmetric.WithReader(reader))
	defer mp.Shutdown(ctx)

	const workers = 4
	queue := scheduler.New(scheduler.Config[string]{Name: "deployments"})
	defer queue.ShutDown()
	inst, err := otelqueue.Instrument(queue, otelqueue.WithMeterProvider(mp), otelqueue.WithWorkers(workers))
	if err != nil {
		log.Fatal(err)
	}
	defer inst.Stop()
	// ... start `workers` goroutines that Get keys from queue.

	var rm metricdata.ResourceMetrics
	if err := reader.Collect(ctx, &rm); err != nil {
		log.Fatal(err)
	}
	for _, sm := range rm.ScopeMetrics {
		for _, m := range sm.Metrics {
			if m.Name == semconv.MetricWorkers {
				fmt.Println(m.Name, m.Data.(metricdata.Gauge[int64]).DataPoints[0].Value, m.Unit)
			}
		}
	}
	// Output:
	// workqueue.workers 4 {worker}
}

// Compute the utilization of a Runner's workers from two readings of its
// Stats, with no metrics library: the busy time gained, over the time
// elapsed and the workers. (A fake clock here, so that the output is
// exact; a program leaves WithRunnerClock out.)
func ExampleRunnerStats() {
	clock := testingclock.NewFakeClock(time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC))
	queue := scheduler.New(scheduler.Config[string]{Name: "deployments", Clock: clock})
	working := make(chan struct{})
	release := make(chan struct{})
	runner, err := otelqueue.NewRunner(queue, 4, func(ctx context.Context, key string) (otelqueue.Result, error) {
		working <- struct{}{}
		<-release
		return otelqueue.Result{}, nil
	}, otelqueue.WithRunnerClock(clock))
	if err != nil {
		log.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	stopped := make(chan error)
	go func() { stopped <- runner.Run(ctx) }()

	before := runner.Stats()
	queue.Add("default/web") // one of the four workers is busy...
	<-working
	clock.Step(10 * time.Second) // ...for 10s
	after := runner.Stats()
	utilization := float64(after.Busy-before.Busy) / float64(10*time.Second) / float64(after.Workers)
	fmt.Printf("busy %v of %d workers: utilization %.2f\n", after.Busy-before.Busy, after.Workers, utilization)

	close(release)
	cancel()
	if err := <-stopped; err != nil {
		log.Fatal(err)
	}
	// Output:
	// busy 10s of 4 workers: utilization 0.25
}
