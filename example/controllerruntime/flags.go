package main

import (
	"flag"
	"time"

	sdktrace "go.opentelemetry.io/otel/sdk/trace"

	"github.com/otelqueue/otelqueue/example/internal/examplecluster"
)

// config holds the parsed flags.
type config struct {
	examplecluster.Flags

	// Leader election (manager.Options): LeaderElect runs the controller
	// only on the replica that holds the Lease LeaderElectionID in
	// -namespace; Warmup (controller.Options.EnableWarmup) starts its
	// sources and fills its queue before that.
	LeaderElect      bool
	LeaderElectionID string
	LeaseDuration    time.Duration
	RenewDeadline    time.Duration
	RetryPeriod      time.Duration
	Warmup           bool

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
	fs.BoolVar(&c.LeaderElect, "leader-elect", false, "with -kubeconfig: run replicas, of which the one that holds the coordination.k8s.io Lease -leader-election-id in -namespace runs the controller (manager.Options.LeaderElection); the others are standby (workqueue_standby 1) until they take the Lease over. The Lease is released when the example stops")
	fs.StringVar(&c.LeaderElectionID, "leader-election-id", "otelqueue-example", "name of the leader election's Lease in -namespace")
	fs.DurationVar(&c.LeaseDuration, "leader-election-lease-duration", 15*time.Second, "how long a standby waits after the leader's last renewal before it takes the Lease over: the takeover time after a leader dies (manager.Options.LeaseDuration)")
	fs.DurationVar(&c.RenewDeadline, "leader-election-renew-deadline", 10*time.Second, "how long the leader retries to renew before it gives up leading and stops (manager.Options.RenewDeadline); less than the lease duration")
	fs.DurationVar(&c.RetryPeriod, "leader-election-retry-period", 2*time.Second, "how often the replicas try to take or renew the Lease (manager.Options.RetryPeriod)")
	fs.BoolVar(&c.Warmup, "warmup", false, "with -leader-elect: a standby starts its sources and fills its queue before it leads (controller.Options.EnableWarmup), so that it starts work at once when it takes over; its keys' queue wait counts from the takeover")
	err := c.Parse(fs, args, func(bad func(format string, a ...any)) {
		if !c.LeaderElect {
			if c.Warmup {
				bad("-warmup needs -leader-elect: without leader election the controller starts at once and has no standby to warm up")
			}
			return
		}
		if c.Kubeconfig == "" {
			bad("-leader-elect needs -kubeconfig: the embedded cluster serves ConfigMaps only, not the coordination.k8s.io Leases an election takes")
		}
		if c.LeaderElectionID == "" {
			bad("-leader-election-id is empty: name the Lease the replicas share")
		}
		// client-go's leaderelection.NewLeaderElector refuses these at
		// the start; said here with the flags' names.
		if c.RetryPeriod <= 0 {
			bad("-leader-election-retry-period is %v: use a positive duration", c.RetryPeriod)
		}
		if c.RenewDeadline <= time.Duration(1.2*float64(c.RetryPeriod)) {
			bad("-leader-election-renew-deadline is %v: it must be more than 1.2 × -leader-election-retry-period (%v)", c.RenewDeadline, c.RetryPeriod)
		}
		if c.LeaseDuration <= c.RenewDeadline {
			bad("-leader-election-lease-duration is %v: it must be more than -leader-election-renew-deadline (%v)", c.LeaseDuration, c.RenewDeadline)
		}
	})
	return c, err
}
