package scheduler

// ShutDown makes the queue ignore every further add. Keys already ready are
// still handed out by Get until none is left (none at all with
// Config.StopOnShutDown); then Get reports shutdown.
// Delayed keys (AddAfter, AddRateLimited, debounce) are dropped, as client-go
// drops them; a key added while it was processed, with no delay, still runs
// once more after its Done. ShutDown does not wait for runs in flight.
func (s *Scheduler[K]) ShutDown() {
	s.mu.Lock()
	s.drain = false
	s.shutDownLocked()
	s.drained.Broadcast()
	s.mu.Unlock()
	s.wg.Wait()
}

// ShutDownWithDrain is ShutDown that then waits until every run in flight is
// Done, as client-go's does. Workers must call Done for every key, or it
// blocks forever; a later ShutDown stops the wait.
func (s *Scheduler[K]) ShutDownWithDrain() {
	s.mu.Lock()
	s.drain = true
	s.shutDownLocked()
	for s.inflight.n > 0 && s.drain {
		s.drained.Wait()
	}
	s.mu.Unlock()
	s.wg.Wait()
}

// shutDownLocked shuts the queue down unless it already is (stopping the
// delay loop and dropping the delayed keys), then wakes every blocked Get.
func (s *Scheduler[K]) shutDownLocked() {
	if !s.shuttingDown {
		s.shuttingDown = true
		close(s.stop)
		for len(s.delayed) > 0 {
			s.forgetLocked(s.delayed.remove(len(s.delayed) - 1))
		}
	}
	s.cond.Broadcast()
}

// ShuttingDown reports whether ShutDown or ShutDownWithDrain was called.
func (s *Scheduler[K]) ShuttingDown() bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.shuttingDown
}
