package otelqueue

import (
	"errors"
	"fmt"
	"log/slog"
	"time"

	"k8s.io/utils/clock"
)

// RunnerOption configures NewRunner.
type RunnerOption interface {
	applyRunner(*runnerConfig)
}

type runnerOptionFunc func(*runnerConfig)

func (f runnerOptionFunc) applyRunner(c *runnerConfig) { f(c) }

type runnerConfig struct {
	clock       clock.PassiveClock
	clockSet    bool
	logger      *slog.Logger
	logBurst    int
	logInterval time.Duration
	adaptive    *AdaptiveWorkers
}

func newRunnerConfig(opts []RunnerOption) runnerConfig {
	c := runnerConfig{logBurst: DefaultLogBurst, logInterval: DefaultLogInterval}
	for _, o := range opts {
		if o != nil {
			o.applyRunner(&c)
		}
	}
	return c
}

// validate reports options that cannot be used as given, and fills in the
// defaults.
func (c *runnerConfig) validate() error {
	var errs []error
	if isNil(c.clock) {
		if c.clockSet {
			errs = append(errs, errors.New("otelqueue: WithRunnerClock needs a clock, got nil: leave the option out for the real clock"))
		}
		c.clock = clock.RealClock{}
	}
	if c.logBurst < 1 {
		errs = append(errs, fmt.Errorf("otelqueue: WithLogRateLimit needs a burst of at least 1 line, got %d: to log nothing, pass WithLogger(slog.New(slog.DiscardHandler))", c.logBurst))
	}
	if c.logInterval < 0 {
		errs = append(errs, fmt.Errorf("otelqueue: WithLogRateLimit needs an interval of 0 (no limit) or more, got %v", c.logInterval))
	}
	if c.adaptive != nil {
		errs = append(errs, c.adaptive.check())
	}
	return errors.Join(errs...)
}

// WithRunnerClock sets the clock the Runner measures its busy time
// (RunnerStats.Busy) and its log rate limit (WithLogRateLimit) with; the real clock by default. Tests pass the fake
// clock of k8s.io/utils/clock/testing, usually the one of the scheduler's
// Config.
func WithRunnerClock(c clock.PassiveClock) RunnerOption {
	return runnerOptionFunc(func(rc *runnerConfig) { rc.clock, rc.clockSet = c, true })
}

// WithLogger sets the logger the Runner reports failed reconciles to (see
// Runner.Run) and that LoggerFromContext returns to its reconciler;
// slog.Default() when not given or nil (read at each use, so a later
// slog.SetDefault applies). To log nothing, pass
// slog.New(slog.DiscardHandler).
func WithLogger(l *slog.Logger) RunnerOption {
	return runnerOptionFunc(func(c *runnerConfig) { c.logger = l })
}

// WithLogRateLimit bounds the Runner's "Reconciler error" lines: up to burst
// at once, then one every interval (DefaultLogBurst and DefaultLogInterval
// by default: the first 10, then one a second). The first line after some
// were dropped has a "suppressed" attribute with their count. An interval
// of 0 logs every error. burst must be at least 1 and interval not
// negative; NewRunner reports an error otherwise.
func WithLogRateLimit(burst int, interval time.Duration) RunnerOption {
	return runnerOptionFunc(func(c *runnerConfig) { c.logBurst, c.logInterval = burst, interval })
}
