package otelqueue

import (
	"context"
	"time"

	"go.opentelemetry.io/otel/trace"

	"github.com/otelqueue/otelqueue/internal/schedhooks"
	"github.com/otelqueue/otelqueue/scheduler"
)

// drainAttempts replaces obs, the Observer of s whose Instrumentation is
// being stopped, by one that starts and records nothing but still ends the
// spans of the attempts in flight when their Done comes, then uninstalls
// itself once nothing is in flight. It leaves an Observer that replaced obs
// meanwhile alone.
func drainAttempts[K comparable](s *scheduler.Scheduler[K], obs scheduler.Observer[K]) {
	d := &drainObserver[K]{s: s}
	if !compareAndSwapObserver(s, obs, d) {
		return
	}
	// A key taken from now on goes through d; one taken before is counted
	// in flight until its Done, which d then sees.
	if s.Stats().InFlight == 0 {
		compareAndSwapObserver(s, d, nil)
	}
}

// compareAndSwapObserver installs obs as the Observer of s, as SetObserver
// does, but only if the Observer installed is old (nil: none), and reports
// whether it did (internal/schedhooks). Instrument installs itself with it
// without replacing an Observer someone else installed meanwhile, and Stop
// removes it without removing a newer one.
func compareAndSwapObserver[K comparable](s *scheduler.Scheduler[K], old, obs scheduler.Observer[K]) bool {
	return schedhooks.Of(s).CompareAndSwapObserver(old, obs)
}

// drainObserver is the Observer of a scheduler whose Instrumentation was
// stopped while keys were in flight. Instrument replaces it: the new
// Instrumentation's Done ends those attempts' spans as well.
type drainObserver[K comparable] struct {
	s *scheduler.Scheduler[K]
}

// Dequeued starts nothing. The context it returns hides the root of any
// attempt the worker's own ctx belongs to, which is not this queue's to end.
func (d *drainObserver[K]) Dequeued(ctx context.Context, _ *scheduler.Item[K]) context.Context {
	return context.WithValue(ctx, rootKey{}, nil)
}

// Done ends the spans of an attempt started before the Instrumentation
// stopped, and uninstalls d after the last key in flight.
func (d *drainObserver[K]) Done(ctx context.Context, _ K, _, ended time.Time) {
	endAttempt(ctx, ended)
	if d.s.Stats().InFlight > 0 {
		return
	}
	compareAndSwapObserver(d.s, d, nil)
}

// endAttempt ends the "reconcile" span and the root span of the attempt
// whose processing context is ctx, if ctx is one (Dequeued of a recording
// attempt returned it).
func endAttempt(ctx context.Context, ended time.Time) {
	if root, ok := ctx.Value(rootKey{}).(trace.Span); ok {
		endRoot(ctx, root, ended)
	}
}

// endRoot ends the spans of the attempt whose root span is root and whose
// processing context is ctx.
func endRoot(ctx context.Context, root trace.Span, ended time.Time) {
	opt := trace.WithTimestamp(ended)
	if span := trace.SpanFromContext(ctx); span.IsRecording() && span.SpanContext().TraceID() == root.SpanContext().TraceID() {
		span.End(opt)
	}
	root.End(opt)
}
