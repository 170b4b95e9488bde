package bench

import (
	"context"
	"fmt"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/otelqueue/otelqueue/internal/semconv"

	"go.opentelemetry.io/otel/sdk/metric/metricdata"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"

	"github.com/otelqueue/otelqueue/otelqueue"
)

// Throughput: W workers taking keys from one queue while producers on their
// own goroutines add them, as a controller's workers and its informers'
// event handlers do.

// throughputWorkers are the worker counts BenchmarkThroughput runs with.
var throughputWorkers = []int{1, 8, 64}

const (
	// throughputProducers is the number of producer goroutines.
	throughputProducers = 2
	// throughputDepth is how many keys may be added and not yet done: the
	// producers stop there and go on once the workers have brought it down
	// to half. Above the largest worker count, so no worker waits for lack
	// of keys while the producers are running.
	throughputDepth = 256
	// throughputKeySpace is the number of distinct keys each producer cycles
	// over: far more than throughputDepth. A producer skips a key still
	// pending or in flight (a worker descheduled between Get and Done holds
	// one for long), so no add coalesces and every add is one item.
	throughputKeySpace = 4096
)

// throughputQueue is one queue as the producers and the workers use it.
type throughputQueue struct {
	add      func(key string)
	get      func() (key string, shutdown bool)
	done     func(key string)
	shutDown func()
	// run, when set, replaces the workers' loop of get and done: it runs
	// workers workers of the variant's own that call process with each key,
	// before its Done, until ctx is cancelled.
	run func(ctx context.Context, workers int, process func(key string))
}

// throughputVariant is one queue measured by BenchmarkThroughput.
type throughputVariant struct {
	// name is the sub-benchmark's variant, as in lifecycleVariants.
	name string
	// start builds the queue, named name if the variant names its queues.
	start func(tb testing.TB, name string) throughputQueue
	// check, when set, verifies that the variant's instrumentation saw ops
	// items on the queue named name (TestThroughputWiring).
	check func(t *testing.T, name string, ops int)
}

// throughputVariants lists the queues compared by BenchmarkThroughput,
// baseline first. The constructors are those of lifecycleVariants.
var throughputVariants = []throughputVariant{
	{name: "clientgo-bare", start: plainThroughput(newClientGoBare)},
	{name: "scheduler-bare", start: plainThroughput(newSchedulerBare)},
	{name: "scheduler-timed", start: plainThroughput(newSchedulerTimed), check: checkTimed},
	{name: "clientgo-crprom", start: plainThroughput(newClientGoCRProm), check: checkCRProm},
	{name: "crpriorityqueue", start: plainThroughput(newCRPriorityQueue), check: checkCRProm},
	// otelqueue's metrics (no tracing): plain Add, Get, Done.
	{name: "scheduler-otel", start: func(tb testing.TB, name string) throughputQueue {
		return plainThroughput(func(string) queue { return newSchedulerOTel(tb, name, nil) })(tb, name)
	}, check: checkOTelHistograms},
	// otelqueue's metrics and tracing, unsampled: the producers add from an
	// event handler's (unsampled) context, the workers take the item with
	// GetContext, as the Runner does.
	{name: "scheduler-otel-traced-unsampled", start: func(tb testing.TB, name string) throughputQueue {
		s := newSchedulerOTel(tb, name, sdktrace.NeverSample())
		ctx, bg := enqueueContext(false), context.Background()
		return throughputQueue{
			add: func(key string) { s.AddContext(ctx, key) },
			get: func() (string, bool) {
				it, err := s.GetContext(bg)
				return it.Key, err != nil
			},
			done:     s.Done,
			shutDown: s.ShutDown,
		}
	}, check: checkUnsampledRoots},
	// otelqueue's metrics with otelqueue.Runner's workers (results, active
	// workers, busy time, Forget of the rate limiter, error logging), a
	// reconcile that does nothing and succeeds: what a client-go user of
	// the Runner pays per item beyond scheduler-otel's Get and Done.
	{name: "scheduler-otel-runner", start: func(tb testing.TB, name string) throughputQueue {
		s := newSchedulerOTel(tb, name, nil)
		return throughputQueue{add: s.Add, shutDown: s.ShutDown,
			run: func(ctx context.Context, workers int, process func(string)) {
				r, err := otelqueue.NewRunner(s, workers, func(_ context.Context, key string) (otelqueue.Result, error) {
					process(key)
					return otelqueue.Result{}, nil
				})
				if err == nil {
					err = r.Run(ctx)
				}
				if err != nil {
					tb.Error(err)
				}
			}}
	}, check: checkRunner},
}

