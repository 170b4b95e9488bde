package main

import (
	"flag"
	"time"

	sdktrace "go.opentelemetry.io/otel/sdk/trace"

	"github.com/otelqueue/otelqueue/internal/examplecluster"
)

// config holds the parsed flags.
type config struct {
	examplecluster.Flags

	// Set by tests only: spans also receives every span, the controller's
	// name is not checked for uniqueness in the process, and
	// controllerRuntimeQueue runs the controller on controller-runtime's own
	// queue instead of otelqueue's, for comparisons.
	spans                  sdktrace.SpanProcessor
	skipNameValidation     bool
	controllerRuntimeQueue bool
}

func parseFlags(args []string) (config, error) {
	var c config
	fs := flag.NewFlagSet("example", flag.ContinueOnError)
	c.Register(fs, examplecluster.Defaults{
		MetricsAddr:  "127.0.0.1:9465",
		Workers:      1,
		WorkersUsage: "controller.Options.MaxConcurrentReconciles",
		Objects:      200,
		ObjectsUsage: "number of ConfigMaps the workload creates before the controller starts, then updates",
		Churn:        10,
		Latency:      20 * time.Millisecond,
		LatencyUsage: "time each reconcile works",
	})
	err := c.Parse(fs, args, nil)
	return c, err
}
