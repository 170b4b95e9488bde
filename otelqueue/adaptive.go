package otelqueue

import (
	"errors"
	"fmt"
	"log/slog"

	"time"

	"github.com/otelqueue/otelqueue/bottleneck"
)

// minAdaptiveInterval is the shortest AdaptiveWorkers.Interval.
const minAdaptiveInterval = 100 * time.Millisecond

// Defaults of AdaptiveWorkers.
const (
	// defaultAdaptiveInterval is how often an adaptive pool decides.
	defaultAdaptiveInterval = 5 * time.Second
	// defaultWaitObjective is the queue wait (the 90th percentile of the
	// keys handed out in an interval, or the oldest key still waiting)
	// above which an adaptive pool grows whenever its workers are busy.
	defaultWaitObjective = time.Second
)

// AdaptiveWorkers makes the number of keys a queue hands out at once (its
// workers) follow the load: it grows when keys arrive faster than the
// workers can take them, shrinks when they idle, and shrinks, rather than
// grows, when what limits the reconciles is not the workers: the client's
// rate limiter, the API server's 429s, a shared resource that makes each
// reconcile slower as more run at once, or the process's own CPU (read
// with package procstat, on the real clock). It classifies with package
// bottleneck's table, and never grows against a class that forbids more
// workers. docs/tuning.md ("Adaptive workers") describes the rule and how
// to read its decisions.
//
// Experimental: the rule meets its targets in seeded simulations of a few
// loads (docs/tuning.md says which, and what they do not show), and may
// change in a minor release as real controllers show where it errs; the
// option's fields and inspect.Pool stay.
//
// It is an option of NewRunner, where the Runner's worker count is the
// starting count, the Runner starts as many goroutines as the pool's count
// (more as it grows, up to Max), and the pool goes back to that count when
// the queue's instrumentation stops, and of Instrument (so
// of package controllerruntime's New and NewQueue), where it gates the
// goroutines that call Get, such as controller-runtime's
// MaxConcurrentReconciles, which is then the ceiling (see WithWorkers).
// Either way it limits the queue through scheduler.Scheduler.SetMaxInFlight
// and decides on the queue's instrumentation: the queue must be
// instrumented (Instrument), and a queue has at most one adaptive pool.
// With WithClientTime the pool also reads where the attempts' time went in
// clients instrumented with package kubeclient: the waits for the client's
// rate limiter and the API server's Retry-After, measured, which make the
// client-rate-limit and server-throttling reasons. Without it the pool
// sees only the work time, and takes a limit in a client for a latency
// gradient (it still comes down to what is served, by halves).
//
// The zero values of the optional fields select the defaults.
type AdaptiveWorkers struct {
	// Min and Max bound the count: 1 <= Min <= Max.
	Min, Max int
	// Start is the count to start with, within [Min, Max], for Instrument
	// (Min when 0). A Runner starts at its worker count: leave Start 0, or
	// equal to it.
	Start int
	// Interval is the time between decisions (5 s when 0), at
	// least 100 ms.
	// A change waits at least two intervals after the previous one.
	Interval time.Duration
	// WaitObjective is the queue wait that, with the workers busy, makes the
	// pool grow even when its estimate of the demand says it has enough
	// (1 s when 0).
	WaitObjective time.Duration
	// Logger receives a line for every change (slog.Default() when nil;
	// for a Runner, its WithLogger).
	Logger *slog.Logger
}

// WithAdaptiveWorkers returns AdaptiveWorkers between min and max with the
// defaults, for NewRunner and Instrument.
func WithAdaptiveWorkers(min, max int) AdaptiveWorkers {
	return AdaptiveWorkers{Min: min, Max: max}
}

func (a AdaptiveWorkers) apply(c *config)             { c.adaptive = &a }
func (a AdaptiveWorkers) applyRunner(c *runnerConfig) { c.adaptive = &a }

var (
	_ Option       = AdaptiveWorkers{}
	_ RunnerOption = AdaptiveWorkers{}
)

