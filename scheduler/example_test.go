package scheduler_test

import (
	"context"
	"errors"
	"fmt"
	"time"

	"go.opentelemetry.io/otel/trace"
	"k8s.io/client-go/util/workqueue"
	testingclock "k8s.io/utils/clock/testing"

	"github.com/otelqueue/otelqueue/scheduler"
)

// A client-go style worker: Get and Done around each key, AddRateLimited to
// retry on error, Forget on success.
func Example_workerLoop() {
	queue := scheduler.New(scheduler.Config[string]{
		Name:        "deployments",
		RateLimiter: workqueue.NewTypedItemExponentialFailureRateLimiter[string](time.Millisecond, time.Second),
	})

	attempts := map[string]int{}
	reconcile := func(key string) error {
		attempts[key]++
		if key == "default/web" && attempts[key] < 3 {
			return errors.New("conflict")
		}
		return nil
	}

	// processNextItem is the body of a client-go controller's worker.
	processNextItem := func() bool {
		key, shutdown := queue.Get()
		if shutdown {
			return false
		}
		defer queue.Done(key)
		if err := reconcile(key); err != nil {
			fmt.Printf("%s: %v, retry %d\n", key, err, queue.NumRequeues(key)+1)
			queue.AddRateLimited(key)
			return true
		}
		fmt.Printf("%s: synced\n", key)
		queue.Forget(key)
		if attempts["default/web"] == 3 && attempts["default/db"] == 1 {
			queue.ShutDown() // done: a real controller stops on its context
		}
		return true
	}

	queue.Add("default/web")
	queue.Add("default/db")
	queue.Add("default/web") // already queued: coalesced
	for processNextItem() {
	}
	// Output:
	// default/web: conflict, retry 1
	// default/db: synced
	// default/web: conflict, retry 2
	// default/web: synced
}

// A context-aware worker: event handlers add keys with their trace context,
// the worker takes an Item and processes it in item.Context().
func Example_contextAware() {
	queue := scheduler.New(scheduler.Config[string]{Name: "pods"})
	defer queue.ShutDown()

	// Two events for the same pod, each handled in its own trace. In a
	// real handler ctx comes from the informer's instrumentation.
	for i, spanID := range []byte{0x01, 0x02} {
		sc := trace.NewSpanContext(trace.SpanContextConfig{
			TraceID:    trace.TraceID{0x0a, byte(i + 1)},
			SpanID:     trace.SpanID{spanID},
			TraceFlags: trace.FlagsSampled,
		})
		ctx := trace.ContextWithSpanContext(context.Background(), sc)
		queue.AddContext(ctx, "default/web-0")
	}

	workerCtx := context.Background()
	item, err := queue.GetContext(workerCtx)
	if err != nil {
		fmt.Println(err)
		return
	}
	func(ctx context.Context) {
		defer queue.Done(item.Key)
		// reconcile(ctx, item.Key) would run here, its spans linked to
		// the adds that asked for it.
		fmt.Println("key:", item.Key)
		fmt.Println("reason:", item.Reason)
		fmt.Println("coalesced adds:", item.Coalesced)
		fmt.Println("origin trace:", item.Origin.TraceID())
		fmt.Println("links:", len(item.Links))
	}(item.Context())

	// A worker stops when the queue shuts down.
	queue.ShutDown()
	_, err = queue.GetContext(workerCtx)
	fmt.Println(errors.Is(err, scheduler.ErrShutDown))
	// Output:
	// key: default/web-0
	// reason: immediate
	// coalesced adds: 1
	// origin trace: 0a010000000000000000000000000000
	// links: 1
	// true
}

// Stats reads a queue's numbers with no metrics library.
func ExampleScheduler_Stats() {
	clock := testingclock.NewFakeClock(time.Date(2025, 1, 1, 0, 0, 0, 0, time.UTC))
	queue := scheduler.New(scheduler.Config[string]{Name: "nodes", Clock: clock})
	defer queue.ShutDown()

	queue.Add("node-a")
	queue.Add("node-b")
	queue.Add("node-a") // coalesced
	queue.AddAfter("node-c", time.Minute)
	clock.Step(3 * time.Second)
	key, _ := queue.Get() // node-a, after waiting 3s
	clock.Step(2 * time.Second)

	st := queue.Stats()
	fmt.Println("depth:", st.Depth)
	fmt.Println("delayed:", st.Delayed)
	fmt.Println("in flight:", st.InFlight)
	fmt.Println("adds:", st.Adds, "retries:", st.Retries, "coalesced:", st.Coalesced)
	fmt.Println("oldest pending:", st.OldestPending)
	fmt.Println("longest running:", st.LongestRunning)
	queue.Done(key)
	// Output:
	// depth: 1
	// delayed: 1
	// in flight: 1
	// adds: 3 retries: 1 coalesced: 1
	// oldest pending: 5s
	// longest running: 2s
}

// Why each run happens and why it waited: an event handler says what it
// saw (Trigger, Source), the queue knows the rest (a requeue after a time,
// a retry through the rate limiter), and Reason says what held the key
// before it was ready. Inspect shows the keys still waiting, counted by
// priority, reason and place.
func ExampleItem() {
	clock := testingclock.NewFakeClock(time.Date(2025, 1, 1, 0, 0, 0, 0, time.UTC))
	queue := scheduler.New(scheduler.Config[string]{Name: "deployments", Clock: clock})
	defer queue.ShutDown()

	ctx := context.Background()
	queue.AddWithOptions(ctx, scheduler.AddOptions{Trigger: scheduler.TriggerUpdate, Source: "Deployment"}, "default/web")
	queue.AddAfter("default/db", time.Second)
	queue.AddWithOptions(ctx, scheduler.AddOptions{Priority: 10, Trigger: scheduler.TriggerCreate}, "default/cache")

	var look scheduler.Inspection[string] = queue.Inspect(10)
	var counts []scheduler.PendingCount = look.ByPriority
	for _, c := range counts {
		fmt.Printf("waiting: priority %d, %v, delayed %v: %d\n", c.Priority, c.Reason, c.Delayed, c.Keys)
	}
	var ready []scheduler.PriorityDepth = queue.DepthByPriority(nil)
	fmt.Println("ready by priority:", ready)
	clock.Step(time.Second)
	for range 3 {
		it, err := queue.GetContext(ctx)
		if errors.Is(err, scheduler.ErrShutDown) {
			return
		}
		waited := "did not wait"
		var reason scheduler.WaitReason = it.Reason
		switch reason {
		case scheduler.WaitDelayed:
			waited = "waited for its delay"
		case scheduler.WaitRateLimited:
			waited = "waited for its backoff"
		case scheduler.WaitImmediate, scheduler.WaitDebounced, scheduler.WaitHeld:
		}
		if it.Trigger == scheduler.TriggerAdd {
			waited += " (an add that said nothing more)"
		}
		fmt.Printf("%s: %v %s, %s\n", it.Key, it.Trigger, it.Source, waited)
		queue.Done(it.Key)
	}
	// Output:
	// waiting: priority 10, immediate, delayed false: 1
	// waiting: priority 0, immediate, delayed false: 1
	// waiting: priority 0, delayed, delayed true: 1
	// ready by priority: [{10 1} {0 1}]
	// default/cache: create , did not wait
	// default/web: update Deployment, did not wait
	// default/db: requeue_after , waited for its delay
}
