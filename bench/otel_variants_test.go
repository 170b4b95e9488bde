package bench

import (
	"context"
	"sync/atomic"
	"testing"
	"time"

	"github.com/otelqueue/otelqueue/internal/semconv"

	"go.opentelemetry.io/otel/attribute"
	sdkmetric "go.opentelemetry.io/otel/sdk/metric"
	"go.opentelemetry.io/otel/sdk/metric/metricdata"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/trace"
	"go.opentelemetry.io/otel/trace/noop"
	"k8s.io/client-go/util/workqueue"

	"github.com/otelqueue/otelqueue/otelqueue"
	"github.com/otelqueue/otelqueue/scheduler"
)

// The issue-3 variants: otelqueue's instrumentation on the real SDK, with a
// ManualReader (nothing exported while measuring) and, for the traced ones,
// a span processor that drops every span, so export is not measured.
func init() {
	lifecycleVariants = append(lifecycleVariants,
		lifecycleVariant{name: "clientgo-otelprovider", start: startClientGoOTel, check: checkOTelHistograms},
		lifecycleVariant{name: "scheduler-otel", start: startSchedulerOTel(nil, false), check: checkOTelHistograms},
		lifecycleVariant{name: "scheduler-otel-traced-unsampled", start: startSchedulerOTel(sdktrace.NeverSample(), false), check: checkUnsampledRoots},
		lifecycleVariant{name: "scheduler-otel-traced-sampled", start: startSchedulerOTel(sdktrace.AlwaysSample(), true), check: checkSampledSpans},
		lifecycleVariant{name: "sdkfloor-sampled", start: startSDKFloor, check: checkSampledSpans},
		// Issue 12: the SDK alone doing what scheduler-otel and
		// scheduler-otel-traced-unsampled ask of it (floors_test.go).
		lifecycleVariant{name: "sdkfloor-metrics", start: startSDKFloorMetrics, check: checkOTelHistograms},
		lifecycleVariant{name: "sdkfloor-unsampled", start: startSDKFloorUnsampled, check: checkUnsampledRoots},
		// The same two measurements in controller-runtime's Prometheus
		// histograms, for comparison with sdkfloor-metrics.
		lifecycleVariant{name: "promfloor-metrics", start: startPromFloorMetrics, check: checkPromFloor},
	)
}

// readers holds the ManualReader and span counter of the variant last
// started under a queue name, for the wiring checks.
var (
	readers   = map[string]*sdkmetric.ManualReader{}
	spanCount = map[string]*countingProcessor{}
	decisions = map[string]*countingSampler{}
)

func newMeterProvider(name string) *sdkmetric.MeterProvider {
	r := sdkmetric.NewManualReader()
	readers[name] = r
	return sdkmetric.NewMeterProvider(sdkmetric.WithReader(r))
}

// countingProcessor counts ended spans and drops them.
type countingProcessor struct{ ended atomic.Int64 }

func (p *countingProcessor) OnStart(context.Context, sdktrace.ReadWriteSpan) {}
func (p *countingProcessor) OnEnd(sdktrace.ReadOnlySpan)                     { p.ended.Add(1) }
func (p *countingProcessor) Shutdown(context.Context) error                  { return nil }
func (p *countingProcessor) ForceFlush(context.Context) error                { return nil }

func newTracerProvider(name string, sampler sdktrace.Sampler) *sdktrace.TracerProvider {
	p := &countingProcessor{}
	spanCount[name] = p
	cs := &countingSampler{Sampler: sampler}
	decisions[name] = cs
	return sdktrace.NewTracerProvider(sdktrace.WithSampler(cs), sdktrace.WithSpanProcessor(p))
}

// enqueueContext is the context of an event handler: a remote span context,
// sampled or not.
func enqueueContext(sampled bool) context.Context {
	flags := trace.TraceFlags(0)
	if sampled {
		flags = trace.FlagsSampled
	}
	sc := trace.NewSpanContext(trace.SpanContextConfig{
		TraceID:    trace.TraceID{1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15, 16},
		SpanID:     trace.SpanID{1, 2, 3, 4, 5, 6, 7, 8},
		TraceFlags: flags,
		Remote:     true,
	})
	return trace.ContextWithRemoteSpanContext(context.Background(), sc)
}

func startClientGoOTel(tb testing.TB, name string) (func(string) string, func()) {
	p := otelqueue.NewMetricsProvider(otelqueue.WithMeterProvider(newMeterProvider(name)))
	q := workqueue.NewTypedRateLimitingQueueWithConfig(
		workqueue.DefaultTypedControllerRateLimiter[string](),
		workqueue.TypedRateLimitingQueueConfig[string]{Name: name, MetricsProvider: p},
	)
	return startQueue(func(string) queue { return q })(tb, name)
}

// startSchedulerOTel starts a named, instrumented scheduler, with opts
// after the providers. With a nil sampler tracing is off (a no-op
// TracerProvider) and the step is the plain Add, Get, Done; otherwise the
// step enqueues from a handler's context and takes the item with
// GetContext, as the Runner does.
func startSchedulerOTel(sampler sdktrace.Sampler, sampled bool, opts ...otelqueue.Option) func(testing.TB, string) (func(string) string, func()) {
	return func(tb testing.TB, name string) (func(string) string, func()) {
		s := newSchedulerOTel(tb, name, sampler, opts...)
		if sampler == nil {
			return startQueue(func(string) queue { return s })(tb, name)
		}
		ctx, bg := enqueueContext(sampled), context.Background()
		step := func(key string) string {
			s.AddContext(ctx, key)
			it, _ := s.GetContext(bg)
			s.Done(it.Key)
			return it.Key
		}
		return step, s.ShutDown
	}
}

