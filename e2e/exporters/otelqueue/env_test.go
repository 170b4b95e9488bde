// The test environment of package otelqueue's own tests (otelqueue/main_test.go),
// for its tests through the exporters, which live here so that the root
// module does not require them.

package otelqueue_test

import (
	"context"
	"log/slog"
	"os"
	"testing"
	"time"

	"github.com/otelqueue/otelqueue/internal/semconv"

	"go.opentelemetry.io/otel/attribute"
	sdkmetric "go.opentelemetry.io/otel/sdk/metric"
	"go.opentelemetry.io/otel/sdk/metric/exemplar"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/sdk/trace/tracetest"
	"go.opentelemetry.io/otel/trace"
	tracenoop "go.opentelemetry.io/otel/trace/noop"
	testingclock "k8s.io/utils/clock/testing"

	"github.com/otelqueue/otelqueue/internal/testutil"
	"github.com/otelqueue/otelqueue/otelqueue"
	"github.com/otelqueue/otelqueue/scheduler"
)

func TestMain(m *testing.M) {
	// Tests in this package do not run in parallel: they take the errors
	// that reached otel.Handle (testutil.TakeOTelErrors), or check there
	// were none (testutil.NoOTelErrors).
	testutil.RecordOTelErrors()
	// The Runner logs failed reconciles to slog.Default(); the tests that
	// check those lines give the Runner a logger of their own.
	slog.SetDefault(slog.New(slog.DiscardHandler))
	testutil.Main(m)
}

// t0 is the fake clock's start in every test.
var t0 = testutil.T0

// queueName is the name of the scheduler of every test.
const queueName = "orders"

// env is a scheduler on a fake clock, instrumented with the real SDK: a
// MeterProvider with a ManualReader and, unless tracing is off, a
// TracerProvider whose spans a SpanRecorder keeps.
type env struct {
	clock  *testingclock.FakeClock
	reader *sdkmetric.ManualReader
	mp     *sdkmetric.MeterProvider
	sr     *tracetest.SpanRecorder
	tp     trace.TracerProvider
	q      *scheduler.Scheduler[string]
	inst   *otelqueue.Instrumentation
}

type envConfig struct {
	// sched is the scheduler's Config; Name defaults to queueName, Clock to
	// the env's fake clock, RateLimiter to testutil.ExpLimiter(time.Second, time.Minute).
	sched scheduler.Config[string]
	// sampler of the TracerProvider; sdktrace.AlwaysSample by default.
	sampler sdktrace.Sampler
	// noTracing uses a no-op TracerProvider instead of the SDK's.
	noTracing bool
	// opts are passed to Instrument after the providers.
	opts []otelqueue.Option
	// exemplarFilter, when set, replaces the MeterProvider's default
	// (trace-based) exemplar filter.
	exemplarFilter exemplar.Filter
	// reader, when set, is a second Reader of the MeterProvider (such as
	// the Prometheus exporter).
	reader sdkmetric.Reader
}

func newEnv(t testing.TB, c envConfig) *env {
	t.Helper()
	testutil.NoOTelErrors(t)
	e := &env{clock: testingclock.NewFakeClock(t0), reader: sdkmetric.NewManualReader()}
	mpOpts := []sdkmetric.Option{sdkmetric.WithReader(e.reader)}
	if c.reader != nil {
		mpOpts = append(mpOpts, sdkmetric.WithReader(c.reader))
	}
	if c.exemplarFilter != nil {
		mpOpts = append(mpOpts, sdkmetric.WithExemplarFilter(c.exemplarFilter))
	}
	e.mp = sdkmetric.NewMeterProvider(mpOpts...)
	t.Cleanup(func() { _ = e.mp.Shutdown(context.Background()) })
	if c.noTracing {
		e.tp = tracenoop.NewTracerProvider()
	} else {
		if c.sampler == nil {
			c.sampler = sdktrace.AlwaysSample()
		}
		e.sr = tracetest.NewSpanRecorder()
		tp := sdktrace.NewTracerProvider(sdktrace.WithSampler(c.sampler), sdktrace.WithSpanProcessor(e.sr))
		t.Cleanup(func() { _ = tp.Shutdown(context.Background()) })
		e.tp = tp
	}
	cfg := c.sched
	if cfg.Name == "" {
		cfg.Name = queueName
	}
	if cfg.Clock == nil {
		cfg.Clock = e.clock
	}
	if cfg.RateLimiter == nil {
		cfg.RateLimiter = testutil.ExpLimiter(time.Second, time.Minute)
	}
	e.q = scheduler.New(cfg)
	t.Cleanup(e.q.ShutDown)
	opts := append([]otelqueue.Option{otelqueue.WithMeterProvider(e.mp), otelqueue.WithTracerProvider(e.tp)}, c.opts...)
	inst, err := otelqueue.Instrument(e.q, opts...)
	if err != nil {
		t.Fatalf("Instrument: %v", err)
	}
	t.Cleanup(func() { _ = inst.Stop() })
	e.inst = inst
	return e
}

