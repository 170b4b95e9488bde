package otelqueue_test

import (
	"context"
	"fmt"
	"log"
	"slices"
	"strings"
	"sync"

	sdkmetric "go.opentelemetry.io/otel/sdk/metric"
	"go.opentelemetry.io/otel/sdk/metric/metricdata"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/sdk/trace/tracetest"

	"github.com/otelqueue/otelqueue/otelqueue"
	"github.com/otelqueue/otelqueue/otelqueuesdk"
	"github.com/otelqueue/otelqueue/scheduler"
)

// Instrument a named scheduler with SDK providers. An event handler enqueues
// a key from its span; the worker's reconcile runs in the "reconcile" span of
// the attempt's trace, next to the "queued" span of its wait.
func ExampleInstrument() {
	ctx := context.Background()
	reader := sdkmetric.NewManualReader() // in a program: a PeriodicReader or the Prometheus exporter
	mp := sdkmetric.NewMeterProvider(sdkmetric.WithReader(reader))
	defer mp.Shutdown(ctx)
	spans := tracetest.NewSpanRecorder() // in a program: sdktrace.WithBatcher(exporter)
	tp := sdktrace.NewTracerProvider(sdktrace.WithSpanProcessor(spans))
	defer tp.Shutdown(ctx)

	queue := scheduler.New(scheduler.Config[string]{Name: "deployments"})
	defer queue.ShutDown()
	inst, err := otelqueue.Instrument(queue, otelqueue.WithMeterProvider(mp), otelqueue.WithTracerProvider(tp))
	if err != nil {
		log.Fatal(err)
	}
	defer inst.Stop()

	// An event handler enqueues a key within its span...
	handlerCtx, handler := tp.Tracer("handler").Start(ctx, "handle event")
	queue.AddContext(handlerCtx, "default/web")
	handler.End()

	// ...and a worker reconciles it in the item's context.
	item, err := queue.GetContext(ctx)
	if err != nil {
		log.Fatal(err)
	}
	_, span := tp.Tracer("reconciler").Start(item.Context(), "update status")
	span.End()
	queue.Done(item.Key)

	for _, s := range spans.Ended() {
		fmt.Println("span:", s.Name())
	}
	var rm metricdata.ResourceMetrics
	if err := reader.Collect(ctx, &rm); err != nil {
		log.Fatal(err)
	}
	var names []string
	for _, sm := range rm.ScopeMetrics {
		for _, m := range sm.Metrics {
			names = append(names, m.Name)
		}
	}
	slices.Sort(names)
	fmt.Println("metrics:", strings.Join(names, " "))
	// Output:
	// span: handle event
	// span: queued
	// span: update status
	// span: reconcile
	// span: process deployments
	// metrics: workqueue.adds workqueue.coalesced workqueue.delayed workqueue.delayed_adds workqueue.depth workqueue.longest_running_processor workqueue.oldest_pending_item workqueue.queue.duration workqueue.retries workqueue.unfinished_work workqueue.work.duration
}

// Run two workers on an instrumented queue until the context is cancelled.
// A returned error requeues the key through the rate limiter; Result asks
// for a requeue without an error.
func ExampleRunner_Run() {
	queue := scheduler.New(scheduler.Config[string]{Name: "deployments"})
	if _, err := otelqueue.Instrument(queue); err != nil { // the global providers
		log.Fatal(err)
	}

	var (
		mu   sync.Mutex
		done []string
	)
	finished := make(chan struct{})
	runner, err := otelqueue.NewRunner(queue, 2, func(ctx context.Context, key string) (otelqueue.Result, error) {
		// ctx carries the "reconcile" span: start the reconciler's spans from it.
		mu.Lock()
		done = append(done, key)
		mu.Unlock()
		finished <- struct{}{}
		return otelqueue.Result{}, nil
	})
	if err != nil {
		log.Fatal(err)
	}
	for _, k := range []string{"default/web", "default/db", "kube-system/dns"} {
		queue.Add(k)
	}

	ctx, cancel := context.WithCancel(context.Background())
	stopped := make(chan error)
	go func() { stopped <- runner.Run(ctx) }()
	for range 3 {
		<-finished
	}
	cancel()                          // Run stops taking keys, waits for the reconciles in flight,
	if err := <-stopped; err != nil { // and shuts the queue down.
		log.Fatal(err)
	}

	slices.Sort(done)
	fmt.Println(strings.Join(done, "\n"))
	st := runner.Stats()
	fmt.Printf("workers %d, active %d, succeeded %d, failed %d\n", st.Workers, st.ActiveWorkers, st.Count(otelqueue.OutcomeSuccess), st.Count(otelqueue.OutcomeError)+st.Count(otelqueue.OutcomePanic))
	// Output:
	// default/db
	// default/web
	// kube-system/dns
	// workers 2, active 0, succeeded 3, failed 0
}

// Export the queue's traces and metrics with the SDK: any span exporter
// and metric reader do. In a program they are OTLP's (to an OpenTelemetry
// Collector: go.opentelemetry.io/otel/exporters/otlp/otlptrace/otlptracegrpc
// and a PeriodicReader over .../otlpmetric/otlpmetricgrpc) or Prometheus's
// (go.opentelemetry.io/otel/exporters/prometheus, which gives the metrics
// controller-runtime's names); docs/instrumentation.md wires both. The
// sampler keeps a queue item's trace whenever the change that enqueued it
// was sampled, and the views make the two histograms exponential
// (Prometheus native histograms).
func Example_export() {
	ctx := context.Background()
	spans := tracetest.NewInMemoryExporter() // in a program: otlptracegrpc.New(ctx)
	tp := sdktrace.NewTracerProvider(
		sdktrace.WithBatcher(spans),
		sdktrace.WithSampler(otelqueuesdk.LinkSampled(sdktrace.ParentBased(sdktrace.TraceIDRatioBased(0.1)))))
	defer tp.Shutdown(ctx)                // flushes
	reader := sdkmetric.NewManualReader() // in a program: sdkmetric.NewPeriodicReader(exporter) or otelprom.New()
	mp := sdkmetric.NewMeterProvider(
		sdkmetric.WithReader(reader),
		sdkmetric.WithView(otelqueuesdk.ExponentialHistograms(0)...))
	defer mp.Shutdown(ctx) // flushes
	// Or otel.SetTracerProvider(tp) and otel.SetMeterProvider(mp), and no options.

	queue := scheduler.New(scheduler.Config[string]{Name: "deployments"})
	defer queue.ShutDown()
	if _, err := otelqueue.Instrument(queue, otelqueue.WithTracerProvider(tp), otelqueue.WithMeterProvider(mp)); err != nil {
		log.Fatal(err)
	}
	queue.Add("default/web")

	var rm metricdata.ResourceMetrics
	if err := reader.Collect(ctx, &rm); err != nil {
		log.Fatal(err)
	}
	for _, m := range rm.ScopeMetrics[0].Metrics {
		if m.Name == "workqueue.depth" {
			fmt.Println(m.Name, m.Data.(metricdata.Sum[int64]).DataPoints[0].Value)
		}
	}
	// Output:
	// workqueue.depth 1
}
