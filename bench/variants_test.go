package bench

import (
	"context"
	"fmt"
	"sync"
	"testing"

	dto "github.com/prometheus/client_model/go"
	"k8s.io/client-go/util/workqueue"
	"sigs.k8s.io/controller-runtime/pkg/controller/priorityqueue"
	crmetrics "sigs.k8s.io/controller-runtime/pkg/metrics"

	"github.com/otelqueue/otelqueue/internal/testutil"
	"github.com/otelqueue/otelqueue/scheduler"
)

// queueName is the Name of the named variants' queues in the benchmarks.
const queueName = "bench"

// queue is what every variant under test is: client-go's full interface.
type queue = workqueue.TypedRateLimitingInterface[string]

// lifecycleVariant is one queue measured by BenchmarkLifecycle. The variants
// share one key type (string), one key pattern and one step shape, so their
// numbers differ only by the queue.
type lifecycleVariant struct {
	// name is the sub-benchmark's variant (BenchmarkLifecycle/variant=name)
	// and the name cmd/ratios refers to in its targets.
	name string

	// start builds the queue, named name if the variant names its queues,
	// and returns step, which runs one Add -> Get -> Done of key in the
	// calling goroutine and returns the key Get handed out, and stop, which
	// shuts everything down. tb is there for variants that need setup (an
	// SDK provider, say) and may fail.
	start func(tb testing.TB, name string) (step func(key string) string, stop func())

	// check, when set, verifies that the variant's instrumentation really
	// saw the ops steps run on the queue named name (TestLifecycleWiring).
	check func(t *testing.T, name string, ops int)
}

// lifecycleVariants lists the queues compared by BenchmarkLifecycle; benchstat
// shows them in this order, so the first is its baseline column.
var lifecycleVariants = []lifecycleVariant{
	// client-go's rate-limiting queue with no Name: no metrics, no clock
	// reads. The floor every controller has today.
	{name: "clientgo-bare", start: startQueue(newClientGoBare)},
	// The scheduler with the zero Config: unnamed, no Observer.
	{name: "scheduler-bare", start: startQueue(newSchedulerBare)},
	// The scheduler named, with no Observer: a timed queue, which reads the
	// monotonic clock on every Add, Get and Done (for the ages of Stats) as
	// an instrumented one does, and records nothing. scheduler-otel less
	// this is what the Observer and the SDK cost; this less scheduler-bare,
	// what the clock reads cost.
	{name: "scheduler-timed", start: startQueue(newSchedulerTimed), check: checkTimed},
	// A named client-go queue with controller-runtime's own Prometheus
	// provider attached per queue (what a controller-runtime controller with
	// UsePriorityQueue=false gets through the global provider).
	{name: "clientgo-crprom", start: startQueue(newClientGoCRProm), check: checkCRProm},
	// controller-runtime's default queue with its default Prometheus provider.
	{name: "crpriorityqueue", start: startQueue(newCRPriorityQueue), check: checkCRProm},

	// Issue 3 adds, here and in this order (cmd/ratios already holds their
	// targets and skips them while they are absent from its input):
	//
	//	clientgo-otelprovider             named client-go queue, otelqueue's MetricsProvider per queue
	//	scheduler-otel                    named scheduler with otelqueue's Observer: metrics, no spans
	//	scheduler-otel-traced-unsampled   the same with tracing, AddContext with an unsampled parent
	//	scheduler-otel-traced-sampled     the same with a sampled parent (SDK tracer, no-op exporter)
	//	sdkfloor-sampled                  the SDK alone: what one sampled span costs with no queue
	//
	// A traced variant's start returns a step that uses AddContext and
	// GetContext; a check that reads a ManualReader or a SpanRecorder makes
	// TestLifecycleWiring prove that it is wired.
}

// startQueue adapts a queue constructor to lifecycleVariant.start with the
// plain client-go step: Add, Get, Done.
func startQueue(newQueue func(name string) queue) func(testing.TB, string) (func(string) string, func()) {
	return func(_ testing.TB, name string) (func(string) string, func()) {
		q := newQueue(name)
		step := func(key string) string {
			q.Add(key)
			got, _ := q.Get()
			q.Done(got)
			return got
		}
		return step, q.ShutDown
	}
}

// newClientGoBare returns client-go's rate-limiting queue with no Name, so
// it has no metrics even with a global provider installed.
func newClientGoBare(string) queue {
	return workqueue.NewTypedRateLimitingQueueWithConfig(
		workqueue.DefaultTypedControllerRateLimiter[string](),
		workqueue.TypedRateLimitingQueueConfig[string]{},
	)
}

// newSchedulerBare returns the scheduler with the zero Config: no name, no
// Observer. Its default rate limiter is the same as newClientGoBare's.
func newSchedulerBare(string) queue {
	return scheduler.New(scheduler.Config[string]{})
}

// newSchedulerTimed returns the scheduler named name, with no Observer.
func newSchedulerTimed(name string) queue {
	return scheduler.New(scheduler.Config[string]{Name: name})
}

