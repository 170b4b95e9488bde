package otelqueue

import (
	"context"
	"sync/atomic"

	"go.opentelemetry.io/otel"
	"go.opentelemetry.io/otel/metric"
	"go.opentelemetry.io/otel/metric/noop"
	"go.opentelemetry.io/otel/propagation"
	"go.opentelemetry.io/otel/trace"
)

// TraceparentAnnotation is the object annotation that carries the W3C
// traceparent of the change that last wrote the object, as proposed by
// Kubernetes KEP-5915 (async trace context propagation).
const TraceparentAnnotation = "tracing.k8s.io/traceparent"

// MaxTraceparentLen bounds the annotation values that are parsed at all. A
// version-00 traceparent is 55 characters; later versions may append fields.
const MaxTraceparentLen = 256

// MetricInvalidTraceparents counts annotation values that were present but
// could not be used. workqueue_traceparent_invalid_total.
const MetricInvalidTraceparents = "workqueue.traceparent.invalid"

// Annotated is the part of a Kubernetes object the annotation helpers use;
// every metav1.Object has it.
type Annotated interface {
	GetAnnotations() map[string]string
	SetAnnotations(map[string]string)
}

const traceparentHeader = "traceparent"

// InjectTraceparent writes the span context of ctx into obj's
// TraceparentAnnotation, formatted by the configured propagators (the
// global ones by default, see WithPropagators), before obj is written to the
// API server; when they produce no traceparent (the global default, before
// otel.SetTextMapPropagator, produces none) W3C trace context is used. It
// reports whether it wrote one: ctx must carry a valid span context.
func InjectTraceparent(ctx context.Context, obj Annotated, opts ...Option) bool {
	if obj == nil || !trace.SpanContextFromContext(ctx).IsValid() {
		return false
	}
	c := newConfig(opts)
	carrier := propagation.MapCarrier{}
	c.propagators.Inject(ctx, carrier)
	v := carrier[traceparentHeader]
	if v == "" {
		// The configured propagators write no traceparent (the global
		// default writes nothing): the annotation is W3C trace context.
		propagation.TraceContext{}.Inject(ctx, carrier)
		v = carrier[traceparentHeader]
	}
	if v == "" {
		return false
	}
	a := obj.GetAnnotations()
	if a == nil {
		a = map[string]string{}
	}
	a[TraceparentAnnotation] = v
	obj.SetAnnotations(a)
	return true
}

// TraceparentReader reads TraceparentAnnotation from objects on enqueue. The
// annotation is untrusted input: anyone who can write the object can write
// it. Values that are too long or malformed are ignored and counted, and by
// default the context read becomes a link of the processing trace, never
// its parent, and its sampled flag is cleared so that it cannot force
// sampling (see TrustTraceparent).
type TraceparentReader struct {
	props   propagation.TextMapPropagator
	trust   bool
	invalid atomic.Uint64
	counter metric.Int64Counter // MetricInvalidTraceparents
}

// ReaderOption configures a TraceparentReader.
type ReaderOption interface{ applyReader(*readerConfig) }

type readerConfig struct {
	config
	trust bool
}

type readerOptionFunc func(*readerConfig)

func (f readerOptionFunc) applyReader(c *readerConfig) { f(c) }

// TrustTraceparent keeps the sampled flag of annotation contexts, so that
// with otelqueuesdk.LinkSampled a sampled writer makes its reconcile
// sampled. Use it only when every writer of the objects is trusted.
func TrustTraceparent() ReaderOption {
	return readerOptionFunc(func(c *readerConfig) { c.trust = true })
}

// WithReaderOptions passes Options (WithPropagators, WithMeterProvider) to
// a TraceparentReader.
func WithReaderOptions(opts ...Option) ReaderOption {
	return readerOptionFunc(func(c *readerConfig) {
		for _, o := range opts {
			if o != nil {
				o.apply(&c.config)
			}
		}
	})
}

// NewTraceparentReader returns a TraceparentReader. It reports the count of
// invalid annotations as MetricInvalidTraceparents through the configured
// MeterProvider; errors creating that instrument go to otel.Handle.
func NewTraceparentReader(opts ...ReaderOption) *TraceparentReader {
	var rc readerConfig
	for _, o := range opts {
		if o != nil {
			o.applyReader(&rc)
		}
	}
	c := &rc.config
	c.setDefaults()
	r := &TraceparentReader{props: c.propagators, trust: rc.trust}
	// A synchronous counter, so that the readers of one process (one per
	// handler, say) add up in the one series rather than overwrite it.
	m := c.meterProvider.Meter(ScopeName, metric.WithInstrumentationVersion(Version()))
	var err error
	r.counter, err = m.Int64Counter(MetricInvalidTraceparents,
		metric.WithUnit("{annotation}"),
		metric.WithDescription("Object traceparent annotations that were ignored because they were too long or malformed."))
	if err != nil {
		otel.Handle(err)
		r.counter, _ = noop.Meter{}.Int64Counter(MetricInvalidTraceparents)
	}
	return r
}

// SpanContext returns the span context in obj's annotation, marked remote,
// or an invalid one when the annotation is absent or unusable (counted in
// Invalid when present but unusable).
func (r *TraceparentReader) SpanContext(obj Annotated) trace.SpanContext {
	if obj == nil {
		return trace.SpanContext{}
	}
	v, ok := obj.GetAnnotations()[TraceparentAnnotation]
	if !ok {
		return trace.SpanContext{}
	}
	if len(v) == 0 || len(v) > MaxTraceparentLen {
		r.countInvalid()
		return trace.SpanContext{}
	}
	carrier := propagation.MapCarrier{traceparentHeader: v}
	sc := trace.SpanContextFromContext(r.props.Extract(context.Background(), carrier))
	if !sc.IsValid() {
		// As InjectTraceparent: W3C trace context when the configured
		// propagators read none.
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

func (r *TraceparentReader) countInvalid() {
	r.invalid.Add(1)
	r.counter.Add(context.Background(), 1)
}

// ContextWith returns ctx carrying the span context of obj's annotation, for
// the scheduler's context-aware adds (AddContext, AddAfterContext), or ctx
// itself when there is none.
func (r *TraceparentReader) ContextWith(ctx context.Context, obj Annotated) context.Context {
	if sc := r.SpanContext(obj); sc.IsValid() {
		return trace.ContextWithRemoteSpanContext(ctx, sc)
	}
	return ctx
}

// Invalid returns how many annotations were ignored so far.
func (r *TraceparentReader) Invalid() uint64 { return r.invalid.Load() }
