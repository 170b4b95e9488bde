package traceparent_test

import (
	"context"
	"strings"
	"testing"

	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/otelqueue/otelqueue/internal/testutil"
	"github.com/otelqueue/otelqueue/traceparent"
)

// TestAnnotationKeys: Inject writes this project's key by default, never
// the KEP's (a prefix the Kubernetes project reserves), and the KEP's where
// chosen; a Reader reads this project's key by default, and with
// WithAnnotations the first of its keys an object has, so that objects
// written by v0.1.0 (the KEP's key) are followed where asked. Invalid keys
// are refused: Inject writes nothing, a Reader leaves them out, and
// otel.Handle says why.
func TestAnnotationKeys(t *testing.T) {
	testutil.NoOTelErrors(t)
	if traceparent.Annotation != "otelqueue.github.io/traceparent" || traceparent.KEPAnnotation != "tracing.k8s.io/traceparent" {
		t.Fatalf("keys %q and %q", traceparent.Annotation, traceparent.KEPAnnotation)
	}
	tp := sdktrace.NewTracerProvider()
	t.Cleanup(func() { _ = tp.Shutdown(context.Background()) })
	ctx, span := tp.Tracer("test/writer").Start(context.Background(), "update")
	span.End()
	want := format(span.SpanContext())

	def := &metav1.ObjectMeta{}
	if !traceparent.Inject(ctx, def, traceContext) || def.Annotations[traceparent.Annotation] != want || len(def.Annotations) != 1 {
		t.Errorf("default: annotations %v, want only %s", def.Annotations, traceparent.Annotation)
	}
	kep := &metav1.ObjectMeta{}
	if !traceparent.Inject(ctx, kep, traceContext, traceparent.WithAnnotation(traceparent.KEPAnnotation)) || kep.Annotations[traceparent.KEPAnnotation] != want || len(kep.Annotations) != 1 {
		t.Errorf("WithAnnotation(KEPAnnotation): annotations %v, want only %s", kep.Annotations, traceparent.KEPAnnotation)
	}
	for _, bad := range []string{"", "no spaces", "/name", "UPPER.example/name", "example.com/", "example.com/" + strings.Repeat("x", 64), "a/b/c"} {
		obj := &metav1.ObjectMeta{}
		if traceparent.Inject(ctx, obj, traceContext, traceparent.WithAnnotation(bad)) || len(obj.Annotations) != 0 {
			t.Errorf("WithAnnotation(%q): wrote %v", bad, obj.Annotations)
		}
		if errs := testutil.TakeOTelErrors(); len(errs) != 1 || !strings.Contains(errs[0].Error(), "annotation key") {
			t.Errorf("WithAnnotation(%q): otel.Handle got %v, want one error about the key", bad, errs)
		}
	}

	sc := span.SpanContext()
	plain := traceparent.NewReader(traceContext)
	both := traceparent.NewReader(traceContext, traceparent.WithAnnotations(traceparent.Annotation, traceparent.KEPAnnotation))
	if got := plain.SpanContext(kep); got.IsValid() {
		t.Errorf("the default Reader read the KEP's key: %v", got)
	}
	for name, obj := range map[string]*metav1.ObjectMeta{"this project's key": def, "the KEP's key": kep} {
		if got := both.SpanContext(obj); got.TraceID() != sc.TraceID() || got.SpanID() != sc.SpanID() {
			t.Errorf("WithAnnotations(Annotation, KEPAnnotation) on %s: %v, want the writer's %v", name, got, sc)
		}
	}
	// Both keys: the first of the Reader's order wins.
	other := traceparent.Annotation
	mixed := &metav1.ObjectMeta{Annotations: map[string]string{other: want, traceparent.KEPAnnotation: "00-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-01"}}
	if got := both.SpanContext(mixed); got.SpanID() != sc.SpanID() {
		t.Errorf("both keys present: read %v, want the first key's %v", got, sc)
	}

	r := traceparent.NewReader(traceContext, traceparent.WithAnnotations("not a key!", traceparent.KEPAnnotation))
	if got := r.SpanContext(kep); !got.IsValid() {
		t.Error("a Reader with one invalid and one valid key does not read the valid one")
	}
	if errs := testutil.TakeOTelErrors(); len(errs) != 1 || !strings.Contains(errs[0].Error(), "not a key!") {
		t.Errorf("an invalid key of WithAnnotations: otel.Handle got %v, want one error naming it", errs)
	}
	none := traceparent.NewReader(traceContext, traceparent.WithAnnotations())
	if got := none.SpanContext(def); got.IsValid() {
		t.Errorf("WithAnnotations() with no key read %v", got)
	}
}
