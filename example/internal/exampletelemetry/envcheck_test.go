package exampletelemetry

import (
	"context"
	"strings"
	"testing"
)

// TestSetupRefusesWhatTheSDKMishandles: values that made the SDK panic
// (a negative batch size: makeslice in the batch span processor), or that
// it replaced by a default with a raw log line (an unknown sampler, a
// number that is none), are refused by Setup with an error that names the
// variable; valid ones pass.
func TestSetupRefusesWhatTheSDKMishandles(t *testing.T) {
	for _, tc := range []struct {
		kv   []string
		want string // "" when valid
	}{
		{[]string{"OTEL_BSP_MAX_QUEUE_SIZE", "-1"}, `OTEL_BSP_MAX_QUEUE_SIZE="-1": want a whole number of spans, 1 or more`},
		{[]string{"OTEL_BSP_MAX_EXPORT_BATCH_SIZE", "-5"}, `OTEL_BSP_MAX_EXPORT_BATCH_SIZE="-5"`},
		{[]string{"OTEL_BSP_SCHEDULE_DELAY", "soon"}, `OTEL_BSP_SCHEDULE_DELAY="soon"`},
		{[]string{"OTEL_METRIC_EXPORT_INTERVAL", "abc"}, `OTEL_METRIC_EXPORT_INTERVAL="abc": want a whole number of milliseconds, 1 or more`},
		{[]string{"OTEL_METRIC_EXPORT_TIMEOUT", "0"}, `OTEL_METRIC_EXPORT_TIMEOUT="0"`},
		{[]string{"OTEL_TRACES_SAMPLER", "bogus"}, `OTEL_TRACES_SAMPLER="bogus": not a sampler this program has; use one of always_on`},
		{[]string{"OTEL_TRACES_SAMPLER", "parentbased_traceidratio", "OTEL_TRACES_SAMPLER_ARG", "1.5"}, `OTEL_TRACES_SAMPLER_ARG="1.5"`},
		{[]string{"OTEL_BSP_MAX_QUEUE_SIZE", "-1", "OTEL_TRACES_SAMPLER", "bogus"}, "OTEL_TRACES_SAMPLER"}, // both named
		{[]string{"OTEL_BSP_MAX_QUEUE_SIZE", "4096", "OTEL_BSP_SCHEDULE_DELAY", "0", "OTEL_METRIC_EXPORT_INTERVAL", "1000",
			"OTEL_TRACES_SAMPLER", "ParentBased_TraceIDRatio", "OTEL_TRACES_SAMPLER_ARG", "0.1"}, ""},
	} {
		setEnv(t, append([]string{"OTEL_TRACES_EXPORTER", "none", "OTEL_METRICS_EXPORTER", "none"}, tc.kv...)...)
		tel, err := Setup(context.Background(), Config{ServiceName: "envcheck"})
		if tc.want == "" {
			if err != nil {
				t.Errorf("%v: %v", tc.kv, err)
				continue
			}
			if err := tel.Shutdown(context.Background()); err != nil {
				t.Error(err)
			}
			continue
		}
		if err == nil {
			_ = tel.Shutdown(context.Background())
			t.Errorf("%v: Setup accepted it", tc.kv)
			continue
		}
		if !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%v: %v, want it to say %q", tc.kv, err, tc.want)
		}
	}
}

// TestSetupSaysWhatGoesToTheConsole: with the console exporter named, the
// Telemetry says which signals go to stdout, so that the app's start line
// says more than "no OTLP export".
func TestSetupSaysWhatGoesToTheConsole(t *testing.T) {
	for _, tc := range []struct {
		traces, metrics string
		want            string
	}{
		{"console", "none", "traces"},
		{"none", "console", "metrics"},
		{"console", "console", "traces metrics"},
		{"none", "none", ""},
	} {
		setEnv(t, "OTEL_TRACES_EXPORTER", tc.traces, "OTEL_METRICS_EXPORTER", tc.metrics)
		tel, err := Setup(context.Background(), Config{ServiceName: "console"})
		if err != nil {
			t.Fatal(err)
		}
		if got := strings.Join(tel.Console, " "); got != tc.want {
			t.Errorf("traces=%s metrics=%s: Console %q, want %q", tc.traces, tc.metrics, got, tc.want)
		}
		if err := tel.Shutdown(context.Background()); err != nil {
			t.Error(err)
		}
	}
}
