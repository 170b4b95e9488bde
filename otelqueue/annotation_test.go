package otelqueue_test

import (
	"context"
	"fmt"
	"strings"
	"testing"

	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/propagation"
	sdkmetric "go.opentelemetry.io/otel/sdk/metric"
	"go.opentelemetry.io/otel/sdk/metric/metricdata"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/trace"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/otelqueue/otelqueue/otelqueue"
)

var traceContext = otelqueue.WithPropagators(propagation.TraceContext{})

// traceparent formats sc as a version-00 W3C traceparent.
func traceparent(sc trace.SpanContext) string {
	return fmt.Sprintf("00-%s-%s-%s", sc.TraceID(), sc.SpanID(), sc.TraceFlags())
}

// TestInjectTraceparent checks that InjectTraceparent writes the W3C
// traceparent of ctx into the annotation, keeping the object's other
// annotations, falls back to W3C trace context when the propagators write no
// traceparent, and writes nothing without a span context or an object.
func TestInjectTraceparent(t *testing.T) {
	tp := sdktrace.NewTracerProvider()
	t.Cleanup(func() { _ = tp.Shutdown(context.Background()) })
	ctx, span := tp.Tracer("test/writer").Start(context.Background(), "update")
	span.End()

	obj := &metav1.ObjectMeta{Annotations: map[string]string{"keep": "me"}}
	if !otelqueue.InjectTraceparent(ctx, obj, traceContext) {
		t.Fatal("InjectTraceparent = false")
	}
	want := map[string]string{"keep": "me", otelqueue.TraceparentAnnotation: traceparent(span.SpanContext())}
	if got := obj.GetAnnotations(); fmt.Sprint(got) != fmt.Sprint(want) {
		t.Errorf("annotations %v, want %v", got, want)
	}

	// Propagators that write no traceparent (Baggage alone, or the global
	// default before otel.SetTextMapPropagator): W3C trace context is used.
	noTP := &metav1.ObjectMeta{}
	if !otelqueue.InjectTraceparent(ctx, noTP, otelqueue.WithPropagators(propagation.Baggage{})) ||
		noTP.Annotations[otelqueue.TraceparentAnnotation] != traceparent(span.SpanContext()) {
		t.Errorf("InjectTraceparent with a propagator without traceparent wrote %v, want the W3C traceparent", noTP.Annotations)
	}

	bare := &metav1.ObjectMeta{}
	if !otelqueue.InjectTraceparent(ctx, bare, traceContext) || bare.Annotations[otelqueue.TraceparentAnnotation] == "" {
		t.Errorf("InjectTraceparent on an object without annotations: %v", bare.Annotations)
	}

	for _, tc := range []struct {
		name string
		ctx  context.Context
		obj  otelqueue.Annotated
		opts []otelqueue.Option
	}{
		{"no span context", context.Background(), &metav1.ObjectMeta{}, []otelqueue.Option{traceContext}},
		{"nil object", ctx, nil, []otelqueue.Option{traceContext}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if otelqueue.InjectTraceparent(tc.ctx, tc.obj, tc.opts...) {
				t.Error("InjectTraceparent = true")
			}
			if tc.obj != nil && tc.obj.GetAnnotations() != nil {
				t.Errorf("annotations written: %v", tc.obj.GetAnnotations())
			}
		})
	}
}

