package bench

import (
	"context"
	"sync/atomic"
	"testing"

	"github.com/otelqueue/otelqueue/internal/semconv"

	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/metric"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/trace"

	"github.com/otelqueue/otelqueue/otelqueue"
)

// The SDK floors of issue 12: per op, the OpenTelemetry SDK alone doing what
// otelqueue's instrumentation asks of it, with no queue, so that the targets
// in cmd/ratios bound what is otelqueue's own cost. sdkfloor-sampled (the
// three spans of a sampled attempt) is in otel_variants_test.go.

// startSDKFloorMetrics records, per op, what scheduler-otel's Observer
// records: the queue-wait and the work duration, on histograms created as
// otelqueue creates them (same scope, unit and bucket boundaries), with the
// queue's attribute set prepared once in the same RecordOption slice. The
// context holds a span context, not sampled, as the Observer's does when
// tracing is on: the SDK's default trace-based exemplar filter looks it up
// and, the span being unsampled, keeps no exemplar.
func startSDKFloorMetrics(tb testing.TB, name string) (func(string) string, func()) {
	meter := newMeterProvider(name).Meter(semconv.ScopeOtelqueue, metric.WithInstrumentationVersion(otelqueue.Version))
	queueDuration := floorHistogram(tb, meter, semconv.MetricQueueDuration)
	workDuration := floorHistogram(tb, meter, semconv.MetricWorkDuration)
	record := []metric.RecordOption{metric.WithAttributeSet(attribute.NewSet(
		semconv.AttrName.String(name), semconv.AttrController.String(name)))}
	ctx := trace.ContextWithSpanContext(context.Background(), rootSpanContext(false))
	var n uint
	step := func(key string) string {
		// Durations of the order the lifecycle measures (0.1-0.7 µs): below
		// the first bucket boundary, as the scheduler's.
		n++
		wait := float64(1+n&7) * 1e-7
		queueDuration.Record(ctx, wait, record...)
		workDuration.Record(ctx, wait, record...)
		return key
	}
	return step, func() {}
}

// startPromFloorMetrics records, per op, what clientgo-crprom's metrics
// record per item: the queue-wait and work-duration observations of
// controller-runtime's Prometheus provider, on the histograms client-go
// binds to the queue's name once, at the queue's creation. No clock read and
// no map, as in sdkfloor-metrics: the two floors differ only by the
// library, so their difference is what the SDK costs over Prometheus for
// the same two measurements.
func startPromFloorMetrics(_ testing.TB, name string) (func(string) string, func()) {
	p := crMetricsProvider()
	queueDuration, workDuration := p.NewLatencyMetric(name), p.NewWorkDurationMetric(name)
	var n uint
	step := func(key string) string {
		n++
		wait := float64(1+n&7) * 1e-7 // as sdkfloor-metrics
		queueDuration.Observe(wait)
		workDuration.Observe(wait)
		return key
	}
	return step, func() {}
}

// checkPromFloor verifies that promfloor-metrics observed ops queue and work
// durations in controller-runtime's registry under the queue name name.
func checkPromFloor(t *testing.T, name string, ops int) {
	t.Helper()
	for _, m := range []string{"workqueue_queue_duration_seconds", "workqueue_work_duration_seconds"} {
		got, err := crMetricCount(m, name)
		if err != nil {
			t.Fatal(err)
		}
		if got < float64(ops) {
			t.Errorf("%s{name=%q} counted %v after %d ops, want >= %d", m, name, got, ops, ops)
		}
	}
}

// floorHistogram creates a duration histogram as otelqueue's instruments.go
// does.
func floorHistogram(tb testing.TB, m metric.Meter, name string) metric.Float64Histogram {
	h, err := m.Float64Histogram(name, metric.WithUnit("s"),
		metric.WithDescription("the SDK floor's "+name),
		metric.WithExplicitBucketBoundaries(otelqueue.DefaultBuckets()...))
	if err != nil {
		tb.Fatal(err)
	}
	return h
}

// startSDKFloorUnsampled starts, per op, the root span an unsampled attempt
// starts in scheduler-otel-traced-unsampled: a new root named as otelqueue
// names it, of kind consumer, with its start timestamp (read from the clock,
// as the scheduler reads it for a tracing Observer) and the link to the
// unsampled enqueue context, the option slices prepared once as otelqueue
// prepares them. The sampler drops it. The op then does what Done does with
// the context the SDK returned (a context value holding the non-recording
// span): look the span up, and look up the root a sampled attempt keeps
// there.
func startSDKFloorUnsampled(_ testing.TB, name string) (func(string) string, func()) {
	tracer := newTracerProvider(name, sdktrace.NeverSample()).Tracer(semconv.ScopeOtelqueue,
		trace.WithInstrumentationVersion(otelqueue.Version))
	link := trace.WithLinks(trace.Link{
		SpanContext: trace.SpanContextFromContext(enqueueContext(false)),
		Attributes:  []attribute.KeyValue{semconv.AttrLinkKind.String("enqueue")},
	})
	// The option slice is reused, as otelqueue reuses its pooled one: a
	// fresh variadic slice would escape to the heap at every Start.
	opts := []trace.SpanStartOption{nil, trace.WithSpanKind(trace.SpanKindConsumer), link}
	rootName := "process " + name
	type rootKey struct{}
	step := func(key string) string {
		opts[0] = trace.WithTimestamp(timeNow())
		ctx, _ := tracer.Start(context.Background(), rootName, opts...)
		if span := trace.SpanFromContext(ctx); span.IsRecording() {
			span.End()
		}
		if root, ok := ctx.Value(rootKey{}).(trace.Span); ok {
			root.End()
		}
		return key
	}
	return step, func() {}
}

// rootSpanContext returns a local root span context, sampled or not, as the
// SDK makes for a root span.
func rootSpanContext(sampled bool) trace.SpanContext {
	flags := trace.TraceFlags(0)
	if sampled {
		flags = trace.FlagsSampled
	}
	return trace.NewSpanContext(trace.SpanContextConfig{
		TraceID:    trace.TraceID{16, 15, 14, 13, 12, 11, 10, 9, 8, 7, 6, 5, 4, 3, 2, 1},
		SpanID:     trace.SpanID{8, 7, 6, 5, 4, 3, 2, 1},
		TraceFlags: flags,
	})
}

// countingSampler wraps a variant's sampler and counts its decisions, for
// the wiring checks: the SDK asks the sampler about every span it starts.
type countingSampler struct {
	sdktrace.Sampler
	// linkedRoots counts the spans started with no parent and at least one
	// link: the roots of attempts.
	linkedRoots atomic.Int64
}

func (s *countingSampler) ShouldSample(p sdktrace.SamplingParameters) sdktrace.SamplingResult {
	if len(p.Links) > 0 && !trace.SpanContextFromContext(p.ParentContext).IsValid() {
		s.linkedRoots.Add(1)
	}
	return s.Sampler.ShouldSample(p)
}

// checkUnsampledRoots verifies that the variant started one linked root per
// op and that none of them was recorded; when the variant also has metrics,
// that its histograms counted every op.
func checkUnsampledRoots(t *testing.T, name string, ops int) {
	t.Helper()
	if got := decisions[name].linkedRoots.Load(); got < int64(ops) {
		t.Errorf("%s: %d linked root spans started after %d ops, want one per op", name, got, ops)
	}
	if got := spanCount[name].ended.Load(); got != 0 {
		t.Errorf("%s: %d spans recorded and ended, want none: the roots must be unsampled", name, got)
	}
	if readers[name] != nil {
		checkOTelHistograms(t, name, ops)
	}
}
