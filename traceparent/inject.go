package traceparent

import (
	"context"

	"go.opentelemetry.io/otel/propagation"
	"go.opentelemetry.io/otel/trace"
)

// Annotation is the object annotation that carries the W3C traceparent of
// the change that last wrote the object, as proposed by Kubernetes KEP-5915
// (async trace context propagation).
const Annotation = "tracing.k8s.io/traceparent"

// Annotated is the part of a Kubernetes object this package uses; every
// metav1.Object has it.
type Annotated interface {
	GetAnnotations() map[string]string
	SetAnnotations(map[string]string)
}

const header = "traceparent"

// Inject writes the span context of ctx into obj's Annotation, formatted by
// the propagators (see WithPropagators), before obj is written to the API
// server; it keeps obj's other annotations. It reports whether it wrote
// one: ctx must carry a valid span context, and obj must not be nil.
func Inject(ctx context.Context, obj Annotated, opts ...InjectOption) bool {
	if obj == nil || !trace.SpanContextFromContext(ctx).IsValid() {
		return false
	}
	var c injectConfig
	for _, o := range opts {
		if o != nil {
			o.applyInject(&c)
		}
	}
	carrier := propagation.MapCarrier{}
	propagatorsOrGlobal(c.propagators).Inject(ctx, carrier)
	v := carrier[header]
	if v == "" {
		// The propagators write no traceparent (the global default writes
		// nothing): the annotation is W3C trace context.
		propagation.TraceContext{}.Inject(ctx, carrier)
		v = carrier[header]
	}
	if v == "" {
		return false
	}
	a := obj.GetAnnotations()
	if a == nil {
		a = map[string]string{}
	}
	a[Annotation] = v
	obj.SetAnnotations(a)
	return true
}
