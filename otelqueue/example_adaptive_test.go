package otelqueue_test

import (
	"context"
	"fmt"
	"log"

	"github.com/otelqueue/otelqueue/otelqueue"
	"github.com/otelqueue/otelqueue/scheduler"
)

// Let a Runner's worker count follow the load, between 1 and 8, starting at
// its N (2). The pool decides on the queue's instrumentation, so the queue
// is instrumented first; it limits the keys handed out at once, and the
// Runner runs 8 goroutines. docs/tuning.md ("Adaptive workers") explains
// its rule and how to read its decisions.
func ExampleWithAdaptiveWorkers() {
	queue := scheduler.New(scheduler.Config[string]{Name: "deployments"})
	inst, err := otelqueue.Instrument(queue) // the global providers
	if err != nil {
		log.Fatal(err)
	}
	defer inst.Stop()

	finished := make(chan struct{})
	runner, err := otelqueue.NewRunner(queue, 2, func(ctx context.Context, key string) (otelqueue.Result, error) {
		finished <- struct{}{}
		return otelqueue.Result{}, nil
	}, otelqueue.WithAdaptiveWorkers(1, 8))
	if err != nil {
		log.Fatal(err)
	}
	queue.Add("default/web")

	ctx, cancel := context.WithCancel(context.Background())
	stopped := make(chan error)
	go func() { stopped <- runner.Run(ctx) }()
	<-finished

	// The pool's state, as the Runner's Stats and AdaptiveStats give it
	// (workqueue_workers and workqueue_workers_changes_total with metrics).
	st, _ := runner.AdaptiveStats()
	fmt.Printf("limit %d in [%d, %d], workers %d, changes %d\n", st.Limit, st.Min, st.Max, runner.Stats().Workers, st.Changes)
	cancel()
	if err := <-stopped; err != nil {
		log.Fatal(err)
	}
	// Output:
	// limit 2 in [1, 8], workers 2, changes 0
}
