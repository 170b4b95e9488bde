package controllerruntime_test

import (
	"context"
	"testing"

	sdkmetric "go.opentelemetry.io/otel/sdk/metric"
	"go.opentelemetry.io/otel/sdk/metric/metricdata"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/sdk/trace/tracetest"
	logf "sigs.k8s.io/controller-runtime/pkg/log"

	"github.com/go-logr/logr"
	"go.uber.org/goleak"

	"github.com/otelqueue/otelqueue/internal/testutil"
)

func TestMain(m *testing.M) {
	// Tests in this package do not run in parallel: they take the errors
	// that reached otel.Handle (testutil.TakeOTelErrors), or check there
	// were none (testutil.NoOTelErrors).
	testutil.RecordOTelErrors()
	// controller-runtime complains, with a stack trace, when its global
	// logger is used before being set.
	logf.SetLogger(logr.Discard())
	// testutil.Main (goleak.VerifyTestMain), with a step between the tests
	// and goleak's look for goroutines left behind: stopping the API server
	// that TestAPIServer tests may have started (apiserver_test.go), whose
	// clients' connections end with it. testutil.Main takes a *testing.M,
	// which leaves no room for that step.
	goleak.VerifyTestMain(runThenStop{m: m, stop: stopAPIServer})
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

// collect reads every metric from the ManualReader.
func (tel *telemetry) collect(t testing.TB) metricdata.ResourceMetrics {
	t.Helper()
	return testutil.Collect(t, tel.reader)
}
