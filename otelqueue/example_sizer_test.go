package otelqueue_test

import (
	"context"
	"fmt"
	"log"
	"sync"
	"time"

	"github.com/otelqueue/otelqueue/otelqueue"
	"github.com/otelqueue/otelqueue/scheduler"
)

// How many workers, cores and memory: a Sizer sizes the queues
// instrumented WithSizer and their process from the busiest five minutes
// of the last hour (here, the second the example runs). Its Caches are the
// informer caches the memory is counted per: informer.GetStore() in a
// client-go controller; here a stand-in with three objects.
func ExampleSizer() {
	ctx, cancel := context.WithCancel(context.Background())
	queue := scheduler.New(scheduler.Config[string]{Name: "configmaps"})

	sizer := &otelqueue.Sizer{Caches: []otelqueue.Cache{store{"a", "b", "c"}}}
	inst, err := otelqueue.Instrument(queue, otelqueue.WithSizer(sizer))
	if err != nil {
		log.Fatal(err)
	}
	defer inst.Stop()
	var wg sync.WaitGroup
	wg.Go(func() { _ = sizer.Start(ctx) })

	runner, err := otelqueue.NewRunner(queue, 4, func(ctx context.Context, key string) (otelqueue.Result, error) {
		time.Sleep(time.Millisecond) // the reconcile's work
		return otelqueue.Result{}, nil
	})
	if err != nil {
		log.Fatal(err)
	}
	wg.Go(func() { _ = runner.Run(ctx) })
	for i := range 20 {
		queue.Add(fmt.Sprint("default/config-", i))
	}
	time.Sleep(1500 * time.Millisecond)

	rec := sizer.Recommend() // log.Print(rec) prints it whole, with its arithmetic
	q := rec.Queues[0]
	fmt.Printf("%s: %d workers run, at most %d needed\n", q.Name, q.Workers, q.Run)
	fmt.Println("CPU request and limit known:", rec.CPU.Request > 0 && rec.CPU.Limit == 2*rec.CPU.Request)
	fmt.Println("memory request, limit and GOMEMLIMIT known:", rec.Memory.Request > 0 && rec.Memory.Limit > rec.Memory.Request && rec.Memory.GOMEMLIMIT < rec.Memory.Limit)
	fmt.Println("objects:", rec.Memory.Objects)
	cancel()
	wg.Wait()
	// Output:
	// configmaps: 4 workers run, at most 1 needed
	// CPU request and limit known: true
	// memory request, limit and GOMEMLIMIT known: true
	// objects: 3
}

// store stands in for an informer's cache.Store.
type store []string

func (s store) List() []any {
	out := make([]any, len(s))
	for i, o := range s {
		out[i] = o
	}
	return out
}