// checkTimed verifies that a queue of newSchedulerTimed reads the clock: the
// Item of a key it hands out has its times, and a key ready for a while has
// an age.
func checkTimed(t *testing.T, name string, _ int) {
	t.Helper()
	q := newSchedulerTimed(name).(*scheduler.Scheduler[string])
	defer q.ShutDown()
	q.Add("a")
	q.Add("b")
	it, err := q.GetContext(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	if it.EnqueuedAt.IsZero() || it.DequeuedAt.IsZero() || it.DequeuedAt.Before(it.EnqueuedAt) {
		t.Errorf("%s: Item times %v, %v; want an enqueue time and a later dequeue time", name, it.EnqueuedAt, it.DequeuedAt)
	}
	testutil.WaitFor(t, "the ready key to have an age", func() bool { return q.Stats().OldestPending > 0 })
}

// newClientGoCRProm returns a named client-go queue with controller-runtime's
// Prometheus provider given in its config, so it is attached whatever the
// global provider is.
func newClientGoCRProm(name string) queue {
	return workqueue.NewTypedRateLimitingQueueWithConfig(
		workqueue.DefaultTypedControllerRateLimiter[string](),
		workqueue.TypedRateLimitingQueueConfig[string]{
			Name:            name,
			MetricsProvider: crMetricsProvider(),
		},
	)
}

// newCRPriorityQueue returns controller-runtime's default controller queue as
// controller.New builds it: priorityqueue.New with the default options, so
// its metrics go to controller-runtime's Prometheus registry.
func newCRPriorityQueue(name string) queue {
	return priorityqueue.New[string](name)
}

// crMetricsProvider returns controller-runtime's workqueue MetricsProvider.
//
// Its type lives in sigs.k8s.io/controller-runtime/pkg/internal/metrics,
// which registers it globally with workqueue.SetProvider in an init (pulled
// in here by priorityqueue) but cannot be imported. priorityqueue.New fills
// Opts.MetricProvider with it after applying the options it is given, so an
// option that keeps the *Opts reads it afterwards. The throwaway queue is
// unnamed (no metrics) and is shut down at once.
var crMetricsProvider = sync.OnceValue(func() workqueue.MetricsProvider {
	var opts *priorityqueue.Opts[string]
	q := priorityqueue.New[string]("", func(o *priorityqueue.Opts[string]) { opts = o })
	q.ShutDown()
	if opts == nil || opts.MetricProvider == nil {
		panic("bench: controller-runtime's priorityqueue no longer exposes its default MetricProvider through Opts")
	}
	return opts.MetricProvider
})

// checkCRProm verifies, from controller-runtime's own registry, that the
// queue named name counted at least ops adds and observed at least ops queue
// and work durations.
func checkCRProm(t *testing.T, name string, ops int) {
	t.Helper()
	for _, m := range []string{"workqueue_adds_total", "workqueue_queue_duration_seconds", "workqueue_work_duration_seconds"} {
		got, err := crMetricCount(m, name)
		if err != nil {
			t.Fatal(err)
		}
		if got < float64(ops) {
			t.Errorf("controller-runtime metric %s{name=%q} = %v after %d ops, want >= %d: the provider is not attached", m, name, got, ops, ops)
		}
	}
}

// crMetricCount gathers controller-runtime's registry and returns the value
// of the counter, or the sample count of the histogram, family with label
// name=name.
func crMetricCount(family, name string) (float64, error) {
	mfs, err := crmetrics.Registry.Gather()
	if err != nil {
		return 0, err
	}
	for _, mf := range mfs {
		if mf.GetName() != family {
			continue
		}
		for _, m := range mf.GetMetric() {
			if labelValue(m, "name") != name {
				continue
			}
			switch {
			case m.GetCounter() != nil:
				return m.GetCounter().GetValue(), nil
			case m.GetHistogram() != nil:
				return float64(m.GetHistogram().GetSampleCount()), nil
			}
		}
		return 0, nil
	}
	return 0, fmt.Errorf("controller-runtime's registry has no %s", family)
}

func labelValue(m *dto.Metric, label string) string {
	for _, l := range m.GetLabel() {
		if l.GetName() == label {
			return l.GetValue()
		}
	}
	return ""
}

// delayedVariants lists the queues compared by BenchmarkDelayed, baseline
// first. The constructors are those of lifecycleVariants.
var delayedVariants = []struct {
	name     string
	newQueue func(name string) queue
}{
	{"clientgo-bare", newClientGoBare},
	{"scheduler-bare", newSchedulerBare},
}

// keyCache holds the keys "default/obj-0", "default/obj-1", ..., made once
// and shared by every benchmark, so that no benchmark allocates keys while
// it is timed or while it measures memory.
var keyCache struct {
	sync.Mutex
	keys []string
}

// benchKeys returns the first n keys of the shared key set.
func benchKeys(n int) []string {
	keyCache.Lock()
	defer keyCache.Unlock()
	for len(keyCache.keys) < n {
		keyCache.keys = append(keyCache.keys, fmt.Sprintf("default/obj-%d", len(keyCache.keys)))
	}
	return keyCache.keys[:n:n]
}