// checkRunner verifies that scheduler-otel-runner's Runner reported ops
// successful reconciles with the queue's metrics, beside the histograms.
func checkRunner(t *testing.T, name string, ops int) {
	t.Helper()
	checkOTelHistograms(t, name, ops)
	var rm metricdata.ResourceMetrics
	if err := readers[name].Collect(context.Background(), &rm); err != nil {
		t.Fatal(err)
	}
	for _, sm := range rm.ScopeMetrics {
		for _, m := range sm.Metrics {
			if m.Name != semconv.MetricReconcileResults {
				continue
			}
			for _, dp := range m.Data.(metricdata.Sum[int64]).DataPoints {
				if r, _ := dp.Attributes.Value(semconv.AttrResult); r.AsString() == otelqueue.OutcomeSuccess.String() && dp.Value >= int64(ops) {
					return
				}
			}
		}
	}
	t.Errorf("%s: no %s{result=success} >= %d: the Runner's results are not reported", name, semconv.MetricReconcileResults, ops)
}

// plainThroughput adapts a queue constructor to throughputVariant.start with
// client-go's Add, Get and Done.
func plainThroughput(newQueue func(name string) queue) func(testing.TB, string) throughputQueue {
	return func(_ testing.TB, name string) throughputQueue {
		q := newQueue(name)
		return throughputQueue{add: q.Add, get: q.Get, done: q.Done, shutDown: q.ShutDown}
	}
}

// BenchmarkThroughput measures W workers (Get, Done, no work in between)
// against throughputProducers producers adding keys, each on its own
// goroutine. One op is one key added and processed; the benchmark ends when
// the workers have processed b.N. ns/op is the wall time per item (1e9 /
// items/s), cpu-ns/op the CPU time of the whole process per item, producers
// included.
func BenchmarkThroughput(b *testing.B) {
	for _, v := range throughputVariants {
		for _, w := range throughputWorkers {
			b.Run(fmt.Sprintf("variant=%s/workers=%d", v.name, w), func(b *testing.B) {
				q := v.start(b, queueName)
				r := newThroughputRun(q, w, b.N)
				b.ReportAllocs()
				b.ResetTimer()
				cpu := startCPU()
				if err := r.run(10 * time.Minute); err != nil {
					b.Fatal(err)
				}
				cpu.report(b)
				b.StopTimer()
				b.ReportMetric(float64(b.N)/b.Elapsed().Seconds(), "items/s")
				r.stop()
			})
		}
	}
}

// throughputRun is one run of producers and workers over one queue.
type throughputRun struct {
	q                  throughputQueue
	items              int
	workers, producers sync.WaitGroup

	start    chan struct{} // closed to let every goroutine go
	finished chan struct{} // closed by the worker that processes the last item
	failed   chan error

	added, processed atomic.Int64

	// index maps each key to its busy flag: set by the producer that adds
	// the key, cleared by the worker once it is done.
	index map[string]int
	busy  []atomic.Bool

	// The producers' flow control: they wait on refill, under mu, while
	// more than half of throughputDepth is outstanding, once they have
	// reached throughputDepth; waiting tells the workers to signal.
	mu      sync.Mutex
	refill  sync.Cond
	waiting atomic.Int32

	// cancel stops the workers of a variant that runs its own (run).
	cancel context.CancelFunc
}

