// Command example is a controller-runtime controller whose queue is
// otelqueue's: a manager, a controller built with builder.ControllerManagedBy,
// controllerruntime.New's NewQueue and wrapped reconciler, and
// For(&corev1.ConfigMap{}), as kubebuilder scaffolds it, with
// controllerruntime.ObjectLinkSource linking each attempt to the writer
// found in the object's annotation in the manager's cache.
//
// By default it runs on an embedded cluster (an API server for ConfigMaps
// on loopback, reached over HTTP through client-go's REST client; the
// manager's cache is served by a clientset of it, see package fakecluster)
// with a workload
// that creates -objects ConfigMaps before the controller starts (its initial
// list, enqueued at low priority) and then updates them at -churn per
// second, each write in a traced "workload update" span whose traceparent
// goes into the object's otelqueue.github.io/traceparent annotation. With
// -kubeconfig it watches -namespace of a real cluster (and writes there only
// with -generate).
//
// Telemetry: -metrics-addr serves, in one scrape, controller-runtime's
// metrics registry and the registry of the OpenTelemetry Prometheus exporter
// (prometheus.Gatherers), so one endpoint shows controller-runtime's
// controller_runtime_* series and otelqueue's workqueue_* series (with
// exemplars in the OpenMetrics format), each once.
// OTEL_EXPORTER_OTLP_ENDPOINT (or the per-signal
// OTEL_EXPORTER_OTLP_TRACES_ENDPOINT and OTEL_EXPORTER_OTLP_METRICS_ENDPOINT)
// also sends traces and metrics over OTLP gRPC. The standard OTEL_*
// variables apply.
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"log"
	"os"
	"os/signal"
	"strings"
	"syscall"
	"time"

	ctrlmetrics "sigs.k8s.io/controller-runtime/pkg/metrics"

	"github.com/otelqueue/otelqueue/example/internal/examplecluster"
	"github.com/otelqueue/otelqueue/example/internal/exampletelemetry"
	"github.com/otelqueue/otelqueue/otelqueue"
)

func main() {
	examplecluster.ServeChild() // the embedded API server's process serves here and exits
	log.SetFlags(log.Ltime | log.Lmicroseconds)
	cfg, err := parseFlags(os.Args[1:])
	if errors.Is(err, flag.ErrHelp) {
		os.Exit(0)
	}
	if err == nil {
		ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
		err = run(ctx, cfg, nil)
		stop()
	}
	if err != nil {
		fmt.Fprintln(os.Stderr, "example:", err)
		os.Exit(1)
	}
}

// run runs the example until ctx ends or -duration passes, then flushes the
// telemetry. ready, if not nil, receives the metrics URL once serving.
func run(ctx context.Context, cfg config, ready chan<- string) error {
	if cfg.Duration > 0 {
		var cancel context.CancelFunc
		ctx, cancel = context.WithTimeout(ctx, cfg.Duration)
		defer cancel()
	}
	// The Sizer of the queue and the process: the summary line's pod part
	// and the top of the inspector's page.
	sizer := &otelqueue.Sizer{}
	tel, err := exampletelemetry.Setup(ctx, exampletelemetry.Config{
		Sizer:            sizer,
		ServiceName:      "otelqueue-controller-runtime-example",
		MetricsAddr:      cfg.MetricsAddr,
		NativeHistograms: cfg.NativeHistograms,
		Shard:            cfg.Shard,
		Gatherer:         ctrlmetrics.Registry, // one scrape with controller-runtime's series
		SpanProcessor:    cfg.spans,
	})
	if err != nil {
		return err
	}
	if tel.MetricsURL != "" {
		log.Printf("metrics at %s", tel.MetricsURL)
		log.Printf("queue inspector: %s", tel.InspectorURL)
	}
	if len(tel.OTLP) > 0 {
		log.Printf("exporting %s", strings.Join(tel.OTLP, ", "))
	}
	if ready != nil {
		ready <- tel.MetricsURL
	}
	runErr := runManager(ctx, cfg, sizer)
	flushCtx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if err := tel.Shutdown(flushCtx); err != nil {
		log.Printf("flushing telemetry: %v", err)
	}
	log.Printf("stopped")
	return runErr
}
