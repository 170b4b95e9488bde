// Package bench compares the otelqueue scheduler with the queues it replaces:
// client-go's workqueue (bare, and with controller-runtime's Prometheus
// metrics provider) and controller-runtime's default priority queue.
//
// It lives in a module of its own so that controller-runtime and the other
// rivals never enter the root go.mod. Everything is in the test files; this
// file only documents the package.
//
// # Benchmarks
//
//   - BenchmarkLifecycle/variant=V: one Add -> Get -> Done per op, in one
//     goroutine, keys cycling over a small fixed set. The variants are the
//     table lifecycleVariants in variants_test.go.
//   - BenchmarkDelayed/variant=V: one AddAfter (1-50 µs, deterministic) and
//     one Get -> Done per op, in a steady state that keeps delayedLag keys in
//     the delay heap, so every Get finds a due key and no op waits for a timer
//     (see BenchmarkDelayed for why).
//   - BenchmarkPending/variant=V/pending=N: N keys pending far in the future,
//     each added with a span context. For the scheduler, one op moves one more
//     key through the delay heap (AddAfterContext far away, AddContext that
//     makes it ready at once, Get, Done). variant=scheduler-nospan is the
//     same with the N keys added by plain AddAfter, with no span context.
//     Every variant reports B/pendingkey: retained heap bytes per pending key.
//   - BenchmarkPriorities/variant=V/priorities=P/op=O: 20k keys pending at P
//     distinct priorities (1, 1k, 20k), against controller-runtime's
//     priority queue: op=adds adds them all to an empty queue, op=cycle is
//     one GetWithPriority -> Done -> add again below every pending key.
//
// Lifecycle and Delayed also report cpu-ns/op: the CPU time of the whole
// process per op (getrusage), which counts the work a queue hands to its own
// goroutines (client-go's waiting loop, the priority queue's handlers) and
// the garbage collector, and which time stolen by other processes on a busy
// machine does not inflate. ns/op is wall-clock time in the benchmark's
// goroutine, as usual; the targets are on ns/op.
//
// Sub-benchmarks are named key=value so that benchstat can put the variants
// side by side:
//
//	benchstat -col /variant results/bench.txt
//
// # Running
//
// From the repository root, `make bench` runs every benchmark -count times,
// saves bench/results/bench.txt, and prints the benchstat table and the
// ratios against the baselines with the targets checked (cmd/ratios). Plain
// `go test ./...` runs no benchmark: only the wiring tests, which check that
// every variant is built as its name says (its metrics really move, its queue
// hands items out).
package bench
