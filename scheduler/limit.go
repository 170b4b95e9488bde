package scheduler

// SetMaxInFlight limits the keys handed out at once to n: Get and its
// variants wait, while n runs are in flight, for one of them to be Done.
// The keys beyond the limit stay ready, in their order and at their
// priority, and count in Len and Stats().Depth. n <= 0 removes the limit
// (the default). It may be called at any time, from any goroutine: raising
// the limit wakes the workers it lets through at once; lowering it below
// the runs in flight ends none of them, and no key is handed out until
// fewer than n are in flight.
//
// It gates a fixed set of worker goroutines, such as controller-runtime's
// MaxConcurrentReconciles, without touching them: an adaptive worker pool
// sets the limit and leaves the goroutines be.
func (s *Scheduler[K]) SetMaxInFlight(n int) {
	s.mu.Lock()
	old := s.maxInFlight
	s.maxInFlight = max(n, 0)
	raised := old > 0 && (s.maxInFlight == 0 || s.maxInFlight > old)
	s.mu.Unlock()
	if raised {
		s.cond.Broadcast()
	}
}

// MaxInFlight returns the limit SetMaxInFlight set, 0 for none.
func (s *Scheduler[K]) MaxInFlight() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.maxInFlight
}
