package otelqueue

import (
	"k8s.io/utils/clock"

	"github.com/otelqueue/otelqueue/procstat"
)

// Bindings returns the number of schedulers with a binding, for the test
// that checks the bindings do not keep schedulers alive.
func Bindings() int {
	n := 0
	bindings.Range(func(any, any) bool { n++; return true })
	return n
}

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
	inspectables.mu.Lock()
	defer inspectables.mu.Unlock()
	return len(inspectables.list)
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
