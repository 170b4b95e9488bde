// Package otelqueue instruments controller work queues with OpenTelemetry.
//
// [Instrument] attaches to a [scheduler.Scheduler] in one call. From then on
// every key that goes through the queue produces:
//
//   - one trace per processing attempt: a root span "process <queue name>"
//     that links to the span contexts the key was enqueued from (every
//     coalesced add, bounded) and, on a retry, to the previous attempt; under
//     it a span named "queued" for the wait (earliest pending enqueue to
//     dequeue) and a span named "reconcile" for the work (dequeue to Done),
//     which is the parent of the reconciler's own spans;
//   - the queue-wait and work-duration histograms, recorded inside those
//     spans' contexts so that the SDK's trace-based exemplar filter links
//     histogram buckets to the traces;
//   - counters and gauges (depth, adds, retries, in-flight work, oldest
//     pending item, ...) read from the scheduler's Stats at collection time,
//     so the hot path pays for no other OpenTelemetry call.
//
// Through the OpenTelemetry Prometheus exporter the metrics carry
// controller-runtime's names (workqueue_depth, workqueue_adds_total,
// workqueue_queue_duration_seconds, ...) and its name and controller labels,
// so existing dashboards keep working. docs/semantic-conventions.md in the
// repository has the full table of the names, with kinds, units and
// Prometheus names (generated from semconv/registry.yaml).
//
// With [WithClientTime], a queue also records where its attempts spent their
// time in Kubernetes API clients instrumented with package kubeclient
// (github.com/otelqueue/otelqueue/kubeclient): the workqueue.client.*
// metrics and [Instrumentation.ClientStats]. Without it (or an adaptive
// worker pool, [AdaptiveWorkers], which reads that time) a queue records
// none of it.
//
// [Runner] runs workers that reconcile keys from an instrumented queue, with
// results, requeues, panics and graceful shutdown handled and measured.
// [NewMetricsProvider] gives plain client-go queues (and controller-runtime's
// priority queue) the same metrics, without traces or exemplars.
//
// Package traceparent (github.com/otelqueue/otelqueue/traceparent) carries a
// writer's trace context on the object it writes, for the attempts to link
// to.
//
// The package uses the OpenTelemetry API only. By default it uses the global
// MeterProvider and TracerProvider; pass others with [WithMeterProvider] and
// [WithTracerProvider]. Each entry point takes the options it honours:
// Instrument every [Option], NewMetricsProvider the [MetricsOption]s only,
// NewRunner its [RunnerOption]s.
package otelqueue