// newThroughputRun starts the workers and the producers of a run of items
// items over q; they wait for run.
func newThroughputRun(q throughputQueue, workers, items int) *throughputRun {
	r := &throughputRun{
		q:        q,
		items:    items,
		start:    make(chan struct{}),
		finished: make(chan struct{}),
		failed:   make(chan error, 1),
	}
	r.refill.L = &r.mu
	keys := benchKeys(throughputProducers * throughputKeySpace)
	r.index = make(map[string]int, len(keys))
	for i, k := range keys {
		r.index[k] = i
	}
	r.busy = make([]atomic.Bool, len(keys))
	if q.run != nil {
		ctx, cancel := context.WithCancel(context.Background())
		r.cancel = cancel
		r.workers.Add(1)
		go func() {
			defer r.workers.Done()
			<-r.start
			q.run(ctx, workers, r.itemDone)
		}()
	} else {
		for range workers {
			r.workers.Add(1)
			go r.work()
		}
	}
	for p := range throughputProducers {
		n := items / throughputProducers
		if p == 0 {
			n += items % throughputProducers
		}
		r.producers.Add(1)
		go func() {
			defer r.producers.Done()
			r.produce(p*throughputKeySpace, n)
		}()
	}
	return r
}

// run lets the goroutines go and waits until every item is processed, for
// at most timeout.
func (r *throughputRun) run(timeout time.Duration) error {
	close(r.start)
	t := time.NewTimer(timeout)
	defer t.Stop()
	select {
	case <-r.finished:
		return nil
	case err := <-r.failed:
		return err
	case <-t.C:
		return fmt.Errorf("%d of %d items processed after %v: items were lost or coalesced", r.processed.Load(), r.items, timeout)
	}
}

// stop shuts the queue down and waits for the producers and the workers to
// leave.
func (r *throughputRun) stop() {
	r.producers.Wait()
	if r.cancel != nil {
		r.cancel()
	}
	r.q.shutDown()
	r.workers.Wait()
}

// produce adds n keys from the producer's part of the key set, which starts
// at first.
func (r *throughputRun) produce(first, n int) {
	<-r.start
	keys := benchKeys(throughputProducers * throughputKeySpace)
	for i := 0; n > 0; i++ {
		if r.added.Load()-r.processed.Load() >= throughputDepth {
			r.waitRefill()
		}
		j := first + i%throughputKeySpace
		if !r.busy[j].CompareAndSwap(false, true) {
			continue
		}
		r.q.add(keys[j])
		r.added.Add(1)
		n--
	}
}

// waitRefill waits until at most half of throughputDepth is outstanding.
func (r *throughputRun) waitRefill() {
	r.mu.Lock()
	r.waiting.Add(1)
	for r.added.Load()-r.processed.Load() > throughputDepth/2 {
		r.refill.Wait()
	}
	r.waiting.Add(-1)
	r.mu.Unlock()
}

func (r *throughputRun) work() {
	defer r.workers.Done()
	<-r.start
	for {
		k, shutdown := r.q.get()
		if shutdown {
			return
		}
		r.q.done(k)
		r.itemDone(k)
	}
}

// itemDone does the bookkeeping of one key processed: it frees the key for
// its producer, counts it, and wakes the producers when they wait.
func (r *throughputRun) itemDone(k string) {
	r.busy[r.index[k]].Store(false)
	n := r.processed.Add(1)
	if n == int64(r.items) {
		close(r.finished)
	} else if n > int64(r.items) {
		select {
		case r.failed <- fmt.Errorf("processed %d items, more than the %d added", n, r.items):
		default:
		}
	}
	if r.waiting.Load() > 0 && r.added.Load()-n <= throughputDepth/2 {
		r.mu.Lock()
		r.refill.Broadcast()
		r.mu.Unlock()
	}
}

// TestThroughputWiring runs BenchmarkThroughput's body for every variant
// with 1 and 8 workers: every added item must be processed once (no add
// coalesced, none lost, within a minute) and the variant's own check must
// pass.
func TestThroughputWiring(t *testing.T) {
	const items = 3000
	for _, v := range throughputVariants {
		for _, w := range []int{1, 8} {
			t.Run(fmt.Sprintf("%s/workers=%d", v.name, w), func(t *testing.T) {
				name := fmt.Sprintf("wiring-throughput-%s-%d", v.name, w)
				q := v.start(t, name)
				r := newThroughputRun(q, w, items)
				if err := r.run(time.Minute); err != nil {
					t.Fatal(err)
				}
				r.stop()
				if got := r.processed.Load(); got != items {
					t.Fatalf("processed %d items, want %d", got, items)
				}
				if v.check != nil {
					v.check(t, name, items)
				}
			})
		}
	}
}
