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
//   - BenchmarkLinkSource/sampling=S/variant=V: the traced lifecycle of
//     Lifecycle's scheduler-otel-traced-* variants (S unsampled or sampled),
//     with reconcile.Request keys, and each link source of the table
//     linkSources in linksource_test.go: none, a constant span context, and
//     controllerruntime.ObjectLinkSource over a fakecluster cache of
//     annotated ConfigMaps (all namespaces, and one); the difference to
//     variant=none is a link source's cost per attempt.
//   - BenchmarkLifecycle's sdkfloor-* variants (floors_test.go and
//     otel_variants_test.go) run, per op and with no queue, what otelqueue's
//     instrumentation asks of the OpenTelemetry SDK: sdkfloor-metrics the
//     two histogram records, sdkfloor-unsampled the unsampled root span with
//     its timestamp and link, sdkfloor-sampled the three spans of a sampled
//     attempt. cmd/ratios bounds the instrumented variants by the scheduler
//     plus these floors, measured in the same run. promfloor-metrics makes
//     the two measurements of sdkfloor-metrics in controller-runtime's
//     Prometheus histograms instead, and scheduler-timed is the scheduler
//     named and with no Observer: it reads the clock on Add, Get and Done as
//     an instrumented one does, and records nothing.
//   - BenchmarkThroughput/variant=V/workers=W: W workers (Get, Done) against
//     two producers adding keys on their own goroutines, the keys added and
//     not yet done kept between 128 and 256. One op is one key added and
//     processed; it reports items/s, and ns/op is the wall time per item.
//     scheduler-otel-runner runs otelqueue.Runner's W workers, with a
//     reconcile that does nothing, in place of the loop of Get and Done.
//   - BenchmarkHeap/variant=V/heap=H: the instrumented scheduler (metrics
//     only, unsampled, 10% and 100% sampled tracing) doing the lifecycle
//     step on the benchmark's own small heap and beside a retained 100 MB
//     informer-like cache; it reports heap-MB (the live heap) and GCs/Mop
//     (collections per million ops).
//
// Every benchmark but the clientgo variants of Pending also reports
// cpu-ns/op: the CPU time of the whole
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
