package otelqueue

import (
	"errors"

	"k8s.io/utils/clock"
)

// RunnerOption configures NewRunner.
type RunnerOption interface {
	applyRunner(*runnerConfig)
}

type runnerOptionFunc func(*runnerConfig)

func (f runnerOptionFunc) applyRunner(c *runnerConfig) { f(c) }

type runnerConfig struct {
	clock    clock.PassiveClock
	clockSet bool
}

func newRunnerConfig(opts []RunnerOption) runnerConfig {
	var c runnerConfig
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
	return errors.Join(errs...)
}

// WithRunnerClock sets the clock the Runner measures its busy time
// (RunnerStats.Busy) with; the real clock by default. Tests pass the fake
// clock of k8s.io/utils/clock/testing, usually the one of the scheduler's
// Config.
func WithRunnerClock(c clock.PassiveClock) RunnerOption {
	return runnerOptionFunc(func(rc *runnerConfig) { rc.clock, rc.clockSet = c, true })
}
