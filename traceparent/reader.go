package traceparent

import (
	"context"
	"sync/atomic"

	"github.com/otelqueue/otelqueue/internal/nilcheck"
	"github.com/otelqueue/otelqueue/internal/semconv"

	"go.opentelemetry.io/otel"
	"go.opentelemetry.io/otel/metric"
	"go.opentelemetry.io/otel/metric/noop"
	"go.opentelemetry.io/otel/propagation"
	"go.opentelemetry.io/otel/trace"

	"github.com/otelqueue/otelqueue/otelqueue"
)

// maxLen bounds the annotation values that are parsed at all. A version-00
// traceparent is 55 characters; later versions may append fields.
const maxLen = 256

// Reader reads Annotation (or the keys of WithAnnotations) from objects on
// enqueue. Values that are too long
// or malformed are ignored and counted, and by default the context read
// becomes a link of the processing trace, never its parent, with its
// sampled flag cleared so that it cannot force sampling (see Trust). A
// Reader is safe for concurrent use; a nil *Reader reads nothing.
type Reader struct {
	keys    []string // read in order, the first present
	props   propagation.TextMapPropagator
	trust   bool
	invalid atomic.Uint64
	counter metric.Int64Counter // `workqueue.traceparent.invalid`
}

// NewReader returns a Reader. It counts invalid annotations as
// `workqueue.traceparent.invalid` through the MeterProvider (see WithMeterProvider); errors
// creating that instrument go to otel.Handle.
func NewReader(opts ...ReaderOption) *Reader {
	var c readerConfig
	for _, o := range opts {
		if o != nil {
			o.applyReader(&c)
		}
	}
	mp := c.meterProvider
	if nilcheck.IsNil(mp) {
		if mp != nil {
			otel.Handle(typedNil("WithMeterProvider", mp))
		}
		mp = otel.GetMeterProvider()
	}
	r := &Reader{keys: []string{Annotation}, props: propagatorsOrGlobal(c.propagators), trust: c.trust}
	if c.keysSet {
		r.keys = r.keys[:0]
		for _, k := range c.keys {
			if err := checkKey(k); err != nil {
				otel.Handle(err)
				continue
			}
			r.keys = append(r.keys, k)
		}
	}
	// A synchronous counter, so that the readers of one process (one per
	// handler, say) add up in the one series rather than overwrite it.
	m := mp.Meter(semconv.ScopeTraceparent, metric.WithInstrumentationVersion(otelqueue.Version))
	var err error
	r.counter, err = m.Int64Counter(semconv.MetricTraceparentInvalid,
		metric.WithUnit("{annotation}"),
		metric.WithDescription("Object traceparent annotations that were ignored because they were too long or malformed."))
	if err != nil {
		otel.Handle(err)
		r.counter, _ = noop.Meter{}.Int64Counter(semconv.MetricTraceparentInvalid)
	}
	return r
}

// SpanContext returns the span context in obj's annotation, marked remote,
// or an invalid one when the annotation is absent or unusable (counted in
// Invalid when present but unusable), or obj is nil or a nil pointer.
func (r *Reader) SpanContext(obj Annotated) trace.SpanContext {
	if r == nil || nilcheck.IsNil(obj) {
		return trace.SpanContext{}
	}
	a := obj.GetAnnotations()
	var v string
	var ok bool
	for _, k := range r.keys {
		if v, ok = a[k]; ok {
			break
		}
	}
	if !ok {
		return trace.SpanContext{}
	}
	if len(v) == 0 || len(v) > maxLen {
		r.countInvalid()
		return trace.SpanContext{}
	}
	carrier := propagation.MapCarrier{header: v}
	sc := trace.SpanContextFromContext(r.props.Extract(context.Background(), carrier))
	if !sc.IsValid() {
		// As Inject: W3C trace context when the propagators read none.
		sc = trace.SpanContextFromContext(propagation.TraceContext{}.Extract(context.Background(), carrier))
	}
	if !sc.IsValid() {
		r.countInvalid()
		return trace.SpanContext{}
	}
	if !r.trust {
		sc = sc.WithTraceFlags(sc.TraceFlags() &^ trace.FlagsSampled)
	}
	return sc.WithRemote(true)
}

func (r *Reader) countInvalid() {
	r.invalid.Add(1)
	r.counter.Add(context.Background(), 1)
}

// ContextWith returns ctx carrying the span context of obj's annotation, for
// the scheduler's context-aware adds (AddContext, AddAfterContext), or ctx
// itself when there is none; a nil ctx is context.Background().
func (r *Reader) ContextWith(ctx context.Context, obj Annotated) context.Context {
	if ctx == nil {
		ctx = context.Background()
	}
	if sc := r.SpanContext(obj); sc.IsValid() {
		return trace.ContextWithRemoteSpanContext(ctx, sc)
	}
	return ctx
}

// Invalid returns how many annotations were ignored so far.
func (r *Reader) Invalid() uint64 {
	if r == nil {
		return 0
	}
	return r.invalid.Load()
}
