package otelqueue

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
