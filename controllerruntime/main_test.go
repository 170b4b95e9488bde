package controllerruntime_test

import (
	"context"
	"runtime"
	"strings"
	"sync"
	"testing"
	"time"

	"go.opentelemetry.io/otel"
	sdkmetric "go.opentelemetry.io/otel/sdk/metric"
	"go.opentelemetry.io/otel/sdk/metric/metricdata"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/sdk/trace/tracetest"
	"go.uber.org/goleak"
	logf "sigs.k8s.io/controller-runtime/pkg/log"

	"github.com/go-logr/logr"
)

func TestMain(m *testing.M) {
	otel.SetErrorHandler(otelErrors)
	// controller-runtime complains, with a stack trace, when its global
	// logger is used before being set.
	logf.SetLogger(logr.Discard())
	goleak.VerifyTestMain(m)
}

// otelErrors keeps what reaches otel.Handle. Tests in this package do not
// run in parallel.
var otelErrors = new(errorRecorder)

type errorRecorder struct {
	mu   sync.Mutex
	errs []error
}

func (r *errorRecorder) Handle(err error) {
	r.mu.Lock()
	r.errs = append(r.errs, err)
	r.mu.Unlock()
}

func (r *errorRecorder) take() []error {
	r.mu.Lock()
	defer r.mu.Unlock()
	errs := r.errs
	r.errs = nil
	return errs
}

// noErrors fails the test, when it ends, if anything the test did not take
// reached otel.Handle.
func noErrors(t testing.TB) {
	otelErrors.take()
	t.Cleanup(func() {
		if errs := otelErrors.take(); len(errs) > 0 {
			t.Errorf("otel.Handle got %v", errs)
		}
	})
}

// telemetry is the real SDK: spans kept by a SpanRecorder, metrics read by
// a ManualReader (and any extra reader).
type telemetry struct {
	sr     *tracetest.SpanRecorder
	tp     *sdktrace.TracerProvider
	reader *sdkmetric.ManualReader
	mp     *sdkmetric.MeterProvider
}

func newTelemetry(t testing.TB, extra ...sdkmetric.Reader) *telemetry {
	t.Helper()
	tel := &telemetry{sr: tracetest.NewSpanRecorder(), reader: sdkmetric.NewManualReader()}
	tel.tp = sdktrace.NewTracerProvider(sdktrace.WithSampler(sdktrace.AlwaysSample()), sdktrace.WithSpanProcessor(tel.sr))
	opts := []sdkmetric.Option{sdkmetric.WithReader(tel.reader)}
	for _, r := range extra {
		opts = append(opts, sdkmetric.WithReader(r))
	}
	tel.mp = sdkmetric.NewMeterProvider(opts...)
	t.Cleanup(func() {
		_ = tel.tp.Shutdown(context.Background())
		_ = tel.mp.Shutdown(context.Background())
	})
	return tel
}

func (tel *telemetry) collect(t testing.TB) metricdata.ResourceMetrics {
	t.Helper()
	var rm metricdata.ResourceMetrics
	if err := tel.reader.Collect(context.Background(), &rm); err != nil {
		t.Fatalf("Collect: %v", err)
	}
	return rm
}

func findMetric(t testing.TB, rm metricdata.ResourceMetrics, name string) metricdata.Metrics {
	t.Helper()
	for _, sm := range rm.ScopeMetrics {
		for _, m := range sm.Metrics {
			if m.Name == name {
				return m
			}
		}
	}
	t.Fatalf("no metric %q", name)
	return metricdata.Metrics{}
}

// spansNamed returns the ended spans called name.
func spansNamed(spans []sdktrace.ReadOnlySpan, name string) []sdktrace.ReadOnlySpan {
	var out []sdktrace.ReadOnlySpan
	for _, s := range spans {
		if s.Name() == name {
			out = append(out, s)
		}
	}
	return out
}

func spanNames(spans []sdktrace.ReadOnlySpan) []string {
	names := make([]string, len(spans))
	for i, s := range spans {
		names[i] = s.Name()
	}
	return names
}

// oneSpan returns the single ended span called name.
func oneSpan(t testing.TB, spans []sdktrace.ReadOnlySpan, name string) sdktrace.ReadOnlySpan {
	t.Helper()
	s := spansNamed(spans, name)
	if len(s) != 1 {
		t.Fatalf("%d spans named %q, want 1 (spans: %v)", len(s), name, spanNames(spans))
	}
	return s[0]
}

// waitFor polls cond until it holds, failing the test after ten seconds of
// real time (a guard against hangs, not a measurement).
func waitFor(t testing.TB, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("timed out waiting for %s", what)
		}
		time.Sleep(time.Millisecond)
	}
}

func receive[T any](t testing.TB, ch <-chan T, what string) T {
	t.Helper()
	select {
	case v := <-ch:
		return v
	case <-time.After(10 * time.Second):
		t.Fatalf("timed out waiting for %s", what)
		panic("unreachable")
	}
}

// waitBlocked waits until some goroutine is parked (not running) in a
// function whose name contains fn: a worker blocked in a queue's Get, so
// that a test can act while it waits rather than before it got there.
func waitBlocked(t testing.TB, fn string) {
	t.Helper()
	buf := make([]byte, 1<<20)
	waitFor(t, "a goroutine blocked in "+fn, func() bool {
		n := runtime.Stack(buf, true)
		for _, g := range strings.Split(string(buf[:n]), "\n\n") {
			header, _, _ := strings.Cut(g, "\n")
			if strings.Contains(g, fn) && !strings.Contains(header, "[running") && !strings.Contains(header, "[runnable") {
				return true
			}
		}
		return false
	})
}
