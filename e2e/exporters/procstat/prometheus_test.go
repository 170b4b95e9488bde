package procstat_test

import (
	"context"
	"maps"
	"slices"
	"testing"

	"github.com/otelqueue/otelqueue/internal/semconv"

	"github.com/prometheus/client_golang/prometheus"
	dto "github.com/prometheus/client_model/go"
	otelprom "go.opentelemetry.io/otel/exporters/prometheus"
	sdkmetric "go.opentelemetry.io/otel/sdk/metric"

	"github.com/otelqueue/otelqueue/internal/testutil"
	"github.com/otelqueue/otelqueue/procstat"
)

// TestPrometheusNames pins down the names the OpenTelemetry Prometheus
// exporter (go.opentelemetry.io/otel/exporters/prometheus, default
// translation) gives the instruments: "." becomes "_", the unit "s" adds
// "_seconds" and "By" "_bytes", units in braces add nothing, and monotonic
// counters get "_total".
func TestPrometheusNames(t *testing.T) {
	testutil.NoOTelErrors(t)
	reg := prometheus.NewRegistry()
	exporter, err := otelprom.New(otelprom.WithRegisterer(reg))
	if err != nil {
		t.Fatal(err)
	}
	mp := sdkmetric.NewMeterProvider(sdkmetric.WithReader(exporter))
	t.Cleanup(func() { _ = mp.Shutdown(context.Background()) })
	instrument(t, procstat.WithMeterProvider(mp), quotaReader(),
		procstat.WithCachedObjects(func() int64 { return 4200 }))

	families, err := reg.Gather()
	if err != nil {
		t.Fatal(err)
	}
	byName := map[string]*dto.MetricFamily{}
	for _, f := range families {
		byName[f.GetName()] = f
	}
	want := map[string]dto.MetricType{
		"process_cpu_time_seconds_total":             dto.MetricType_COUNTER,
		"go_processor_limit":                         dto.MetricType_GAUGE,
		"go_memory_used_bytes":                       dto.MetricType_GAUGE,
		"otelqueue_cpu_limit":                        dto.MetricType_GAUGE,
		"otelqueue_cpu_periods_total":                dto.MetricType_COUNTER,
		"otelqueue_cpu_throttled_periods_total":      dto.MetricType_COUNTER,
		"otelqueue_cpu_throttled_time_seconds_total": dto.MetricType_COUNTER,
		"otelqueue_cache_objects":                    dto.MetricType_GAUGE,
		"otelqueue_memory_needed_bytes":              dto.MetricType_GAUGE,
		"otelqueue_cpu_count":                        dto.MetricType_GAUGE,
		"otelqueue_cpu_gc_idle_seconds_total":        dto.MetricType_COUNTER,
		"target_info":                                dto.MetricType_GAUGE, // the resource, from the exporter
	}
	got := slices.Sorted(maps.Keys(byName))
	if !slices.Equal(got, slices.Sorted(maps.Keys(want))) {
		t.Fatalf("families = %q\nwant %q", got, slices.Sorted(maps.Keys(want)))
	}
	for name, typ := range want {
		if f := byName[name]; f.GetType() != typ {
			t.Errorf("%s is a %v, want a %v", name, f.GetType(), typ)
		}
	}
	t.Logf("families: %q", got)

	// One series a CPU mode, and the scope's labels on every series.
	var modes []string
	for _, m := range byName["process_cpu_time_seconds_total"].GetMetric() {
		labels := map[string]string{}
		for _, l := range m.GetLabel() {
			labels[l.GetName()] = l.GetValue()
		}
		modes = append(modes, labels["cpu_mode"])
		if labels["otel_scope_name"] != semconv.ScopeProcstat || labels["otel_scope_version"] != semconv.Version {
			t.Errorf("labels %v, want otel_scope_name %q and otel_scope_version %q", labels, semconv.ScopeProcstat, semconv.Version)
		}
	}
	if slices.Sort(modes); !slices.Equal(modes, []string{"system", "user"}) {
		t.Errorf("cpu_mode labels %q, want system and user", modes)
	}
	if v := byName["otelqueue_cpu_throttled_time_seconds_total"].GetMetric()[0].GetCounter().GetValue(); v != 4.5 {
		t.Errorf("otelqueue_cpu_throttled_time_seconds_total = %v, want 4.5", v)
	}
	if v := byName["otelqueue_cpu_limit"].GetMetric()[0].GetGauge().GetValue(); v != 0.5 {
		t.Errorf("otelqueue_cpu_limit = %v, want 0.5", v)
	}
}
