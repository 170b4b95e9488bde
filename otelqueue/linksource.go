package otelqueue

import (
	"context"
	"fmt"

	"github.com/otelqueue/otelqueue/internal/semconv"

	"go.opentelemetry.io/otel"
	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/trace"
)

// LinkSource finds, when a key is handed to a worker, a span context the
// attempt's trace links to: typically the trace of the change that last
// wrote the object the key names, read from a cache (see
// WithLinkSource). It is how keys enqueued without a context (a plain Add,
// controller-runtime's For() and Owns() handlers, resyncs, requeues by the
// reconciler itself) still lead to their writer.
//
// SpanContext is called on the worker's goroutine, once per attempt, before
// the attempt's root span starts, and only when tracing is on. It must be
// safe for concurrent use, fast and non-blocking (an in-memory lookup, never
// an API call). It returns an invalid span context when there is nothing to
// link to; that is not an error. An error or a panic gives no link and is
// reported to otel.Handle; the attempt goes on.
type LinkSource[K comparable] interface {
	SpanContext(ctx context.Context, key K) (trace.SpanContext, error)
}

// LinkSourceFunc adapts a function to a LinkSource.
type LinkSourceFunc[K comparable] func(ctx context.Context, key K) (trace.SpanContext, error)

// SpanContext calls f.
func (f LinkSourceFunc[K]) SpanContext(ctx context.Context, key K) (trace.SpanContext, error) {
	return f(ctx, key)
}

// WithLinkSource makes Instrument ask src, for every attempt, for a span
// context to link the attempt's root span to (see LinkSource). The link is
// added before the root span starts, so a link-aware sampler
// (otelqueuesdk.LinkSampled) sees it, and carries `workqueue.link` "lookup". A
// span context the attempt already links to (an enqueue context, such as
// the same annotation read by an event handler, or the previous attempt) or
// that is its parent (WithEnqueuerAsParent) is not linked twice.
//
// src's key type must be the scheduler's: Instrument refuses a mismatch
// with an error naming both types. A nil src is ignored. NewMetricsProvider ignores this option (it makes no spans).
// Without this option an attempt costs nothing more.
func WithLinkSource[K comparable](src LinkSource[K]) Option {
	return optionFunc(func(c *config) {
		if src != nil {
			c.linkSource = src
		}
	})
}

// linkLookup is the `workqueue.link` of a link found by a LinkSource.
var linkLookup = []attribute.KeyValue{semconv.AttrLinkKind.String("lookup")}

// checkLinkSource reports a link source whose key type is not K.
func checkLinkSource[K comparable](c *config, queue string) error {
	if c.linkSource == nil {
		return nil
	}
	if _, ok := c.linkSource.(LinkSource[K]); !ok {
		var k K
		return fmt.Errorf("otelqueue: queue %q has keys of type %T but WithLinkSource was given a %T: pass a LinkSource of the queue's key type", queue, k, c.linkSource)
	}
	return nil
}

// linkSourceFor returns the configured link source for keys of type K: nil
// when there is none. Instrument has refused a source of another key type
// (checkLinkSource) before it gets here.
func linkSourceFor[K comparable](c *config) LinkSource[K] {
	src, _ := c.linkSource.(LinkSource[K])
	return src
}

// lookup asks the link source for key's span context; an error or a panic
// gives none and goes to otel.Handle.
func (o *observer[K]) lookup(ctx context.Context, key K) (sc trace.SpanContext) {
	defer func() {
		if p := recover(); p != nil {
			otel.Handle(fmt.Errorf("otelqueue: queue %q: the link source panicked for key %q (no link added): %v", o.queue, keyString(key), p))
			sc = trace.SpanContext{}
		}
	}()
	sc, err := o.linkSource.SpanContext(ctx, key)
	if err != nil {
		otel.Handle(fmt.Errorf("otelqueue: queue %q: the link source failed for key %q (no link added): %w", o.queue, keyString(key), err))
		return trace.SpanContext{}
	}
	return sc
}

// addLookupLink appends to links the link source's span context for key,
// unless it is invalid, already among links, or parent.
func (o *observer[K]) addLookupLink(ctx context.Context, key K, parent trace.SpanContext, links []trace.Link) []trace.Link {
	sc := o.lookup(ctx, key)
	if !sc.IsValid() || sameSpan(sc, parent) {
		return links
	}
	for i := range links {
		if sameSpan(sc, links[i].SpanContext) {
			return links
		}
	}
	return append(links, trace.Link{SpanContext: sc, Attributes: linkLookup})
}

// sameSpan reports whether a and b name the same span, whatever their
// flags: the annotation reader clears the sampled flag of the context an
// enqueue may carry as it was.
func sameSpan(a, b trace.SpanContext) bool {
	return a.SpanID() == b.SpanID() && a.TraceID() == b.TraceID()
}
