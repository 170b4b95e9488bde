package scheduler

import "time"

// Stats is a snapshot of a queue's numbers, for programs that use no metrics
// library and for the observable instruments of package otelqueue.
//
// Gauges (Depth, Delayed, InFlight and the ages) describe the queue at the
// moment of the snapshot; counters (Adds, Retries, Coalesced) count from the
// queue's creation. The ages are zero for a queue that reads no clock (see
// Config.Name).
type Stats struct {
	// Depth is the number of keys ready and waiting for a worker: client-go's
	// workqueue_depth.
	Depth int
	// Delayed is the number of keys waiting for a delay, a rate-limiter
	// backoff or a debounce window to pass.
	Delayed int
	// Held is the number of keys added again while a worker processes them;
	// each runs once more after its Done.
	Held int
	// InFlight is the number of keys handed to workers and not yet Done.
	InFlight int

	// Adds counts keys that became pending (client-go's workqueue_adds_total):
	// an add of a key that is already pending is counted in Coalesced instead.
	Adds uint64
	// Retries counts calls of AddAfter and AddRateLimited, as client-go's
	// workqueue_retries_total does.
	Retries uint64
	// DelayedAdds counts, of Retries, the adds with a delay the caller chose
	// (AddAfter, AddAfterContext, AddWithOptions with After and without
	// RateLimited): a reconcile's RequeueAfter, a recheck an event handler
	// schedules. They are no failures: Retries − DelayedAdds are the adds
	// through the rate limiter's backoff (AddRateLimited: a reconcile that
	// failed, or returned Result.Requeue).
	DelayedAdds uint64
	// Coalesced counts adds of a key that was already pending, merged into
	// its pending run.
	Coalesced uint64

	// OldestPending is how long the key at the head of the ready queue has
	// been ready and waiting for a worker: the congestion signal. Zero when
	// Depth is zero.
	OldestPending time.Duration
	// UnfinishedWork is the sum of how long every in-flight key has been
	// processed so far (client-go's workqueue_unfinished_work_seconds).
	UnfinishedWork time.Duration
	// LongestRunning is how long the longest-running in-flight key has been
	// processed (client-go's workqueue_longest_running_processor_seconds).
	LongestRunning time.Duration

	// Finished counts the runs that ended with Done: the reconciles
	// finished, whatever their outcome.
	Finished uint64
	// Busy is the total time keys have been processed, from their Get to
	// their Done, the runs in flight included (so Busy minus
	// UnfinishedWork is the time of the Finished runs). Its growth over an
	// interval, divided by the interval and by the worker count, is the
	// workers' utilization. A queue that reads no clock (no Observer, no
	// Config.Name) keeps no times: Busy stays zero.
	Busy time.Duration
}

// Stats returns a consistent snapshot of the queue's numbers, read under the
// queue lock: the operations publish nothing, so a queue pays for its
// numbers only when they are read (once per collection for otelqueue's
// instruments). Like Len, it first moves the delayed keys that are due to
// the ready queue. It reads the clock only when the queue holds delayed
// keys or, to compute the ages, in a timed queue with keys ready or in
// flight.
func (s *Scheduler[K]) Stats() Stats {
	s.mu.Lock()
	defer s.mu.Unlock()
	var now int64
	if len(s.delayed) > 0 {
		now = s.now()
		s.promoteLocked(now)
	}
	st := Stats{
		Depth:       s.ready.len(),
		Delayed:     len(s.delayed),
		Held:        s.held,
		InFlight:    s.inflight.n,
		Adds:        s.adds,
		Retries:     s.retries,
		DelayedAdds: s.delayedAdds,
		Coalesced:   s.coalesced,
		Finished:    s.finished,
		Busy:        time.Duration(s.busy),
	}
	if !s.timed || (st.Depth == 0 && st.InFlight == 0) {
		return st
	}
	if now == 0 {
		now = s.now()
	}
	if e := s.ready.oldest(); e != nil {
		st.OldestPending = nonNegative(now - e.readySince())
	}
	if h := s.inflight.head; h != nil {
		st.LongestRunning = nonNegative(now - h.started)
		st.UnfinishedWork = nonNegative(int64(st.InFlight)*now - s.inflight.startSum)
		st.Busy += st.UnfinishedWork
	}
	return st
}

// nonNegative returns d ns as a duration, or 0 when d is negative.
func nonNegative(d int64) time.Duration {
	if d < 0 {
		return 0
	}
	return time.Duration(d)
}

// DueWithin returns the number of delayed keys (Stats.Delayed) that become
// ready within d from now: the load the queue has already scheduled, such
// as keys that requeue after a delay (a polling controller's
// RequeueAfter), backoffs that end, debounce windows that close. A key
// added again while a worker processes it is not counted until its Done.
// It costs O(the keys counted) under the queue lock, and reads the clock
// only when the queue holds delayed keys.
func (s *Scheduler[K]) DueWithin(d time.Duration) int {
	s.mu.Lock()
	defer s.mu.Unlock()
	if len(s.delayed) == 0 || d < 0 {
		return 0
	}
	now := s.now()
	s.promoteLocked(now)
	return s.delayed.countUpTo(addSat(now, int64(d)))
}
