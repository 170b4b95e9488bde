package testutil

import (
	"context"
	"testing"

	sdkmetric "go.opentelemetry.io/otel/sdk/metric"
	"go.opentelemetry.io/otel/sdk/metric/metricdata"
)

// Collect reads every metric from r, failing the test if it cannot.
func Collect(t testing.TB, r sdkmetric.Reader) metricdata.ResourceMetrics {
	t.Helper()
	var rm metricdata.ResourceMetrics
	if err := r.Collect(context.Background(), &rm); err != nil {
		t.Fatalf("Collect: %v", err)
	}
	return rm
}

// ScopeMetrics returns the metrics of the instrumentation scope called scope
// in rm, and that scope's version; ok is false when rm has no such scope.
func ScopeMetrics(rm metricdata.ResourceMetrics, scope string) (metrics []metricdata.Metrics, version string, ok bool) {
	for _, sm := range rm.ScopeMetrics {
		if sm.Scope.Name == scope {
			return sm.Metrics, sm.Scope.Version, true
		}
	}
	return nil, "", false
}

// MetricNames returns the names of the metrics of scope in rm, in their
// order.
func MetricNames(rm metricdata.ResourceMetrics, scope string) []string {
	metrics, _, _ := ScopeMetrics(rm, scope)
	names := make([]string, len(metrics))
	for i, m := range metrics {
		names[i] = m.Name
	}
	return names
}

// FindMetric returns the metric called name of the instrumentation scope
// called scope in rm, failing the test, with the names there are, when there
// is none.
func FindMetric(t testing.TB, rm metricdata.ResourceMetrics, scope, name string) metricdata.Metrics {
	t.Helper()
	metrics, _, _ := ScopeMetrics(rm, scope)
	for _, m := range metrics {
		if m.Name == name {
			return m
		}
	}
	t.Fatalf("no metric %q of scope %q in %q", name, scope, MetricNames(rm, scope))
	return metricdata.Metrics{}
}
