package scheduler

import (
	"sync"
	"time"
)

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
}

// statsCell holds the numbers behind Stats. Queue operations publish into it
// at the end of their critical section; Stats reads it under its own small
// mutex, which is held only for a handful of stores, so Stats never waits
// for the queue lock and always sees one consistent state. A mutex costs one
// atomic pair per operation, fewer than updating each number atomically
// inside a seqlock would.
type statsCell struct {
	mu sync.Mutex
	v  statsValues
}

type statsValues struct {
	depth, delayed, held, inFlight int
	adds, retries, coalesced       uint64
	// Times in nanoseconds since the scheduler's base time; valid only when
	// timed is set and the matching gauge is positive.
	oldestReady, oldestStart, startSum int64
	timed                              bool
}

func (c *statsCell) load() statsValues {
	c.mu.Lock()
	v := c.v
	c.mu.Unlock()
	return v
}

// snapshot turns stored values into a Stats at time now (ns since base).
func (v *statsValues) snapshot(now func() int64) Stats {
	st := Stats{
		Depth:     v.depth,
		Delayed:   v.delayed,
		Held:      v.held,
		InFlight:  v.inFlight,
		Adds:      v.adds,
		Retries:   v.retries,
		Coalesced: v.coalesced,
	}
	if !v.timed || (v.depth == 0 && v.inFlight == 0) {
		return st
	}
	t := now()
	if v.depth > 0 {
		st.OldestPending = nonNegative(t - v.oldestReady)
	}
	if v.inFlight > 0 {
		st.LongestRunning = nonNegative(t - v.oldestStart)
		st.UnfinishedWork = nonNegative(int64(v.inFlight)*t - v.startSum)
	}
	return st
}

func nonNegative(d int64) time.Duration {
	if d < 0 {
		return 0
	}
	return time.Duration(d)
}

// Stats returns a consistent snapshot of the queue's numbers. It does not
// take the queue lock (except once, at the first call on an unnamed queue
// with no Observer, which until then publishes nothing), and reads the clock
// only to compute the ages.
func (s *Scheduler[K]) Stats() Stats {
	if !s.statsOn.Load() {
		// The first call of an unnamed queue: from now on operations
		// publish; this once, publish what is there under the queue lock.
		s.mu.Lock()
		s.statsOn.Store(true)
		s.publishLocked()
		s.mu.Unlock()
	}
	v := s.stats.load()
	return v.snapshot(s.now)
}

// publishLocked copies the queue's numbers into the stats cell.
func (s *Scheduler[K]) publishLocked() {
	if !s.statsOn.Load() {
		return
	}
	c := &s.stats
	c.mu.Lock()
	v := &c.v
	v.depth = s.ready.len()
	v.delayed = len(s.delayed)
	v.held = s.held
	v.inFlight = s.inflight.n
	v.adds, v.retries, v.coalesced = s.adds, s.retries, s.coalesced
	v.timed = s.timed
	if s.timed {
		if e := s.ready.oldest(); e != nil {
			v.oldestReady = e.readySince()
		}
		if h := s.inflight.head; h != nil {
			v.oldestStart = h.started
		}
		v.startSum = s.inflight.startSum
	}
	c.mu.Unlock()
}
