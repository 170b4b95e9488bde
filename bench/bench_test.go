package bench

import (
	"fmt"
	"os"
	"testing"
	"time"

	"go.uber.org/goleak"
)

func TestMain(m *testing.M) {
	code := m.Run()
	if code == 0 {
		if err := findLeaks(3 * time.Second); err != nil {
			fmt.Fprintln(os.Stderr, "goleak:", err)
			code = 1
		}
	}
	os.Exit(code)
}

// findLeaks reports the goroutines still running once the tests are over,
// giving them up to grace to leave. Every queue a test or benchmark starts
// is shut down before it returns, but client-go's and controller-runtime's
// metric loops only notice at their next 500 ms tick, longer than goleak's
// own retries wait.
func findLeaks(grace time.Duration) error {
	deadline := time.Now().Add(grace)
	for {
		err := goleak.Find(goleak.IgnoreTopFunction("k8s.io/klog/v2.(*flushDaemon).run.func1"))
		if err == nil || time.Now().After(deadline) {
			return err
		}
		time.Sleep(50 * time.Millisecond)
	}
}

// lifecycleKeys is the size of the key set BenchmarkLifecycle cycles over:
// small, so that every variant's maps stay in cache and the numbers are the
// queues' own costs. A power of two, so the cycling costs an AND.
const lifecycleKeys = 64

// BenchmarkLifecycle measures one Add -> Get -> Done per op in a single
// goroutine, for every variant of lifecycleVariants.
func BenchmarkLifecycle(b *testing.B) {
	keys := benchKeys(lifecycleKeys)
	for _, v := range lifecycleVariants {
		b.Run("variant="+v.name, func(b *testing.B) {
			step, stop := v.start(b, queueName)
			defer stop()
			timeSteps(b, step, keys)
		})
	}
}

// timeSteps runs step b.N times, cycling over keys (lifecycleKeys of them:
// the constant keeps the cycling an AND), and reports the allocations and
// the CPU time per op (cpu-ns/op) beside ns/op.
func timeSteps[K any](b *testing.B, step func(K) K, keys []K) {
	keys = keys[:lifecycleKeys]
	b.ReportAllocs()
	b.ResetTimer()
	cpu := startCPU()
	for i := range b.N {
		step(keys[i%lifecycleKeys])
	}
	cpu.report(b)
}

// cpuClock measures the CPU time of the whole process over a benchmark's
// timed loop, reported as cpu-ns/op beside the wall-clock ns/op. The two
// differ when a queue hands work to goroutines of its own (client-go's
// waiting loop, controller-runtime's priority queue handlers): on the two
// cores here that work runs in parallel with the benchmark's goroutine and
// is hidden from ns/op, but not from cpu-ns/op. Both include the garbage
// collector's work caused by the op's allocations.
type cpuClock struct {
	start time.Duration
	ok    bool
}

func startCPU() cpuClock {
	t, ok := processCPU()
	return cpuClock{t, ok}
}

func (c cpuClock) report(b *testing.B) {
	if t, ok := processCPU(); ok && c.ok && b.N > 0 {
		b.ReportMetric(float64(t-c.start)/float64(b.N), "cpu-ns/op")
	}
}

const (
	// delayedLag is how many keys BenchmarkDelayed keeps in the delay heap.
	// It must outlast the longest delay (50 µs) at the fastest op rate
	// (~25 ns/op), so that a due key is always there for Get.
	delayedLag = 2048
	// delayedKeySet is the number of distinct keys BenchmarkDelayed cycles
	// over: several times delayedLag, so a key is long done before it comes
	// back and no AddAfter coalesces.
	delayedKeySet = 8 * delayedLag
)

// delayedDelay is the delay of the i-th AddAfter: 1 to 50 µs, spread
// deterministically (17 and 50 are coprime, so every value comes once in
// every 50 consecutive adds, not in order).
func delayedDelay(i int) time.Duration {
	return time.Duration(1+(i*17)%50) * time.Microsecond
}

// BenchmarkDelayed measures the delay path per key: one op is one AddAfter
// with a 1-50 µs delay plus one Get -> Done, in a single goroutine.
//
// Adding a batch and then draining it would mostly measure how late timers
// fire: on these machines a sub-millisecond timer wakes 0.3-1.3 ms late
// (netpoll sleeps in whole milliseconds), far more than the queues' own work,
// and client-go moves due keys only from its timer goroutine. So the
// benchmark runs in the steady state a controller with short requeues sees:
// delayedLag keys stay in the delay heap, the keys added more than 50 µs ago
// are due, and every Get finds one ready without waiting for a timer. The
// priming (delayedLag adds and a pause for them to fall due) and the final
// drain are not timed; every timed op adds one key and finishes one.
func BenchmarkDelayed(b *testing.B) {
	keys := benchKeys(delayedKeySet)
	for _, v := range delayedVariants {
		b.Run("variant="+v.name, func(b *testing.B) {
			q := v.newQueue("")
			defer q.ShutDown()
			primeDelayed(q, keys)
			b.ReportAllocs()
			b.ResetTimer()
			cpu := startCPU()
			for i := range b.N {
				j := i + delayedLag
				q.AddAfter(keys[j%delayedKeySet], delayedDelay(j))
				k, _ := q.Get()
				q.Done(k)
			}
			cpu.report(b)
			b.StopTimer()
			drainDelayed(q, delayedLag)
		})
	}
}

// primeDelayed adds the first delayedLag keys with their delays and waits
// until they are all due.
func primeDelayed(q queue, keys []string) {
	for i := range delayedLag {
		q.AddAfter(keys[i], delayedDelay(i))
	}
	time.Sleep(2 * time.Millisecond)
}

// drainDelayed takes n keys out of q, waiting for them to fall due.
func drainDelayed(q queue, n int) {
	for range n {
		k, _ := q.Get()
		q.Done(k)
	}
}
