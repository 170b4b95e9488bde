package main

import (
	"errors"
	"flag"
	"fmt"
	"io"
	"net"
	"os"
	"time"

	sdktrace "go.opentelemetry.io/otel/sdk/trace"
)

// config holds the parsed flags.
type config struct {
	kubeconfig   string
	namespace    string
	duration     time.Duration
	metricsAddr  string
	workers      int
	summaryEvery time.Duration
	generate     bool
	objects      int
	churn        float64 // updates per second
	latency      time.Duration

	// Set by tests only: spans also receives every span, and the
	// controller's name is not checked for uniqueness in the process.
	spans              sdktrace.SpanProcessor
	skipNameValidation bool
}

func parseFlags(args []string) (config, error) {
	var c config
	fs := flag.NewFlagSet("example", flag.ContinueOnError)
	fs.SetOutput(io.Discard)
	fs.StringVar(&c.kubeconfig, "kubeconfig", "", "path to a kubeconfig: run against that cluster instead of the embedded fake one")
	fs.StringVar(&c.namespace, "namespace", "otelqueue-demo", "namespace whose ConfigMaps the controller watches")
	fs.DurationVar(&c.duration, "duration", 0, "stop cleanly after this long (0: run until SIGINT or SIGTERM)")
	fs.StringVar(&c.metricsAddr, "metrics-addr", "127.0.0.1:9465", "address serving Prometheus metrics at /metrics (empty: off)")
	fs.IntVar(&c.workers, "workers", 1, "controller.Options.MaxConcurrentReconciles")
	fs.DurationVar(&c.summaryEvery, "summary-interval", 5*time.Second, "how often to print the queue summary line (0: never)")
	generate := fs.Bool("generate", true, "run the workload (default true with the fake cluster; with -kubeconfig it writes ConfigMaps in -namespace, so it must be asked for)")
	fs.IntVar(&c.objects, "objects", 200, "number of ConfigMaps the workload creates before the controller starts, then updates")
	fs.Float64Var(&c.churn, "churn", 10, "ConfigMap updates per second")
	fs.DurationVar(&c.latency, "latency", 20*time.Millisecond, "time each reconcile works")

	if err := fs.Parse(args); err != nil {
		if errors.Is(err, flag.ErrHelp) {
			fs.SetOutput(os.Stdout)
			fmt.Fprintln(os.Stdout, "Usage of example:")
			fs.PrintDefaults()
			return c, err
		}
		return c, fmt.Errorf("%v (run with -h for the flags)", err)
	}
	if fs.NArg() > 0 {
		return c, fmt.Errorf("unexpected argument %q: every setting is a flag (run with -h)", fs.Arg(0))
	}
	c.generate = *generate
	explicit := map[string]bool{}
	fs.Visit(func(f *flag.Flag) { explicit[f.Name] = true })
	if c.kubeconfig != "" && !explicit["generate"] {
		c.generate = false
	}

	var errs []error
	bad := func(format string, a ...any) { errs = append(errs, fmt.Errorf(format, a...)) }
	if c.workers < 1 {
		bad("-workers is %d: it must be at least 1", c.workers)
	}
	if c.duration < 0 {
		bad("-duration is %v: use a positive duration, or 0 to run until interrupted", c.duration)
	}
	if c.summaryEvery < 0 {
		bad("-summary-interval is %v: use a positive duration, or 0 for no summary", c.summaryEvery)
	}
	if c.objects < 1 {
		bad("-objects is %d: it must be at least 1", c.objects)
	}
	if c.churn < 0 {
		bad("-churn is %v: it must be 0 or more updates per second", c.churn)
	}
	if c.latency < 0 {
		bad("-latency is %v: it must not be negative", c.latency)
	}
	if c.metricsAddr != "" {
		if _, _, err := net.SplitHostPort(c.metricsAddr); err != nil {
			bad("-metrics-addr %q: %v (use host:port, e.g. 127.0.0.1:9465)", c.metricsAddr, err)
		}
	}
	return c, errors.Join(errs...)
}
