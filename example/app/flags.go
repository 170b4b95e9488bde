package main

import (
	"flag"
	"fmt"
	"time"

	"github.com/otelqueue/otelqueue/example/internal/examplecluster"
	"github.com/otelqueue/otelqueue/otelqueue"
)

// maxSpread bounds -latency-spread: exp(3σ) already stretches the latency
// twentyfold each way, and more overflows a time.Duration.
const maxSpread = 3

// config holds the parsed flags.
type config struct {
	examplecluster.Flags

	// The app's own knobs of the synthetic workload.
	burstEvery time.Duration
	burstSize  int
	spread     float64 // log-normal sigma of the latency
	errorRate  float64
	// logSimulated logs every deliberate failure (-error-rate), not only
	// the first few (failureLog).
	logSimulated bool
}

func parseFlags(args []string) (config, error) {
	var c config
	fs := flag.NewFlagSet("app", flag.ContinueOnError)
	c.Register(fs, examplecluster.Defaults{
		MetricsAddr:  "127.0.0.1:9464",
		Workers:      2,
		WorkersUsage: "number of reconcile workers",
		Objects:      50,
		ObjectsUsage: "number of ConfigMaps the workload churns (created before the controller starts)",
		Churn:        20,
		Latency:      20 * time.Millisecond,
		LatencyUsage: "median reconcile latency",
	})
	fs.DurationVar(&c.burstEvery, "burst-every", 10*time.Second, "interval between bursts of updates (0: no bursts)")
	fs.IntVar(&c.burstSize, "burst-size", 40, "updates in each burst")
	fs.Float64Var(&c.spread, "latency-spread", 0.5, "spread of the reconcile latency (log-normal sigma, 0 to 3; 0: constant)")
	fs.Float64Var(&c.errorRate, "error-rate", 0.05, "fraction of reconciles that fail and are retried with backoff (0..1)")
	fs.BoolVar(&c.logSimulated, "log-simulated-failures", false, fmt.Sprintf("log every failure -error-rate makes as a \"Reconciler error\" line (at most %d at once, then one every %v, as any other error); by default only the first %d are logged, and the summary line's errors/s counts them all",
		otelqueue.DefaultLogBurst, otelqueue.DefaultLogInterval, loggedSimulated))
	err := c.Parse(fs, args, func(bad func(string, ...any)) {
		if c.burstEvery < 0 {
			bad("-burst-every is %v: use a positive duration, or 0 for no bursts", c.burstEvery)
		}
		if c.burstSize < 0 || c.burstSize > examplecluster.MaxChurn {
			bad("-burst-size is %d: it must be between 0 and %d updates", c.burstSize, examplecluster.MaxChurn)
		}
		if !(c.spread >= 0 && c.spread <= maxSpread) { // NaN fails both
			bad("-latency-spread is %v: it must be a log-normal sigma between 0 and %d", c.spread, maxSpread)
		}
		if !(c.errorRate >= 0 && c.errorRate <= 1) { // NaN fails both
			bad("-error-rate is %v: it must be a fraction between 0 and 1", c.errorRate)
		}
	})
	return c, err
}
