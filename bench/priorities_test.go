package bench

import (
	"context"
	"testing"

	"sigs.k8s.io/controller-runtime/pkg/controller/priorityqueue"

	"github.com/otelqueue/otelqueue/scheduler"
)

// prioritiesKeys is the number of keys BenchmarkPriorities keeps pending.
const prioritiesKeys = 20_000

// prioritiesCounts are the numbers of distinct priorities of
// BenchmarkPriorities' pending keys.
var prioritiesCounts = []struct {
	name string
	n    int
}{
	{"1", 1},
	{"1k", 1_000},
	{"20k", 20_000},
}

// priorityQueue is what BenchmarkPriorities drives: a queue that takes a
// priority with each add, as controller-runtime's priority queue does.
type priorityQueue interface {
	addAt(key string, priority int)
	GetWithPriority() (key string, priority int, shutdown bool)
	Done(key string)
	Len() int
	ShutDown()
}

// priorityVariants lists the queues compared by BenchmarkPriorities,
// baseline first. Both are named queueName: the scheduler reads its clock
// and keeps its oldest-pending age; controller-runtime's queue has its
// default Prometheus metrics. The scheduler is configured as package
// controllerruntime's queue is (controller-runtime's order and shutdown).
var priorityVariants = []struct {
	name     string
	newQueue func(name string) priorityQueue
}{
	{"crpriorityqueue", func(name string) priorityQueue { return crPriorities{priorityqueue.New[string](name)} }},
	{"scheduler", func(name string) priorityQueue {
		return schedPriorities{scheduler.New(scheduler.Config[string]{Name: name, OrderByAdd: true, StopOnShutDown: true})}
	}},
}

type crPriorities struct {
	priorityqueue.PriorityQueue[string]
}

func (q crPriorities) addAt(key string, priority int) {
	q.AddWithOpts(priorityqueue.AddOpts{Priority: &priority}, key)
}

type schedPriorities struct {
	*scheduler.Scheduler[string]
}

func (q schedPriorities) addAt(key string, priority int) {
	q.AddWithOptions(context.Background(), scheduler.AddOptions{Priority: priority}, key)
}

// initialPriority is the priority of the i-th of the keys first added at
// p distinct priorities: every priority of [0, p) as often, in a scrambled
// order (7919 is prime, so i -> i*7919 mod p visits them all).
func initialPriority(i, p int) int { return (i * 7919) % p }

// fillPriorities adds keys to q at p distinct priorities and returns once
// they are all ready (controller-runtime's queue adds through a buffer,
// which its Len flushes).
func fillPriorities(tb testing.TB, q priorityQueue, keys []string, p int) {
	for i, k := range keys {
		q.addAt(k, initialPriority(i, p))
	}
	if n := q.Len(); n != len(keys) {
		tb.Fatalf("%d keys ready after adding %d", n, len(keys))
	}
}

// priorityCycle is one op of the steady state: Get the key of the highest
// priority, Done, and add it again below every pending key (at its
// priority minus p), as a priority computed from changing object data
// would. p distinct priorities stay pending (p+1 while one drains), and
// every key goes through every level.
func priorityCycle(q priorityQueue, p int) (key string, priority int) {
	key, priority, _ = q.GetWithPriority()
	q.Done(key)
	q.addAt(key, priority-p)
	return key, priority
}

// BenchmarkPriorities measures queues whose prioritiesKeys pending keys are
// spread over P distinct priorities (controller-runtime's AddOpts.Priority),
// for P in prioritiesCounts:
//
//   - op=adds: one op adds the prioritiesKeys keys to an empty queue, until
//     they are all ready (making and shutting down the queue is not timed);
//     also reported per key as ns/key.
//   - op=cycle: one op is one GetWithPriority -> Done -> add of that key
//     again below every pending one, in the steady state of
//     prioritiesKeys keys at P priorities (see priorityCycle).
func BenchmarkPriorities(b *testing.B) {
	keys := benchKeys(prioritiesKeys)
	for _, pc := range prioritiesCounts {
		for _, v := range priorityVariants {
			b.Run("variant="+v.name+"/priorities="+pc.name+"/op=adds", func(b *testing.B) {
				b.ReportAllocs()
				b.ResetTimer()
				cpu := startCPU()
				for range b.N {
					b.StopTimer()
					q := v.newQueue(queueName)
					b.StartTimer()
					fillPriorities(b, q, keys, pc.n)
					b.StopTimer()
					q.ShutDown()
					b.StartTimer()
				}
				cpu.report(b)
				b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N*len(keys)), "ns/key")
			})
			b.Run("variant="+v.name+"/priorities="+pc.name+"/op=cycle", func(b *testing.B) {
				q := v.newQueue(queueName)
				defer q.ShutDown()
				fillPriorities(b, q, keys, pc.n)
				b.ReportAllocs()
				b.ResetTimer()
				cpu := startCPU()
				for range b.N {
					priorityCycle(q, pc.n)
				}
				cpu.report(b)
				b.StopTimer()
				if n := q.Len(); n != len(keys) {
					b.Fatalf("%d keys ready after the ops, want %d", n, len(keys))
				}
			})
		}
	}
}

// TestPrioritiesWiring runs BenchmarkPriorities' steady state on a small
// queue of each variant: the keys must come out highest priority first, each
// with the priority it was added with.
func TestPrioritiesWiring(t *testing.T) {
	const n, p = 200, 10
	keys := benchKeys(n)
	for _, v := range priorityVariants {
		t.Run(v.name, func(t *testing.T) {
			q := v.newQueue("wiring-priorities-" + v.name)
			defer q.ShutDown()
			fillPriorities(t, q, keys, p)
			want := map[string]int{}
			for i, k := range keys {
				want[k] = initialPriority(i, p)
			}
			last := p
			for i := range 3 * n {
				key, prio := priorityCycle(q, p)
				if prio != want[key] || prio > last {
					t.Fatalf("op %d: got %q at priority %d after priority %d; it was added at %d", i, key, prio, last, want[key])
				}
				want[key], last = prio-p, prio
			}
		})
	}
}
