package otelqueue

import (
	"context"

	"go.opentelemetry.io/otel/trace"

	"github.com/otelqueue/otelqueue/internal/clientwork"
)

// ContextWithAttempt returns ctx carrying the reconcile attempt that
// attempt belongs to (the context a Runner's reconcile receives, or the one
// scheduler.Scheduler.ProcessingContext returns for a key in flight): its
// "reconcile" span, as the parent of what the reconciler traces, and the
// accounting that makes the requests of clients instrumented by package
// kubeclient count for the attempt (Instrumentation.ClientStats,
// workqueue.client.*), which an attempt has when its queue is instrumented
// WithClientTime. It is for adapters that run a reconciler with a context
// of their own, such as controller-runtime's, which must keep its
// values and cancellation: package controllerruntime uses it.
//
// An attempt context that belongs to no attempt adds nothing; a nil attempt
// returns ctx unchanged, and a nil ctx is taken as context.Background().
func ContextWithAttempt(ctx, attempt context.Context) context.Context {
	if ctx == nil {
		ctx = context.Background()
	}
	if attempt == nil {
		return ctx
	}
	if span := trace.SpanFromContext(attempt); span.SpanContext().IsValid() || span.IsRecording() {
		ctx = trace.ContextWithSpan(ctx, span)
	}
	if w := clientwork.FromContext(attempt); w != nil {
		ctx = clientwork.NewContext(ctx, w)
	}
	return ctx
}
