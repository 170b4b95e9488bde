package traceparent_test

import (
	"context"
	"strings"
	"sync"
	"testing"

	"github.com/otelqueue/otelqueue/internal/semconv"

	"go.opentelemetry.io/otel/propagation"
	sdkmetric "go.opentelemetry.io/otel/sdk/metric"
	"go.opentelemetry.io/otel/sdk/metric/metricdata"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/trace"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/otelqueue/otelqueue/internal/testutil"
	"github.com/otelqueue/otelqueue/otelqueue"
	"github.com/otelqueue/otelqueue/traceparent"
)

func annotated(v string) *metav1.ObjectMeta {
	return &metav1.ObjectMeta{Annotations: map[string]string{traceparent.Annotation: v}}
}

// invalid returns the value of `workqueue.traceparent.invalid` collected from reader, and
// checks its scope.
func invalid(t *testing.T, reader sdkmetric.Reader) int64 {
	t.Helper()
	rm := testutil.Collect(t, reader)
	_, version, _ := testutil.ScopeMetrics(rm, semconv.ScopeTraceparent)
	if version != otelqueue.Version {
		t.Errorf("scope version %q, want %q", version, otelqueue.Version)
	}
	m := testutil.FindMetric(t, rm, semconv.ScopeTraceparent, semconv.MetricTraceparentInvalid)
	if m.Unit != "{annotation}" {
		t.Errorf("%s unit %q, want {annotation}", m.Name, m.Unit)
	}
	sum, ok := m.Data.(metricdata.Sum[int64])
	if !ok || !sum.IsMonotonic || len(sum.DataPoints) != 1 || sum.DataPoints[0].Attributes.Len() != 0 {
		t.Fatalf("%s = %+v, want one monotonic sum without attributes", m.Name, m.Data)
	}
	return sum.DataPoints[0].Value
}

// TestReader checks reading the annotation: a valid traceparent gives a
// remote span context, unsampled unless Trust; missing annotations are not
// counted; empty, oversized and malformed ones are ignored and counted, in
// Invalid and in workqueue.traceparent.invalid, summed over the readers of
// one MeterProvider.
func TestReader(t *testing.T) {
	reader := sdkmetric.NewManualReader()
	mp := sdkmetric.NewMeterProvider(sdkmetric.WithReader(reader))
	t.Cleanup(func() { _ = mp.Shutdown(context.Background()) })
	writer := testutil.RemoteSpanContext(7, true)
	valid := annotated(format(writer))

	r := traceparent.NewReader(traceContext, traceparent.WithMeterProvider(mp))
	sc := r.SpanContext(valid)
	if !sc.IsValid() || !sc.IsRemote() || sc.TraceID() != writer.TraceID() || sc.SpanID() != writer.SpanID() {
		t.Fatalf("SpanContext = %v, want the writer's %v, remote", sc, writer)
	}
	if sc.IsSampled() {
		t.Error("an untrusted annotation kept its sampled flag")
	}
	trusted := traceparent.NewReader(traceparent.Trust(), traceContext, traceparent.WithMeterProvider(mp))
	if sc := trusted.SpanContext(valid); !sc.IsSampled() || sc.SpanID() != writer.SpanID() {
		t.Errorf("trusted SpanContext = %v, want the writer's, sampled", sc)
	}

	for _, obj := range []traceparent.Annotated{nil, &metav1.ObjectMeta{}, &metav1.ObjectMeta{Annotations: map[string]string{"other": "x"}}} {
		if sc := r.SpanContext(obj); sc.IsValid() {
			t.Errorf("SpanContext(%v) = %v, want none", obj, sc)
		}
	}
	if n := r.Invalid(); n != 0 {
		t.Errorf("Invalid() = %d after absent annotations, want 0", n)
	}

	long := format(writer) + "-" + strings.Repeat("x", traceparent.MaxLen)
	for _, v := range []string{"", long, "not a traceparent", "00-00000000000000000000000000000000-0000000000000000-01"} {
		if sc := r.SpanContext(annotated(v)); sc.IsValid() {
			t.Errorf("SpanContext(%q) = %v, want none", v, sc)
		}
	}
	if n := r.Invalid(); n != 4 {
		t.Errorf("Invalid() = %d, want 4", n)
	}
	if n := invalid(t, reader); n != 4 {
		t.Errorf("%s = %d, want 4", semconv.MetricTraceparentInvalid, n)
	}

	// A second reader on the same MeterProvider (one per handler, say)
	// adds to the same series.
	r2 := traceparent.NewReader(traceContext, traceparent.WithMeterProvider(mp))
	r2.SpanContext(annotated("not a traceparent either"))
	if n := invalid(t, reader); n != 5 {
		t.Errorf("%s = %d after a second reader's, want 5", semconv.MetricTraceparentInvalid, n)
	}

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

// TestNilReader: a nil *Reader reads nothing and counts nothing.
func TestNilReader(t *testing.T) {
	var r *traceparent.Reader
	ctx := context.Background()
	if sc := r.SpanContext(annotated(format(testutil.RemoteSpanContext(1, true)))); sc.IsValid() {
		t.Errorf("nil Reader read %v", sc)
	}
	if got := r.ContextWith(ctx, annotated("x")); got != ctx {
		t.Error("nil Reader's ContextWith did not return ctx")
	}
	if n := r.Invalid(); n != 0 {
		t.Errorf("nil Reader's Invalid() = %d", n)
	}
}

// TestReaderConcurrent: one Reader read from many goroutines counts every
// invalid annotation once (run with -race).
func TestReaderConcurrent(t *testing.T) {
	reader := sdkmetric.NewManualReader()
	mp := sdkmetric.NewMeterProvider(sdkmetric.WithReader(reader))
	t.Cleanup(func() { _ = mp.Shutdown(context.Background()) })
	r := traceparent.NewReader(traceparent.WithMeterProvider(mp))
	valid := annotated(format(testutil.RemoteSpanContext(3, false)))
	var wg sync.WaitGroup
	for range 8 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for range 100 {
				r.SpanContext(annotated("bad"))
				if !r.SpanContext(valid).IsValid() {
					t.Error("a valid annotation read as none")
					return
				}
			}
		}()
	}
	wg.Wait()
	if n := r.Invalid(); n != 800 {
		t.Errorf("Invalid() = %d, want 800", n)
	}
	if n := invalid(t, reader); n != 800 {
		t.Errorf("%s = %d, want 800", semconv.MetricTraceparentInvalid, n)
	}
}

