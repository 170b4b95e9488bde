package otelqueue_test

import (
	"bufio"
	"context"
	"fmt"
	"log"
	"net/http"
	"net/http/httptest"
	"strings"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/promhttp"
	"go.opentelemetry.io/otel/exporters/otlp/otlpmetric/otlpmetricgrpc"
	"go.opentelemetry.io/otel/exporters/otlp/otlptrace/otlptracegrpc"
	otelprom "go.opentelemetry.io/otel/exporters/prometheus"
	sdkmetric "go.opentelemetry.io/otel/sdk/metric"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"

	"github.com/otelqueue/otelqueue/otelqueue"
	"github.com/otelqueue/otelqueue/otelqueuesdk"
	"github.com/otelqueue/otelqueue/scheduler"
)

// Serve the queue metrics to Prometheus under controller-runtime's names
// through the OpenTelemetry Prometheus exporter. WithoutScopeInfo leaves
// exactly controller-runtime's labels (name and controller); OpenMetrics
// (EnableOpenMetrics) is needed for exemplars.
func Example_prometheus() {
	ctx := context.Background()
	registry := prometheus.NewRegistry() // or prometheus.DefaultRegisterer, or controller-runtime's metrics.Registry
	exporter, err := otelprom.New(otelprom.WithRegisterer(registry), otelprom.WithoutScopeInfo())
	if err != nil {
		log.Fatal(err)
	}
	mp := sdkmetric.NewMeterProvider(sdkmetric.WithReader(exporter))
	defer mp.Shutdown(ctx)

	queue := scheduler.New(scheduler.Config[string]{Name: "deployments"})
	defer queue.ShutDown()
	if _, err := otelqueue.Instrument(queue, otelqueue.WithMeterProvider(mp)); err != nil {
		log.Fatal(err)
	}
	queue.Add("default/web")

	// In a program: http.Handle("/metrics", promhttp.HandlerFor(...)).
	srv := httptest.NewServer(promhttp.HandlerFor(registry, promhttp.HandlerOpts{EnableOpenMetrics: true}))
	defer srv.Close()
	resp, err := http.Get(srv.URL)
	if err != nil {
		log.Fatal(err)
	}
	defer resp.Body.Close()
	sc := bufio.NewScanner(resp.Body)
	for sc.Scan() {
		if line := sc.Text(); strings.HasPrefix(line, "workqueue_depth") || strings.HasPrefix(line, "workqueue_adds_total") {
			fmt.Println(line)
		}
	}
	// Output:
	// workqueue_adds_total{controller="deployments",name="deployments"} 1
	// workqueue_depth{controller="deployments",name="deployments",priority="0"} 1
}

// Export traces and metrics over OTLP gRPC, as to an OpenTelemetry Collector.
// The exporters connect lazily: constructing them needs no server. The
// sampler keeps a queue item's trace whenever the change that enqueued it
// was sampled, and the views make the two histograms exponential
// (Prometheus native histograms).
func Example_otlp() {
	ctx := context.Background()
	traces, err := otlptracegrpc.New(ctx,
		otlptracegrpc.WithEndpoint("localhost:4317"), // default; OTEL_EXPORTER_OTLP_ENDPOINT overrides
		otlptracegrpc.WithInsecure())
	if err != nil {
		log.Fatal(err)
	}
	metrics, err := otlpmetricgrpc.New(ctx,
		otlpmetricgrpc.WithEndpoint("localhost:4317"),
		otlpmetricgrpc.WithInsecure())
	if err != nil {
		log.Fatal(err)
	}
	tp := sdktrace.NewTracerProvider(
		sdktrace.WithBatcher(traces),
		sdktrace.WithSampler(otelqueuesdk.LinkSampled(sdktrace.ParentBased(sdktrace.TraceIDRatioBased(0.1)))))
	defer tp.Shutdown(ctx) // flushes
	mp := sdkmetric.NewMeterProvider(
		sdkmetric.WithReader(sdkmetric.NewPeriodicReader(metrics)),
		sdkmetric.WithView(otelqueuesdk.ExponentialHistograms(0)...))
	defer mp.Shutdown(ctx) // flushes
	// Or otel.SetTracerProvider(tp) and otel.SetMeterProvider(mp), and no options.

	queue := scheduler.New(scheduler.Config[string]{Name: "deployments"})
	defer queue.ShutDown()
	if _, err := otelqueue.Instrument(queue, otelqueue.WithTracerProvider(tp), otelqueue.WithMeterProvider(mp)); err != nil {
		log.Fatal(err)
	}
	// ... start informers that call queue.AddContext, and a Runner.
}
