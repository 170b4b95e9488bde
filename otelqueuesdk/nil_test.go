package otelqueuesdk_test

import (
	"testing"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/otelqueue/otelqueue/otelqueuesdk"
)

// TestNilRegistries: a nil registry, typed or not, is refused with the
// package's error rather than a panic in client_golang, and so is a nil
// collector, in Register and in Unregister (client_golang would call its
// Describe on a goroutine of its own, a crash no caller can recover).
func TestNilRegistries(t *testing.T) {
	var typedNil *prometheus.Registry
	for name, g := range map[string]prometheus.Gatherer{"nil": nil, "typed nil": typedNil} {
		if _, err := otelqueuesdk.MergeNativeHistograms(g).Gather(); err == nil {
			t.Errorf("MergeNativeHistograms(%s).Gather(): no error", name)
		}
	}
	c := prometheus.NewCounter(prometheus.CounterOpts{Name: "c_total", Help: "c"})
	for name, r := range map[string]prometheus.Registerer{"nil": nil, "typed nil": typedNil} {
		reg := otelqueuesdk.NativeHistogramRegisterer(r)
		if err := reg.Register(c); err == nil {
			t.Errorf("NativeHistogramRegisterer(%s).Register: no error", name)
		}
		if reg.Unregister(c) {
			t.Errorf("NativeHistogramRegisterer(%s).Unregister: true", name)
		}
	}
	reg := otelqueuesdk.NativeHistogramRegisterer(prometheus.NewRegistry())
	var nilCounter prometheus.Counter
	var typedNilCollector *prometheus.Registry // a Registry is a Collector too
	for name, c := range map[string]prometheus.Collector{"nil": nilCounter, "typed nil": typedNilCollector} {
		if err := reg.Register(c); err == nil {
			t.Errorf("Register(%s collector): no error", name)
		}
		if reg.Unregister(c) {
			t.Errorf("Unregister(%s collector): true", name)
		}
	}
}
