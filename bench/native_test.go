package bench

import (
	"testing"

	"github.com/otelqueue/otelqueue/internal/semconv"

	sdkmetric "go.opentelemetry.io/otel/sdk/metric"
	"go.opentelemetry.io/otel/trace/noop"

	"github.com/otelqueue/otelqueue/otelqueue"
	"github.com/otelqueue/otelqueue/otelqueuesdk"
	"github.com/otelqueue/otelqueue/scheduler"
)

// Issue 22: scheduler-otel with otelqueuesdk.NativeHistograms' views on its
// MeterProvider: each of the two histogram records also goes into an
// exponential (native) stream. What that second stream costs per attempt is
// this variant minus scheduler-otel, in the same run.
func init() {
	lifecycleVariants = append(lifecycleVariants,
		lifecycleVariant{name: "scheduler-otel-native", start: startSchedulerOTelNative, check: checkNativeHistograms})
}

func startSchedulerOTelNative(tb testing.TB, name string) (func(string) string, func()) {
	r := sdkmetric.NewManualReader()
	readers[name] = r
	mp := sdkmetric.NewMeterProvider(sdkmetric.WithReader(r), sdkmetric.WithView(otelqueuesdk.NativeHistograms(0)...))
	s := scheduler.New(scheduler.Config[string]{Name: name})
	if _, err := otelqueue.Instrument(s, otelqueue.WithMeterProvider(mp), otelqueue.WithTracerProvider(noop.NewTracerProvider())); err != nil {
		tb.Fatal(err)
	}
	return startQueue(func(string) queue { return s })(tb, name)
}

// checkNativeHistograms verifies that both streams of each histogram, the
// classic and the native one, counted every step.
func checkNativeHistograms(t *testing.T, name string, ops int) {
	t.Helper()
	checkOTelHistograms(t, name, ops)
	counts := histogramCounts(t, name)
	for _, m := range []string{semconv.MetricQueueDuration, semconv.MetricWorkDuration} {
		if n := counts[m+semconv.NativeSuffix]; n < uint64(ops) {
			t.Errorf("%s: %s counted %d after %d ops: the native stream is not attached", name, m+semconv.NativeSuffix, n, ops)
		}
	}
}
