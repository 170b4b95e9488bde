package otelqueue

import (
	"time"

	"k8s.io/utils/clock"

	"github.com/otelqueue/otelqueue/bottleneck"
	"github.com/otelqueue/otelqueue/procstat"
)

// OutcomeCounts are a RunnerStats' counts by outcome, for test literals.
type OutcomeCounts = [numOutcomes]uint64

// RunnerStatsOf returns the RunnerStats of workers and counts, for
// comparisons with Runner.Stats.
func RunnerStatsOf(workers int, counts OutcomeCounts) RunnerStats {
	return RunnerStats{Workers: workers, outcomes: counts}
}

// Inspectables is the number of Instrumentations an Inspector may show,
// those of dropped schedulers not yet pruned included.
func Inspectables() int {
	return len(live())
}

// SetSizerClock makes s read c's time instead of the real clock's: its
// readings' times, its spans and its ticker. Call it before s's first
// queue joins.
func SetSizerClock(s *Sizer, c clock.WithTicker) { s.clock = c }

// SizerHistory is the number of spans s keeps, and of readings.
func SizerHistory(s *Sizer) (spans, readings int) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return len(s.history), len(s.readings)
}

// TickSizer makes s take a reading now, as Start does every Interval.
func TickSizer(s *Sizer) { s.tick() }

// SetSizerProcess makes s read the process from read instead of
// procstat.Read: the CPU of a test on a fake clock, which the machine's
// load must not change.
func SetSizerProcess(s *Sizer, read func() procstat.Sample) { s.proc = read }

// The bounds the package keeps unexported, for the tests that check them.
const (
	DefaultInspectorLimit = defaultInspectorLimit
	MaxInspectorLimit     = maxInspectorLimit
	MaxDecisions          = maxDecisions
	MaxFailures           = maxFailures
	MaxFailureErrorLen    = maxFailureErrorLen
	MinBottleneckWindow   = minBottleneckWindow
	MaxPriorities         = maxPriorities
	PriorityOverflow      = priorityOverflow
)

// The adaptive pool's defaults, for the tests.
const (
	DefaultAdaptiveInterval = defaultAdaptiveInterval
	DefaultWaitObjective    = defaultWaitObjective
)

// APIServerOf returns the API round trips inst's queue reads (its adaptive
// pool, Sizer and Inspector): those of the clients instrumented with its
// MeterProvider.
func APIServerOf(inst *Instrumentation) bottleneck.APIServerCounters {
	return inst.b.server(time.Now())
}
