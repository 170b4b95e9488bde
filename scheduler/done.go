package scheduler

import (
	"context"
	"time"
)

// ProcessingContext returns the context key is being processed in (the
// context the Observer's Dequeued returned for its run in flight), and false
// when key is not in flight, when no Observer saw its run, or while Dequeued
// has not returned yet. It lets code that receives only the key from a plain Get, such as
// controller-runtime's controller, find the span of the run.
func (s *Scheduler[K]) ProcessingContext(key K) (context.Context, bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	e, ok := s.entries[key]
	if !ok || !e.processing {
		return nil, false
	}
	ctx := e.running().context()
	return ctx, ctx != nil
}

// Done marks the end of the processing of key. If key was added again
// meanwhile, it becomes pending again: ready at once, or when its delay ends.
// Done of a key that is not being processed does nothing.
func (s *Scheduler[K]) Done(key K) {
	// Every item passes here, so the steps taken on every Done are written
	// inline or small enough for the compiler to inline; only those for a
	// held or an observed run are calls. (Made calls, the common steps cost
	// a few per cent of an Add, Get and Done in bench/'s BenchmarkLifecycle.)
	s.mu.Lock()
	e, ok := s.entries[key]
	if !ok || !e.processing {
		s.mu.Unlock()
		return
	}
	p := s.endRunLocked(e)
	// The clock is read only in a timed queue, or to compare with the ready
	// time of a run added meanwhile.
	var now int64
	if s.timed || (e.pending && e.readyAt != 0) {
		now = s.now()
	}
	s.finished++
	if s.timed && p.timed {
		s.busy += max(0, now-p.started)
	}
	signal := false
	switch {
	case e.pending && e.place == nowhere:
		signal = s.startHeldRunLocked(e, now)
	case e.place == inReady:
		s.unlockLocked(e, now)
		signal = true
	case e.pending: // delayed (Config.OrderByAdd): nothing to do
	default:
		s.forgetLocked(e)
	}
	s.wakeDrainLocked()
	if s.maxInFlight > 0 && s.ready.eligibleLen() > 0 {
		signal = true // a worker held back by the limit may go on
	}
	var report doneReport[K]
	if p.observed {
		var next nextRun
		if e.pending {
			// The key runs again: at once (a run added while this one
			// ran) or after a delay (a requeue, a backoff).
			next = nextRun{at: max(e.readyAt, now), trigger: e.trigger, ok: true}
		}
		report = s.observedDoneLocked(p, now, next)
	} else {
		s.freeProc(p)
	}
	s.mu.Unlock()
	if signal {
		s.cond.Signal()
	}
	report.send(key)
}

// endRunLocked detaches the run in flight from e and from the list of runs
// in flight, and returns it.
func (s *Scheduler[K]) endRunLocked(e *entry[K]) *proc[K] {
	p := e.side.proc
	e.side.proc = nil
	e.processing = false
	s.inflight.remove(p)
	return p
}

// unlockLocked lets the ready run of e, which waited in its place for the
// run that just ended (Config.OrderByAdd), be handed out.
func (s *Scheduler[K]) unlockLocked(e *entry[K], now int64) {
	if e.readyAt < now {
		e.readyAt, e.reason = now, WaitHeld
	}
	s.ready.unlock(e)
}

// startHeldRunLocked starts the run of e that was held while e was
// processed, at now: ready at once, delayed until its ready time, or dropped
// at shutdown. It reports whether e became ready.
func (s *Scheduler[K]) startHeldRunLocked(e *entry[K], now int64) bool {
	s.held--
	switch {
	case e.readyAt > now && s.shuttingDown:
		// Its delay would end after the delay loop stopped: dropped,
		// as client-go drops delayed keys at shutdown.
		s.forgetLocked(e)
	case e.readyAt > now:
		s.delayLocked(e)
	default:
		if e.readyAt < now {
			e.readyAt, e.reason = now, WaitHeld
		}
		s.ready.push(e, s.nextOrder())
		return true
	}
	return false
}

// wakeDrainLocked wakes ShutDownWithDrain once the last run in flight is
// done.
func (s *Scheduler[K]) wakeDrainLocked() {
	if s.inflight.n == 0 && s.drain {
		s.drained.Broadcast()
	}
}

// observedDoneLocked returns the Observer.Done call that reports the end, at
// now, of p, a run an Observer saw, and recycles p. While the Observer's
// Dequeued still runs it leaves both to the worker and returns no call.
func (s *Scheduler[K]) observedDoneLocked(p *proc[K], now int64, next nextRun) doneReport[K] {
	// The times given to the Observer are anchored to the dequeue's: the
	// end is the dequeue time plus the monotonic time since, so that Done
	// reads no wall clock and a wall clock stepped while the key was
	// processed does not make the work look shorter or longer.
	started := p.o.item.DequeuedAt
	ended := started.Add(time.Duration(now - p.started))
	changed := s.closedChange(p, started)
	var nextAt time.Time
	if next.ok {
		nextAt = started.Add(time.Duration(next.at - p.started))
	}
	// For the worker, if Dequeued still runs.
	p.o.ended, p.o.changed, p.o.next, p.o.nextTrigger = ended, changed, nextAt, next.trigger
	if p.state.CompareAndSwap(procObserving, procDoneEarly) {
		// Dequeued still runs (a Done from another goroutine than the
		// worker's): the worker reports this Done (see observeLocked)
		// and keeps p.
		return doneReport[K]{}
	}
	// procReady: Dequeued has returned.
	r := doneReport[K]{obs: s.obs, ctx: p.ctx, started: started, ended: ended, changed: changed, next: nextAt, nextTrigger: next.trigger}
	s.freeProc(p)
	return r
}

// doneReport is the Observer.Done call that reports the end of a run, made
// once the queue lock is released; a nil obs or ctx means none.
type doneReport[K comparable] struct {
	obs                     Observer[K]
	ctx                     context.Context
	started, ended, changed time.Time // changed: the change the run closed (zero: none)
	next                    time.Time // when the key runs next (zero: not pending)
	nextTrigger             Trigger
}

// nextRun is when, and for what, a key runs again after a run's Done: ok
// when it is pending then.
type nextRun struct {
	at      int64
	trigger Trigger
	ok      bool
}

// send makes the call, if any, for key. The queue lock must not be held.
func (r *doneReport[K]) send(key K) {
	if r.obs != nil && r.ctx != nil {
		reportDone(r.obs, r.ctx, key, r.started, r.ended, r.changed, r.next, r.nextTrigger)
	}
}

// nextRunObserver is an Observer with the optional NextRun method (see
// Observer).
type nextRunObserver[K comparable] interface {
	NextRun(ctx context.Context, key K, ended, next time.Time, trigger Trigger)
}

// reportDone calls obs's NextRun when the key runs again (next not zero),
// its ChangeDone for a change closed (changed not zero), then its Done.
func reportDone[K comparable](obs Observer[K], ctx context.Context, key K, started, ended, changed, next time.Time, nextTrigger Trigger) {
	if !next.IsZero() {
		if n, ok := obs.(nextRunObserver[K]); ok {
			n.NextRun(ctx, key, ended, next, nextTrigger)
		}
	}
	if !changed.IsZero() {
		if c, ok := obs.(changeObserver[K]); ok {
			c.ChangeDone(ctx, key, changed, ended)
		}
	}
	obs.Done(ctx, key, started, ended)
}
