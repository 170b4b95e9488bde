// Package controllerruntime plugs otelqueue's scheduler and its
// OpenTelemetry instrumentation into sigs.k8s.io/controller-runtime.
//
// It is a module of its own so that users of the otelqueue library who do
// not use controller-runtime never download it.
//
// # Usage
//
// One [Controller] value per controller-runtime controller:
//
//	otq := controllerruntime.New(otelqueue.WithLinkSource( // global OTel providers by default
//		controllerruntime.ObjectLinkSource(mgr.GetCache(), &corev1.ConfigMap{})))
//	err := builder.ControllerManagedBy(mgr).
//		For(&corev1.ConfigMap{}).
//		WithOptions(otq.Options(mgr, controller.Options{})). // the controller's options, as they were
//		Complete(otq.Reconciler(myReconciler))
//
// [Controller.Options] returns the controller's options with NewQueue set to
// [Controller.NewQueue], and reports the controller's worker count as
// `workqueue.workers` (workqueue_workers), so that the workers'
// utilization is one PromQL expression. [ObjectLinkSource] links each attempt
// to the last writer of the object its request names, read from the
// object's otelqueue.github.io/traceparent annotation in the manager's cache:
// For()'s handler enqueues with no trace context, and this is how its
// attempts still lead to the change that caused them.
//
// controller-runtime builds the queue lazily, when the controller starts, by
// calling [Controller.NewQueue] with the controller's name and rate limiter.
// That builds a [scheduler.Scheduler] named after the controller, instruments
// it with otelqueue.Instrument and remembers it, so that the reconciler
// returned by [Controller.Reconciler] finds the trace of the request it is
// given without the user ever holding the queue. Every reconcile then runs
// with a ctx that keeps everything controller-runtime put in it (logger,
// reconcileID, cancellation, ReconciliationTimeout) and carries the
// "reconcile" span of the attempt, so that spans the reconciler starts are its
// children; its logger (logf.FromContext) also carries the span's trace_id
// and span_id.
//
// The package-level [NewQueue] (and [NewTypedQueue]) is the same queue for
// code that only wants the metrics and the "queued" / "reconcile" spans; a
// reconciler it is used with is not wrapped, so its own spans start new
// traces.
//
// # Traces
//
// One trace per reconcile attempt, as documented by package otelqueue: a
// root "process <controller>" span with "queued" (the wait) and "reconcile"
// (the work) children, the reconciler's spans under "reconcile". The wrapped
// reconciler also sets the "result" attribute of "reconcile" (success,
// error, requeue, requeue_after, panic: controller-runtime's result labels)
// and its error status. A panic is recorded and re-panicked, so
// controller-runtime's RecoverPanic handling is unchanged.
//
// The "reconcile" span carries controller-runtime's reconcileID
// (the span attribute reconcile.id), which controller-runtime's own log lines carry.
//
// controller-runtime's own event handlers (those For() and Owns() install)
// call the queue's plain Add and AddWithOpts, with no context. With
// [ObjectLinkSource] the attempt links, when a worker takes the request, to
// the writer found in the object's otelqueue.github.io/traceparent annotation
// (written by traceparent.Inject, package github.com/otelqueue/otelqueue/traceparent).
// To link at enqueue time too, to the object of the event:
// [EnqueueRequestForObject] (or [TypedEnqueueRequestForObject]) in Watches
// enqueues with the handler's ctx and the annotation's span context, and
// [WithTraceContext] wraps any other handler (handler.EnqueueRequestForOwner,
// handler.EnqueueRequestsFromMapFunc, ...) to the same effect, keeping the
// requests and priorities it computes: for Owns()-like watches, the link
// then goes to the writer of the owned object rather than of the owner.
//
// # Priorities
//
// The queue returned by NewQueue implements controller-runtime's
// priorityqueue.PriorityQueue itself (AddWithOpts, GetWithPriority), so
// controller-runtime uses it directly rather than wrapping it, and event
// handlers receive it as it is. It orders ready keys as controller-runtime's
// priority queue does: by AddOpts.Priority, highest first, and within one
// priority in the order they became ready; a pending key keeps the highest
// priority it was added with, and raising it moves the key to the end of its
// new priority. So controller-runtime's handlers (and
// handler.WithLowPriorityWhenUnchanged) put the initial list behind real
// changes after a restart, as with controller-runtime's own queue, and so
// does [EnqueueRequestForObject], which gives the same priorities as
// controller-runtime's handler.EnqueueRequestForObject: handler.LowPriority
// for a create from the initial list and for an update that keeps the
// resource version (a resync), 0 for every other event. AddOpts.After and
// AddOpts.RateLimited delay keys (the shorter delay wins when both are set).
// GetWithPriority reports the run's priority.
//
// # Metrics
//
// Setting Options.NewQueue replaces controller-runtime's queue, and with it
// the queue's metrics: controller-runtime's Prometheus workqueue provider is
// never called for this queue, so nothing is counted twice.
//
//   - In controller-runtime's registry (sigs.k8s.io/controller-runtime/pkg/metrics.Registry,
//     served by the manager's metrics server) the controller_runtime_*
//     series of the controller are still there (reconcile_total,
//     reconcile_errors_total, reconcile_time_seconds, active_workers,
//     max_concurrent_reconciles, ...), but there is no workqueue_* series
//     with name="<controller>".
//   - The workqueue_* series of the controller come from OpenTelemetry
//     only. Through the OpenTelemetry Prometheus exporter
//     (go.opentelemetry.io/otel/exporters/prometheus) they have
//     controller-runtime's names and its "name" and "controller" labels:
//     workqueue_depth, workqueue_queue_duration_seconds and
//     workqueue_work_duration_seconds among them, the two histograms with
//     exemplars pointing to the attempt's trace, and workqueue_workers when
//     the queue was built through [Controller.Options].
//
// An application that serves both registries on one endpoint (for example
// through prometheus.Gatherers{metrics.Registry, exporterRegistry}, as
// controllerruntime/example does) therefore exposes each workqueue_* series
// exactly once. controller-runtime's two histograms carry native (sparse)
// buckets beside their classic ones; otelqueue's do too with
// otelqueuesdk.NativeHistograms' views, served through
// otelqueuesdk.MergeNativeHistograms(exporterRegistry), or, when the
// exporter registers with metrics.Registry itself, through
// otelprom.WithRegisterer(otelqueuesdk.NativeHistogramRegisterer(metrics.Registry)). The descriptions of the shared metrics are
// controller-runtime's help texts, word for word, so that this also works
// while other controllers of the application keep controller-runtime's own
// queue: each workqueue_* family then holds the series of both kinds.
//
// docs/semantic-conventions.md in the repository lists every metric with
// its kind, unit, labels and Prometheus name and the buckets (generated from
// semconv/registry.yaml), docs/metrics.md how they differ from
// controller-runtime's.
package controllerruntime
