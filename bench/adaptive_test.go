package bench

import (
	"testing"

	"go.opentelemetry.io/otel/trace/noop"

	"github.com/otelqueue/otelqueue/otelqueue"
	"github.com/otelqueue/otelqueue/scheduler"
)

// Issue 21: scheduler-otel with an adaptive worker pool attached
// (otelqueue.AdaptiveWorkers through Instrument): what the pool's signals
// cost per attempt. scheduler-otel itself is the pool's cost when off.
func init() {
	lifecycleVariants = append(lifecycleVariants,
		lifecycleVariant{name: "scheduler-otel-adaptive", start: startSchedulerOTelAdaptive, check: checkAdaptive})
}

// adaptive holds the Instrumentation of the variant last started under a
// queue name, for the wiring check.
var adaptive = map[string]*otelqueue.Instrumentation{}

func startSchedulerOTelAdaptive(tb testing.TB, name string) (func(string) string, func()) {
	s := scheduler.New(scheduler.Config[string]{Name: name})
	inst, err := otelqueue.Instrument(s, otelqueue.WithMeterProvider(newMeterProvider(name)),
		otelqueue.WithTracerProvider(noop.NewTracerProvider()),
		otelqueue.AdaptiveWorkers{Min: 1, Max: 64, Start: 64})
	if err != nil {
		tb.Fatal(err)
	}
	adaptive[name] = inst
	step, stop := startQueue(func(string) queue { return s })(tb, name)
	return step, func() {
		stop()
		_ = inst.Stop()
	}
}

// checkAdaptive verifies that the pool was attached and that the steps were
// measured, as scheduler-otel's are.
func checkAdaptive(t *testing.T, name string, ops int) {
	t.Helper()
	inst := adaptive[name]
	if inst == nil {
		t.Fatalf("no Instrumentation for %q", name)
	}
	if st, ok := inst.AdaptiveStats(); !ok || st.Max != 64 {
		t.Errorf("AdaptiveStats = %+v, %v; want the pool attached, Max 64", st, ok)
	}
	checkOTelHistograms(t, name, ops)
}