// TestTypedNilObjects: a nil *ConfigMap, a nil pointer of a type that is
// Annotated, reads nothing, adds nothing to a context and injects nothing,
// where it panicked before (only an untyped nil was checked).
func TestTypedNilObjects(t *testing.T) {
	var cm *corev1.ConfigMap
	var meta *metav1.ObjectMeta
	r := traceparent.NewReader()
	ctx, span := sdktrace.NewTracerProvider().Tracer("t").Start(context.Background(), "write")
	defer span.End()
	for _, obj := range []traceparent.Annotated{cm, meta} {
		if sc := r.SpanContext(obj); sc.IsValid() {
			t.Errorf("SpanContext(%T nil) = %v", obj, sc)
		}
		if got := r.ContextWith(context.Background(), obj); got != context.Background() {
			t.Errorf("ContextWith(%T nil) changed the context", obj)
		}
		if traceparent.Inject(ctx, obj) {
			t.Errorf("Inject(%T nil) wrote an annotation", obj)
		}
	}
}

// TestTypedNilOptions: a typed nil propagator or MeterProvider given as an
// option is reported to otel.Handle and stands for the global one, as an
// untyped nil does; ContextWith takes a nil ctx as context.Background().
func TestTypedNilOptions(t *testing.T) {
	testutil.TakeOTelErrors()
	ctx, span := sdktrace.NewTracerProvider().Tracer("t").Start(context.Background(), "write")
	defer span.End()
	var nilProp *propagation.TraceContext
	cm := &corev1.ConfigMap{}
	traceparent.Inject(ctx, cm, traceparent.WithPropagators(nilProp)) // the global propagator writes nothing here
	r := traceparent.NewReader(traceparent.WithPropagators(nilProp), traceparent.WithMeterProvider((*sdkmetric.MeterProvider)(nil)))
	if errs := testutil.TakeOTelErrors(); len(errs) != 3 {
		t.Errorf("otel.Handle got %v, want the three typed nils", errs)
	}
	valid := annotated("00-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-01")
	if sc := r.SpanContext(valid); !sc.IsValid() {
		t.Errorf("a Reader given typed nils read %v, want the annotation's context", sc)
	}
	//lint:ignore SA1012 a nil ctx is the misuse under test
	got := r.ContextWith(nil, valid) //nolint:staticcheck
	if got == nil || !trace.SpanContextFromContext(got).IsValid() {
		t.Errorf("ContextWith(nil, annotated) = %v, want a context with the annotation's span context", got)
	}
}
