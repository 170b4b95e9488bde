// Command app is otelqueue's example controller. It watches ConfigMaps
// through a client-go SharedInformerFactory, enqueues their keys with the
// context-aware API of an instrumented scheduler, and reconciles them with an
// otelqueue Runner that reads and writes the objects through the client.
//
// By default it runs against an embedded cluster (an API server for
// ConfigMaps on loopback, reached over HTTP through client-go's REST client,
// with real informers) driven by a synthetic workload whose churn,
// bursts, reconcile latency, error rate and worker count are flags, so that
// queue wait can be provoked and watched. With -kubeconfig it runs the same
// controller against a real cluster.
//
// Telemetry: -metrics-addr serves the OpenTelemetry Prometheus exporter
// bridge (controller-runtime's series names, exemplars in the OpenMetrics
// format); when OTEL_EXPORTER_OTLP_ENDPOINT is set, traces and metrics are
// also exported over OTLP gRPC. The standard OTEL_* variables apply.
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"log"
	"os"
	"os/signal"
	"syscall"
	"time"

	"github.com/otelqueue/otelqueue/example/internal/examplecluster"
	"github.com/otelqueue/otelqueue/example/internal/exampletelemetry"
	"github.com/otelqueue/otelqueue/otelqueue"
)

func main() {
	examplecluster.ServeChild() // the embedded API server's process serves here and exits
	log.SetFlags(log.Ltime | log.Lmicroseconds)
	if err := run(); err != nil {
		if errors.Is(err, flag.ErrHelp) {
			os.Exit(0)
		}
		fmt.Fprintln(os.Stderr, "app:", err)
		os.Exit(1)
	}
}

func run() error {
	cfg, err := parseFlags(os.Args[1:])
	if err != nil {
		return err
	}
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	if cfg.Duration > 0 {
		var cancel context.CancelFunc
		ctx, cancel = context.WithTimeout(ctx, cfg.Duration)
		defer cancel()
	}

	// The Sizer of the queue and the process: the summary line's pod part
	// and the top of the inspector's page.
	sizer := &otelqueue.Sizer{}
	tel, err := exampletelemetry.Setup(ctx, exampletelemetry.Config{ServiceName: "otelqueue-example", MetricsAddr: cfg.MetricsAddr, NativeHistograms: cfg.NativeHistograms, Sizer: sizer, Shard: cfg.Shard})
	if err != nil {
		return err
	}
	runErr := runController(ctx, cfg, tel, sizer)

	// Flush telemetry with a deadline of its own: the run's context is over.
	flushCtx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if err := tel.Shutdown(flushCtx); err != nil {
		log.Printf("flushing telemetry: %v", err)
	}
	log.Printf("stopped")
	return runErr
}