// TestTraceparentReader checks reading the annotation: a valid traceparent
// gives a remote span context, unsampled unless TrustTraceparent; missing
// annotations are not counted; empty, oversized and malformed ones are
// ignored and counted, in Invalid and in workqueue.traceparent.invalid.
func TestTraceparentReader(t *testing.T) {
	reader := sdkmetric.NewManualReader()
	mp := sdkmetric.NewMeterProvider(sdkmetric.WithReader(reader))
	t.Cleanup(func() { _ = mp.Shutdown(context.Background()) })
	_, writer := remoteCtx(7, true)
	annotated := func(v string) *metav1.ObjectMeta {
		return &metav1.ObjectMeta{Annotations: map[string]string{otelqueue.TraceparentAnnotation: v}}
	}
	valid := annotated(traceparent(writer))

	r := otelqueue.NewTraceparentReader(otelqueue.WithReaderOptions(traceContext, otelqueue.WithMeterProvider(mp)))
	sc := r.SpanContext(valid)
	if !sc.IsValid() || !sc.IsRemote() || sc.TraceID() != writer.TraceID() || sc.SpanID() != writer.SpanID() {
		t.Fatalf("SpanContext = %v, want the writer's %v, remote", sc, writer)
	}
	if sc.IsSampled() {
		t.Error("an untrusted annotation kept its sampled flag")
	}
	trusted := otelqueue.NewTraceparentReader(otelqueue.TrustTraceparent(), otelqueue.WithReaderOptions(traceContext))
	if sc := trusted.SpanContext(valid); !sc.IsSampled() || sc.SpanID() != writer.SpanID() {
		t.Errorf("trusted SpanContext = %v, want the writer's, sampled", sc)
	}

	for _, obj := range []otelqueue.Annotated{nil, &metav1.ObjectMeta{}, &metav1.ObjectMeta{Annotations: map[string]string{"other": "x"}}} {
		if sc := r.SpanContext(obj); sc.IsValid() {
			t.Errorf("SpanContext(%v) = %v, want none", obj, sc)
		}
	}
	if n := r.Invalid(); n != 0 {
		t.Errorf("Invalid() = %d after absent annotations, want 0", n)
	}

	long := traceparent(writer) + "-" + strings.Repeat("x", otelqueue.MaxTraceparentLen)
	for _, v := range []string{"", long, "not a traceparent", "00-00000000000000000000000000000000-0000000000000000-01"} {
		if sc := r.SpanContext(annotated(v)); sc.IsValid() {
			t.Errorf("SpanContext(%q) = %v, want none", v, sc)
		}
	}
	if n := r.Invalid(); n != 4 {
		t.Errorf("Invalid() = %d, want 4", n)
	}
	var rm metricdata.ResourceMetrics
	if err := reader.Collect(context.Background(), &rm); err != nil {
		t.Fatal(err)
	}
	assertMetrics(t, rm, noTime, intSum(otelqueue.MetricInvalidTraceparents, "{annotation}", true, *attribute.EmptySet(), 4))

	// A second reader on the same MeterProvider (one per handler, say)
	// adds to the same series.
	r2 := otelqueue.NewTraceparentReader(otelqueue.WithReaderOptions(traceContext, otelqueue.WithMeterProvider(mp)))
	r2.SpanContext(annotated("not a traceparent either"))
	rm = metricdata.ResourceMetrics{}
	if err := reader.Collect(context.Background(), &rm); err != nil {
		t.Fatal(err)
	}
	assertMetrics(t, rm, noTime, intSum(otelqueue.MetricInvalidTraceparents, "{annotation}", true, *attribute.EmptySet(), 5))

	// ContextWith: the annotation's context for AddContext, or ctx itself.
	type baseKey struct{}
	base := context.WithValue(context.Background(), baseKey{}, "base")
	if got := r.ContextWith(base, &metav1.ObjectMeta{}); got != base {
		t.Error("ContextWith without an annotation did not return ctx itself")
	}
	got := r.ContextWith(base, valid)
	if sc := trace.SpanContextFromContext(got); sc.SpanID() != writer.SpanID() || got.Value(baseKey{}) != "base" {
		t.Errorf("ContextWith = %v, want ctx with the writer's span context", sc)
	}
}

// TestTraceparentLinksTheAttempt checks the whole path: a key enqueued with
// the context of an object's annotation makes the attempt's root link to the
// writer's span, without being its child and, untrusted, without inheriting
// its sampled flag.
func TestTraceparentLinksTheAttempt(t *testing.T) {
	e := newEnv(t, envConfig{})
	_, writer := remoteCtx(9, true)
	obj := &metav1.ObjectMeta{Annotations: map[string]string{otelqueue.TraceparentAnnotation: traceparent(writer)}}
	r := otelqueue.NewTraceparentReader(otelqueue.WithReaderOptions(traceContext, otelqueue.WithMeterProvider(e.mp)))
	e.q.AddContext(r.ContextWith(context.Background(), obj), "default/web")
	e.getKey(t, "default/web")
	e.q.Done("default/web")

	root, _, _ := attemptSpans(t, e.sr.Ended(), "default/web", 1)
	if root.Parent().IsValid() || root.SpanContext().TraceID() == writer.TraceID() {
		t.Errorf("the annotation's writer became the parent")
	}
	if len(root.Links()) != 1 {
		t.Fatalf("links %+v, want the writer", root.Links())
	}
	l := root.Links()[0]
	if l.SpanContext.TraceID() != writer.TraceID() || l.SpanContext.SpanID() != writer.SpanID() || l.SpanContext.IsSampled() {
		t.Errorf("link %v, want the writer's span context, unsampled", l.SpanContext)
	}
	assertAttrs(t, "link", l.Attributes, linkEnqueue...)
}
