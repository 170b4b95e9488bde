package traceparent

import (
	"context"
	"github.com/otelqueue/otelqueue/internal/nilcheck"

	"go.opentelemetry.io/otel"
	"go.opentelemetry.io/otel/propagation"
	"go.opentelemetry.io/otel/trace"
)

// Annotated is the part of a Kubernetes object this package uses; every
// metav1.Object has it.
type Annotated interface {
	GetAnnotations() map[string]string
	SetAnnotations(map[string]string)
}

const header = "traceparent"

// Inject writes the span context of ctx into obj's Annotation (or the key
// of WithAnnotation), formatted by the propagators (see WithPropagators),
// before obj is written to the API server; it keeps obj's other
// annotations. It reports whether it wrote one: ctx must carry a valid span
// context, obj must not be nil (nor a nil pointer, such as a nil
// *corev1.ConfigMap), and the key must be valid.
func Inject(ctx context.Context, obj Annotated, opts ...InjectOption) bool {
	if nilcheck.IsNil(obj) || !trace.SpanContextFromContext(ctx).IsValid() {
		return false
	}
	c := injectConfig{key: Annotation}
	for _, o := range opts {
		if o != nil {
			o.applyInject(&c)
		}
	}
	if c.key != Annotation {
		if err := checkKey(c.key); err != nil {
			otel.Handle(err)
			return false
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
	a[c.key] = v
	obj.SetAnnotations(a)
	return true
}
