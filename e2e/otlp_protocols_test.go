package e2e

import (
	"context"
	"fmt"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"
)

// TestAppOTLPProtocols runs the example app with the standard OTEL_*
// variables a user of `make stack` sets: OTLP over gRPC (the default) and
// over HTTP (http/protobuf) both bring its spans to Jaeger and its metrics
// to Prometheus through the collector, and OTEL_TRACES_EXPORTER=none
// exports the metrics but no span.
func TestAppOTLPProtocols(t *testing.T) {
	suffix := strconv.FormatInt(time.Now().UnixNano(), 36)
	grpcSvc, httpSvc, noTracesSvc := "e2e-otlp-grpc-"+suffix, "e2e-otlp-http-"+suffix, "e2e-otlp-no-traces-"+suffix
	grpcEnv := []string{"OTEL_EXPORTER_OTLP_ENDPOINT=http://" + stack.CollectorOTLPGRPC} // no protocol: grpc by default
	cases := []struct {
		service string
		env     []string
		says    string // in the app's "exporting ..." line
	}{
		{grpcSvc, grpcEnv, "traces over OTLP gRPC to " + stack.CollectorOTLPGRPC + " (plaintext), metrics over OTLP gRPC to " + stack.CollectorOTLPGRPC},
		{httpSvc, stack.OTelEnvHTTP(), "traces over OTLP http/protobuf to http://" + stack.CollectorOTLPHTTP + "/v1/traces, metrics over OTLP http/protobuf to http://" + stack.CollectorOTLPHTTP + "/v1/metrics"},
		{noTracesSvc, append(slices.Clone(grpcEnv), "OTEL_TRACES_EXPORTER=none"), "exporting metrics over OTLP gRPC to " + stack.CollectorOTLPGRPC},
	}
	args := []string{"-workers", "2", "-churn", "20", "-latency", "2ms", "-latency-spread", "0", "-error-rate", "0", "-burst-every", "0", "-objects", "20"}
	var apps []*appRun
	for _, c := range cases {
		apps = append(apps, startAppEnv(t, c.env, c.service, args...))
	}
	time.Sleep(5 * time.Second)
	for i, a := range apps {
		a.stop() // flushes
		if out := a.output(); !strings.Contains(out, cases[i].says) {
			t.Errorf("app %s does not say %q:\n%s", a.service, cases[i].says, out)
		}
	}

	for _, svc := range []string{grpcSvc, httpSvc} {
		for _, tr := range attemptTraces(t, svc, 5) {
			checkAttempt(t, tr)
		}
	}
	for _, svc := range []string{grpcSvc, httpSvc, noTracesSvc} {
		Eventually(t, 90*time.Second, time.Second, func() error {
			s, err := stack.PrometheusAPI.Query(context.Background(), fmt.Sprintf(`workqueue_adds_total{job=%q}`, svc))
			if err != nil {
				return err
			}
			if len(s) == 0 {
				return fmt.Errorf("no workqueue_adds_total of %s in Prometheus", svc)
			}
			return nil
		})
	}
	// Every app has been stopped and has flushed, and the spans of the
	// other two, sent at the same time through the same collector, are in
	// Jaeger: none of noTracesSvc's may be.
	services, err := stack.JaegerAPI.Services(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	if slices.Contains(services, noTracesSvc) {
		traces, _ := stack.JaegerAPI.FindTraces(context.Background(), TraceQuery{Service: noTracesSvc, Lookback: 15 * time.Minute})
		t.Errorf("OTEL_TRACES_EXPORTER=none, yet Jaeger knows service %s (%d traces)", noTracesSvc, len(traces))
	}
}
