package otelqueue_test

import (
	"reflect"
	"testing"
	"time"

	"github.com/otelqueue/otelqueue/otelqueue"
)

// TestOptionsPerEntryPoint: each entry point takes only the options it
// honours, so that passing one it would ignore does not compile.
// NewMetricsProvider has no traces, links or workers; Instrument takes every
// MetricsOption; the Runner's options configure nothing else.
func TestOptionsPerEntryPoint(t *testing.T) {
	instrument := reflect.TypeFor[otelqueue.Option]()
	metrics := reflect.TypeFor[otelqueue.MetricsOption]()
	runner := reflect.TypeFor[otelqueue.RunnerOption]()
	for _, tc := range []struct {
		name                        string
		opt                         any
		instrument, metrics, runner bool
	}{
		{"WithMeterProvider", otelqueue.WithMeterProvider(nil), true, true, false},
		{"WithControllerName", otelqueue.WithControllerName("c"), true, true, false},
		{"WithExplicitBuckets", otelqueue.WithExplicitBuckets(1), true, true, false},
		{"WithTracerProvider", otelqueue.WithTracerProvider(nil), true, false, false},
		{"WithEnqueuerAsParent", otelqueue.WithEnqueuerAsParent(), true, false, false},
		{"WithLinkSource", otelqueue.WithLinkSource[string](otelqueue.LinkSourceFunc[string](nil)), true, false, false},
		{"WithWorkers", otelqueue.WithWorkers(1), true, false, false},
		{"WithClientTime", otelqueue.WithClientTime(), true, false, false},
		{"WithLogger", otelqueue.WithLogger(nil), false, false, true},
		{"WithLogRateLimit", otelqueue.WithLogRateLimit(1, time.Second), false, false, true},
		{"WithRunnerClock", otelqueue.WithRunnerClock(nil), false, false, true},
	} {
		typ := reflect.TypeOf(tc.opt)
		for _, entry := range []struct {
			what  string
			iface reflect.Type
			want  bool
		}{{"Instrument (Option)", instrument, tc.instrument}, {"NewMetricsProvider (MetricsOption)", metrics, tc.metrics}, {"NewRunner (RunnerOption)", runner, tc.runner}} {
			if got := typ.Implements(entry.iface); got != entry.want {
				t.Errorf("%s is an option of %s: %v, want %v", tc.name, entry.what, got, entry.want)
			}
		}
	}
}
