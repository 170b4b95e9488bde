package main

import (
	"errors"
	"flag"
	"fmt"
	"io"
	"net"
	"os"
	"time"
)

// config holds the parsed flags.
type config struct {
	kubeconfig   string
	namespace    string
	duration     time.Duration
	metricsAddr  string
	workers      int
	summaryEvery time.Duration

	// The synthetic workload (embedded fake cluster, or -generate).
	generate   bool
	objects    int
	churn      float64 // updates per second
	burstEvery time.Duration
	burstSize  int
	latency    time.Duration // median reconcile latency
	spread     float64       // log-normal sigma of the latency
	errorRate  float64
}

func parseFlags(args []string) (config, error) {
	var c config
	fs := flag.NewFlagSet("app", flag.ContinueOnError)
	fs.SetOutput(io.Discard)
	fs.StringVar(&c.kubeconfig, "kubeconfig", "", "path to a kubeconfig: run against that cluster instead of the embedded fake one")
	fs.StringVar(&c.namespace, "namespace", "otelqueue-demo", "namespace whose ConfigMaps the controller watches")
	fs.DurationVar(&c.duration, "duration", 0, "stop cleanly after this long (0: run until SIGINT or SIGTERM)")
	fs.StringVar(&c.metricsAddr, "metrics-addr", "127.0.0.1:9464", "address serving Prometheus metrics at /metrics (empty: off)")
	fs.IntVar(&c.workers, "workers", 2, "number of reconcile workers")
	fs.DurationVar(&c.summaryEvery, "summary-interval", 5*time.Second, "how often to print the queue summary line (0: never)")
	generate := fs.Bool("generate", true, "run the synthetic workload (default true with the fake cluster; with -kubeconfig it writes ConfigMaps in -namespace, so it must be asked for)")
	fs.IntVar(&c.objects, "objects", 50, "number of ConfigMaps the workload churns")
	fs.Float64Var(&c.churn, "churn", 20, "ConfigMap updates per second")
	fs.DurationVar(&c.burstEvery, "burst-every", 10*time.Second, "interval between bursts of updates (0: no bursts)")
	fs.IntVar(&c.burstSize, "burst-size", 40, "updates in each burst")
	fs.DurationVar(&c.latency, "latency", 20*time.Millisecond, "median reconcile latency")
	fs.Float64Var(&c.spread, "latency-spread", 0.5, "spread of the reconcile latency (log-normal sigma; 0: constant)")
	fs.Float64Var(&c.errorRate, "error-rate", 0.05, "fraction of reconciles that fail and are retried with backoff (0..1)")

	if err := fs.Parse(args); err != nil {
		if errors.Is(err, flag.ErrHelp) {
			fs.SetOutput(os.Stdout)
			fmt.Fprintln(os.Stdout, "Usage of app:")
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
	if c.burstEvery < 0 || c.burstSize < 0 {
		bad("-burst-every and -burst-size must not be negative")
	}
	if c.latency < 0 || c.spread < 0 {
		bad("-latency and -latency-spread must not be negative")
	}
	if c.errorRate < 0 || c.errorRate > 1 {
		bad("-error-rate is %v: it must be between 0 and 1", c.errorRate)
	}
	if c.metricsAddr != "" {
		if _, _, err := net.SplitHostPort(c.metricsAddr); err != nil {
			bad("-metrics-addr %q: %v (use host:port, e.g. 127.0.0.1:9464)", c.metricsAddr, err)
		}
	}
	return c, errors.Join(errs...)
}