// step advances the fake clock and then promotes the keys whose delay ended
// (Len does), so that no test depends on when the delay loop's goroutine
// notices the step.
func (e *env) step(d time.Duration) {
	e.clock.Step(d)
	e.q.Len()
}

// get takes the next ready key, failing the test if none is ready within a
// few seconds of real time (a guard against hangs, not a measurement).
func (e *env) get(t testing.TB) scheduler.Item[string] {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	it, err := e.q.GetContext(ctx)
	if err != nil {
		t.Fatalf("GetContext: %v", err)
	}
	return it
}

// getKey is get that also checks which key came out.
func (e *env) getKey(t testing.TB, want string) scheduler.Item[string] {
	t.Helper()
	it := e.get(t)
	if it.Key != want {
		t.Fatalf("GetContext returned key %q, want %q", it.Key, want)
	}
	return it
}

// enqueuer returns a context carrying a span of an SDK tracer that stands
// for an event handler's span (the enqueuer), started and ended at the fake
// clock's time.
func (e *env) enqueuer(t testing.TB, name string) (context.Context, trace.SpanContext) {
	t.Helper()
	ctx, span := e.tp.Tracer("test/handler").Start(context.Background(), name, trace.WithTimestamp(e.clock.Now()))
	span.End(trace.WithTimestamp(e.clock.Now()))
	return ctx, span.SpanContext()
}

// attrMap returns a span's attributes by key.
func attrMap(kvs []attribute.KeyValue) map[attribute.Key]attribute.Value {
	m := make(map[attribute.Key]attribute.Value, len(kvs))
	for _, kv := range kvs {
		m[kv.Key] = kv.Value
	}
	return m
}

// attemptSpans returns the three spans of one processing attempt of key (the
// n-th, counting from 1): the root, found by its key and attempt attributes,
// and its "queued" and "reconcile" children, found by their parent. It fails
// the test unless each is there exactly once and all three share a trace.
func attemptSpans(t testing.TB, spans []sdktrace.ReadOnlySpan, key string, n int) (root, queued, reconcile sdktrace.ReadOnlySpan) {
	t.Helper()
	for _, s := range testutil.SpansNamed(spans, "process "+queueName) {
		a := attrMap(s.Attributes())
		if a[semconv.AttrKey].AsString() == key && a[semconv.AttrAttempt].AsInt64() == int64(n) {
			if root != nil {
				t.Fatalf("two root spans for attempt %d of %q", n, key)
			}
			root = s
		}
	}
	if root == nil {
		t.Fatalf("no root span for attempt %d of %q among %v", n, key, testutil.SpanNames(spans))
	}
	for _, s := range spans {
		if s.Parent().SpanID() != root.SpanContext().SpanID() || s.Parent().TraceID() != root.SpanContext().TraceID() {
			continue
		}
		switch s.Name() {
		case semconv.SpanQueued:
			if queued != nil {
				t.Fatalf("two queued spans under the root of %q", key)
			}
			queued = s
		case semconv.SpanReconcile:
			if reconcile != nil {
				t.Fatalf("two reconcile spans under the root of %q", key)
			}
			reconcile = s
		}
	}
	if queued == nil || reconcile == nil {
		t.Fatalf("attempt %d of %q: queued %v, reconcile %v; want both", n, key, queued != nil, reconcile != nil)
	}
	return root, queued, reconcile
}

// newRunner is otelqueue.NewRunner for the tests. With OTELQUEUE_TEST_ADAPTIVE
// set (make test runs the package once so), a Runner of an instrumented
// queue also gets an adaptive pool that never decides (its interval is a
// day): Max twice its workers, its limit its worker count. The tests then
// hold the Runner's contract with its goroutines gated by the pool.
func newRunner[K comparable](q *scheduler.Scheduler[K], workers int, reconcile otelqueue.ReconcileFunc[K], opts ...otelqueue.RunnerOption) (*otelqueue.Runner[K], error) {
	if os.Getenv("OTELQUEUE_TEST_ADAPTIVE") != "" && q != nil && q.Observer() != nil && workers >= 1 {
		opts = append(opts, otelqueue.AdaptiveWorkers{Min: 1, Max: 2 * workers, Interval: 24 * time.Hour})
	}
	return otelqueue.NewRunner(q, workers, reconcile, opts...)
}

func okReconcile(context.Context, string) (otelqueue.Result, error) { return otelqueue.Result{}, nil }
