package otelqueue

// WithWorkers sets the number of workers reported as `workqueue.workers` for a
// queue that no Runner works (a Runner reports its own count, which takes
// precedence). Give the number of goroutines that call Get on the queue,
// such as controller-runtime's MaxConcurrentReconciles, so that utilization
// (busy seconds per second from the work-duration histogram's sum, over the
// workers) can be computed. n must be at least 1; Instrument reports an
// error otherwise.
func WithWorkers(n int) Option {
	return optionFunc(func(c *config) { c.workers, c.workersSet = n, true })
}
