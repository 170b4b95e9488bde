package traceparent_test

import (
	"context"
	"fmt"
	"testing"

	"go.opentelemetry.io/otel/propagation"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/trace"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/otelqueue/otelqueue/traceparent"
)

var traceContext = traceparent.WithPropagators(propagation.TraceContext{})

// format formats sc as a version-00 W3C traceparent.
func format(sc trace.SpanContext) string {
	return fmt.Sprintf("00-%s-%s-%s", sc.TraceID(), sc.SpanID(), sc.TraceFlags())
}

// TestInject checks that Inject writes the W3C traceparent of ctx into the
// annotation, keeping the object's other annotations, falls back to W3C
// trace context when the propagators write no traceparent, and writes
// nothing without a span context or an object.
func TestInject(t *testing.T) {
	tp := sdktrace.NewTracerProvider()
	t.Cleanup(func() { _ = tp.Shutdown(context.Background()) })
	ctx, span := tp.Tracer("test/writer").Start(context.Background(), "update")
	span.End()

	obj := &metav1.ObjectMeta{Annotations: map[string]string{"keep": "me"}}
	if !traceparent.Inject(ctx, obj, traceContext) {
		t.Fatal("Inject = false")
	}
	want := map[string]string{"keep": "me", traceparent.Annotation: format(span.SpanContext())}
	if got := obj.GetAnnotations(); fmt.Sprint(got) != fmt.Sprint(want) {
		t.Errorf("annotations %v, want %v", got, want)
	}

	// Propagators that write no traceparent (Baggage alone, or the global
	// default before otel.SetTextMapPropagator): W3C trace context is used.
	for name, opts := range map[string][]traceparent.InjectOption{
		"Baggage":            {traceparent.WithPropagators(propagation.Baggage{})},
		"the global default": nil,
		"nil propagators":    {traceparent.WithPropagators(nil)},
		"a nil option":       {nil},
	} {
		noTP := &metav1.ObjectMeta{}
		if !traceparent.Inject(ctx, noTP, opts...) || noTP.Annotations[traceparent.Annotation] != format(span.SpanContext()) {
			t.Errorf("Inject with %s wrote %v, want the W3C traceparent", name, noTP.Annotations)
		}
	}

	for _, tc := range []struct {
		name string
		ctx  context.Context
		obj  traceparent.Annotated
	}{
		{"no span context", context.Background(), &metav1.ObjectMeta{}},
		{"nil object", ctx, nil},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if traceparent.Inject(tc.ctx, tc.obj, traceContext) {
				t.Error("Inject = true")
			}
			if tc.obj != nil && tc.obj.GetAnnotations() != nil {
				t.Errorf("annotations written: %v", tc.obj.GetAnnotations())
			}
		})
	}
}
