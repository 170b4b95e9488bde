// Command stack runs the native loopback stack of the end-to-end tests for
// people without Docker: Jaeger v2, an OpenTelemetry Collector with
// example/collector/config.yaml, and Prometheus 3.16 with exemplar storage
// and native histograms scraping the collector and evaluating
// example/prometheus/rules.yml, all three built from the Go module proxy on
// first use. It
// prints where each listens and how to point the example app at it, and
// runs until interrupted. Run it from e2e/ (make stack does).
package main

import (
	"context"
	"fmt"
	"os"
	"os/signal"
	"syscall"

	"github.com/otelqueue/otelqueue/e2e"
)

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	s, err := e2e.Start(ctx, os.Stderr)
	if err != nil {
		fmt.Fprintln(os.Stderr, "stack:", err)
		os.Exit(1)
	}
	defer s.Stop()
	fmt.Printf(`
The stack is up (Ctrl-C stops it):

  collector OTLP gRPC  %[1]s
  collector OTLP HTTP  %[4]s
  Jaeger HTTP API      http://%[2]s/api/traces?service=otelqueue-example
  Prometheus           http://%[3]s  (try: histogram_quantile(0.99, sum by (le) (rate(workqueue_queue_duration_seconds_bucket[1m]))))
  rules and alerts     http://%[3]s/api/v1/rules, /api/v1/alerts  (%[5]s; try: queue:workqueue_recommended_workers:littles_law)
  Prometheus OTLP      %[6]s  (metrics straight into Prometheus: OTEL_EXPORTER_OTLP_METRICS_ENDPOINT, with OTEL_EXPORTER_OTLP_METRICS_PROTOCOL=http/protobuf)

In another terminal, run the example against it:

  OTEL_EXPORTER_OTLP_ENDPOINT=http://%[1]s OTEL_EXPORTER_OTLP_INSECURE=true OTEL_METRIC_EXPORT_INTERVAL=5000 make demo

or over OTLP/HTTP: OTEL_EXPORTER_OTLP_ENDPOINT=http://%[4]s OTEL_EXPORTER_OTLP_PROTOCOL=http/protobuf make demo
(every variable: docs/environment.md)

(Jaeger and Prometheus built from Go modules have no UI: use their HTTP APIs, e.g.
http://%[3]s/api/v1/query?query=workqueue_depth; docker compose up gives the full stack with UIs.)
`, s.CollectorOTLPGRPC, s.JaegerQueryHTTP, s.PrometheusHTTP, s.CollectorOTLPHTTP, s.RulesFile, s.PrometheusOTLPMetricsURL())
	<-ctx.Done()
}