// newSchedulerOTel returns a scheduler named name with otelqueue's
// instrumentation on the SDK: metrics to a ManualReader and, with a sampler,
// spans to a counting processor; with a nil sampler the TracerProvider is a
// no-op one, so tracing is off. extra are given to Instrument after those.
func newSchedulerOTel(tb testing.TB, name string, sampler sdktrace.Sampler, extra ...otelqueue.Option) *scheduler.Scheduler[string] {
	s := scheduler.New(scheduler.Config[string]{Name: name})
	opts := []otelqueue.Option{otelqueue.WithMeterProvider(newMeterProvider(name))}
	if sampler == nil {
		opts = append(opts, otelqueue.WithTracerProvider(noop.NewTracerProvider()))
	} else {
		opts = append(opts, otelqueue.WithTracerProvider(newTracerProvider(name, sampler)))
	}
	opts = append(opts, extra...)
	if _, err := otelqueue.Instrument(s, opts...); err != nil {
		tb.Fatal(err)
	}
	return s
}

// startSDKFloor runs, per op and with no queue, what the instrumentation
// asks of the SDK for one sampled attempt: the root span with its link and
// attributes, the queued span, the reconcile span and the context value
// that carries the root. Timestamps come from time.Now like the
// scheduler's.
func startSDKFloor(_ testing.TB, name string) (func(string) string, func()) {
	tracer := newTracerProvider(name, sdktrace.AlwaysSample()).Tracer("floor")
	enq := trace.SpanContextFromContext(enqueueContext(true))
	links := []attribute.KeyValue{attribute.String("workqueue.link", "enqueue")}
	type rootKey struct{}
	step := func(key string) string {
		now := timeNow()
		rootCtx, root := tracer.Start(context.Background(), "process "+queueName,
			trace.WithTimestamp(now), trace.WithSpanKind(trace.SpanKindConsumer),
			trace.WithLinks(trace.Link{SpanContext: enq, Attributes: links}))
		attrs := []attribute.KeyValue{
			attribute.String("workqueue.name", name), attribute.String("workqueue.key", key),
			attribute.Int("workqueue.attempt", 1), attribute.String("workqueue.wait_reason", "immediate"),
			attribute.Int("workqueue.coalesced", 0),
		}
		root.SetAttributes(attrs...)
		deq := timeNow()
		_, queued := tracer.Start(rootCtx, "queued", trace.WithTimestamp(now))
		queued.SetAttributes(attrs[3])
		queued.End(trace.WithTimestamp(deq))
		rctx, rec := tracer.Start(rootCtx, "reconcile", trace.WithTimestamp(deq))
		rec.SetAttributes(attrs[0], attrs[1], attrs[2])
		rctx = context.WithValue(rctx, rootKey{}, root)
		end := timeNow()
		trace.SpanFromContext(rctx).End(trace.WithTimestamp(end))
		rctx.Value(rootKey{}).(trace.Span).End(trace.WithTimestamp(end))
		return key
	}
	return step, func() {}
}

// checkOTelHistograms verifies that the variant recorded ops queue and work
// durations in its ManualReader.
func checkOTelHistograms(t *testing.T, name string, ops int) {
	t.Helper()
	counts := histogramCounts(t, name)
	for _, m := range []string{semconv.MetricQueueDuration, semconv.MetricWorkDuration} {
		if counts[m] < uint64(ops) {
			t.Errorf("%s: %s counted %d after %d ops: the instrumentation is not attached", name, m, counts[m], ops)
		}
	}
}

// checkSampledSpans verifies that every op ended its three spans.
func checkSampledSpans(t *testing.T, name string, ops int) {
	t.Helper()
	if got := spanCount[name].ended.Load(); got < int64(3*ops) {
		t.Errorf("%s: %d spans ended after %d ops, want %d", name, got, ops, 3*ops)
	}
	if readers[name] != nil {
		checkOTelHistograms(t, name, ops)
	}
}

// timeNow is time.Now, as the scheduler reads it for an Observer.
var timeNow = time.Now

// histogramCounts collects the ManualReader of the variant named name and
// returns the count of each of its histograms, explicit-bucket and
// exponential (a native stream has a name of its own).
func histogramCounts(t *testing.T, name string) map[string]uint64 {
	t.Helper()
	r := readers[name]
	if r == nil {
		t.Fatalf("no ManualReader for %q", name)
	}
	var rm metricdata.ResourceMetrics
	if err := r.Collect(context.Background(), &rm); err != nil {
		t.Fatal(err)
	}
	counts := map[string]uint64{}
	for _, sm := range rm.ScopeMetrics {
		for _, m := range sm.Metrics {
			switch h := m.Data.(type) {
			case metricdata.Histogram[float64]:
				for _, dp := range h.DataPoints {
					counts[m.Name] += dp.Count
				}
			case metricdata.ExponentialHistogram[float64]:
				for _, dp := range h.DataPoints {
					counts[m.Name] += dp.Count
				}
			}
		}
	}
	return counts
}
