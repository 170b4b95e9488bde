package examplecluster

import (
	"fmt"
	"time"
)

// The bottleneck classes, and their thresholds: the same as
// example/prometheus/rules.yml's queue:workqueue_bottleneck:rate5m and
// queue-figures.sh (docs/tuning.md, "The bottleneck").
const (
	BottleneckServerThrottling = "server-throttling"
	BottleneckClientRateLimit  = "client-rate-limit"
	BottleneckErrors           = "errors"
	BottleneckWorkers          = "workers"
	BottleneckNone             = "none"

	// DownstreamShare is the share of the work time spent waiting on a
	// downstream limit (the client's rate limiter, the server's
	// Retry-After) from which that limit is the bottleneck.
	DownstreamShare = 0.25
	// RetriesShare is the share of the adds that were retries above which
	// errors are the bottleneck.
	RetriesShare = 0.5
)

// Split is where the workers' time went over a window: the work time and,
// of it, the time in an instrumented client (otelqueue.ClientStats).
type Split struct {
	Work, LimiterWait, RequestTime, RetryAfterWait time.Duration
	// Client says whether the reconciles used an instrumented client in
	// the window: without, the waits are unknown rather than zero.
	Client bool
}

// share returns d as a share of the work time.
func (s Split) share(d time.Duration) float64 {
	if s.Work <= 0 {
		return 0
	}
	return d.Seconds() / s.Work.Seconds()
}

// Own is the share of the work time outside the client: the reconcile's
// own work, at least 0.
func (s Split) Own() float64 {
	return max(0, 1-s.share(s.LimiterWait)-s.share(s.RequestTime)-s.share(s.RetryAfterWait))
}

// String is the split as shares of the work time.
func (s Split) String() string {
	if !s.Client {
		return "split=unknown (no instrumented client)"
	}
	return fmt.Sprintf("split=own %.2f limiter %.2f api %.2f retry-after %.2f",
		s.Own(), s.share(s.LimiterWait), s.share(s.RequestTime), s.share(s.RetryAfterWait))
}

// Bottleneck is what limits a queue over a window, with the figure that
// decided it.
type Bottleneck struct {
	Class string
	// Figure decided the class: the share for a downstream class, the
	// retries' share of the adds for errors, the Little's-law worker count
	// for workers, the utilization for none.
	Figure float64
}

// Classify returns the bottleneck: the first class that holds of
// server-throttling (Retry-After waits ≥ 25% of the work time),
// client-rate-limit (rate-limiter waits ≥ 25%), errors (retries > half the
// adds), workers (the Little's-law count above the configured workers) and
// none.
func Classify(s Split, adds, retries uint64, workers, littlesLaw int, utilization float64) Bottleneck {
	if s.Client && s.Work > 0 {
		if f := s.share(s.RetryAfterWait); f >= DownstreamShare {
			return Bottleneck{BottleneckServerThrottling, f}
		}
		if f := s.share(s.LimiterWait); f >= DownstreamShare {
			return Bottleneck{BottleneckClientRateLimit, f}
		}
	}
	if adds > 0 {
		if f := float64(retries) / float64(adds); f > RetriesShare {
			return Bottleneck{BottleneckErrors, f}
		}
	}
	if littlesLaw > workers {
		return Bottleneck{BottleneckWorkers, float64(littlesLaw)}
	}
	return Bottleneck{BottleneckNone, utilization}
}

// Recommend returns the worker count to run with: the Little's-law count
// for the classes workers and none, and never more than the configured
// count for the others.
func (b Bottleneck) Recommend(workers, littlesLaw int) int {
	if b.Class == BottleneckWorkers || b.Class == BottleneckNone {
		return littlesLaw
	}
	return min(littlesLaw, workers)
}

// String is "bottleneck=<class> (<the figure> <the threshold>)" with what to
// change.
func (b Bottleneck) String() string {
	switch b.Class {
	case BottleneckServerThrottling:
		return fmt.Sprintf("bottleneck=%s (retry-after %.2f of work time ≥ %.2f: the API server's 429s; its API Priority and Fairness share, not workers)", b.Class, b.Figure, DownstreamShare)
	case BottleneckClientRateLimit:
		return fmt.Sprintf("bottleneck=%s (limiter %.2f of work time ≥ %.2f: raise -kube-qps/-kube-burst, not workers)", b.Class, b.Figure, DownstreamShare)
	case BottleneckErrors:
		return fmt.Sprintf("bottleneck=%s (retries %.2f of adds > %.2f: fix the reconcile, not workers)", b.Class, b.Figure, RetriesShare)
	case BottleneckWorkers:
		return fmt.Sprintf("bottleneck=%s (Little's law %.0f > configured)", b.Class, b.Figure)
	}
	return fmt.Sprintf("bottleneck=%s (utilization %.2f)", b.Class, b.Figure)
}