// check reports what cannot be used as given and fills in the defaults.
func (a *AdaptiveWorkers) check() error {
	var errs []error
	if a.Min < 1 {
		errs = append(errs, fmt.Errorf("otelqueue: AdaptiveWorkers needs Min of at least 1, got %d", a.Min))
	}
	if a.Max < a.Min {
		errs = append(errs, fmt.Errorf("otelqueue: AdaptiveWorkers needs Max of at least Min (%d), got %d", a.Min, a.Max))
	}
	if a.Start != 0 && (a.Start < a.Min || a.Start > a.Max) {
		errs = append(errs, fmt.Errorf("otelqueue: AdaptiveWorkers.Start %d is outside [Min, Max] = [%d, %d]", a.Start, a.Min, a.Max))
	}
	if a.Interval < 0 {
		errs = append(errs, fmt.Errorf("otelqueue: AdaptiveWorkers.Interval must not be negative, got %v: leave it 0 for %v", a.Interval, defaultAdaptiveInterval))
	} else if a.Interval > 0 && a.Interval < minAdaptiveInterval {
		errs = append(errs, fmt.Errorf("otelqueue: AdaptiveWorkers.Interval %v is under %v: a window that short holds no reconciles to decide on, and its ticker would burn a core; leave it 0 for %v", a.Interval, minAdaptiveInterval, defaultAdaptiveInterval))
	}
	if a.WaitObjective < 0 {
		errs = append(errs, fmt.Errorf("otelqueue: AdaptiveWorkers.WaitObjective must not be negative, got %v: leave it 0 for %v", a.WaitObjective, defaultWaitObjective))
	}
	if a.Interval == 0 {
		a.Interval = defaultAdaptiveInterval
	}
	if a.WaitObjective == 0 {
		a.WaitObjective = defaultWaitObjective
	}
	return errors.Join(errs...)
}

// poolReason is why an adaptive pool changed its count (inspect.Pool.Reason,
// the "reason" of its log lines and span events, the reason attribute of
// workqueue.workers.changes): one of the reason constants, which
// inspect.Pool's documentation lists.
type poolReason string

// The reasons of an adaptive pool's changes.
const (
	// reasonDemand: the arrivals and the backlog need more workers than
	// the limit (the square-root staffing estimate, docs/tuning.md).
	reasonDemand poolReason = "demand"
	// reasonWait: the queue wait is above the objective with the workers
	// busy.
	reasonWait poolReason = "wait"
	// reasonLowUtilization: the demand needs well under the limit, two
	// intervals in a row.
	reasonLowUtilization poolReason = "low-utilization"
	// reasonClientRateLimit, reasonServerThrottling, reasonLatencyGradient:
	// more reconciles run at once than the downstream can serve, and the
	// time the others lose goes to the client's rate limiter, to the API
	// server's Retry-After, or to each reconcile taking longer than it does
	// with fewer at once.
	reasonClientRateLimit             = poolReason(bottleneck.ClientRateLimit)
	reasonServerThrottling            = poolReason(bottleneck.ServerThrottling)
	reasonLatencyGradient  poolReason = "latency-gradient"
	// reasonCPU: the process uses the CPU it has (the table's cpu class),
	// and more reconciles run at once than the CPU serves at no-load
	// speed: the count comes down to the CPU's, and never grows while the
	// class holds.
	reasonCPU = poolReason(bottleneck.CPU)
	// reasonProbe: a step above the ceiling a downstream limit set, to see
	// whether the limit is still there (the ceiling's hold ran out, or the
	// signs of the limit went away).
	reasonProbe poolReason = "probe"
	// reasonSlowerForAll: after a shrink for a latency gradient, the work
	// took as long as before: the downstream got slower for everyone, not
	// from this queue's concurrency; the ceiling is lifted.
	reasonSlowerForAll poolReason = "slower-for-all"
	// reasonUninstrumented: the queue's instrumentation stopped, and the
	// pool, blind, went back to the Runner's worker count.
	reasonUninstrumented poolReason = "uninstrumented"
)

// reasons are the reason constants, for the attribute sets of
// `workqueue.workers.changes`.
var reasons = []poolReason{reasonDemand, reasonWait, reasonLowUtilization, reasonClientRateLimit,
	reasonServerThrottling, reasonLatencyGradient, reasonCPU, reasonProbe, reasonSlowerForAll, reasonUninstrumented}
