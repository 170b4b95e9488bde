package scheduler

import (
	"context"
	"sync/atomic"
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
	if p.measured {
		s.measuredDoneLocked(key, p, e, now, signal)
		return
	}
	if !p.observed {
		// No Observer saw the run: nothing to report, and no report to
		// make (its zero value alone costs a Done a few per cent).
		s.freeProc(p)
		s.mu.Unlock()
		if signal {
			s.cond.Signal()
		}
		return
	}
	var next nextRun
	if e.pending {
		// The key runs again: at once (a run added while this one ran) or
		// after a delay (a requeue, a backoff).
		next = nextRun{at: max(e.readyAt, now), trigger: e.trigger, ok: true}
	}
	report := s.observedDoneLocked(p, now, next)
	s.mu.Unlock()
	if signal {
		s.cond.Signal()
	}
	report.send(key)
}

// measuredDoneLocked reports the end, at now, of p, a run of e a
// DurationObserver was told of, recycles p and unlocks, then signals a
// waiting worker if signal. The DurationObserver installed gets Worked; an
// Observer that replaced it while the run was in flight gets Done (with
// NextRun, as in Done), from the run's start and context.
func (s *Scheduler[K]) measuredDoneLocked(key K, p *proc[K], e *entry[K], now int64, signal bool) {
	work := now - p.started
	d := s.durations
	var r doneReport[K]
	if d == nil && s.obs != nil {
		r = doneReport[K]{obs: s.obs, ctx: p.ctx, started: s.at(p.started), endNs: work}
		if e.pending {
			r.nextNs, r.hasNext, r.nextTrigger = max(e.readyAt, now)-p.started, true, e.trigger
		}
	}
	s.freeProc(p)
	s.mu.Unlock()
	if signal {
		s.cond.Signal()
	}
	if d != nil {
		d.Worked(time.Duration(work), s.at(now))
		return
	}
	r.send(key)
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
// now, of p, a run an Observer saw, with the change it closed and the key's
// next run, and recycles p. While the Observer's Dequeued still runs it
// leaves both to the worker and returns no call.
func (s *Scheduler[K]) observedDoneLocked(p *proc[K], now int64, next nextRun) doneReport[K] {
	// The times given to the Observer are anchored to the dequeue's: the
	// end is the dequeue time plus the monotonic time since, so that Done
	// reads no wall clock and a wall clock stepped while the key was
	// processed does not make the work look shorter or longer. The report
	// keeps them as offsets from it until it is sent.
	r := doneReport[K]{endNs: now - p.started}
	if s.changes && p.changeOpen && !p.failed {
		r.changeNs, r.hasChange = p.changeAt-p.started, true
	}
	if next.ok {
		r.nextNs, r.hasNext, r.nextTrigger = next.at-p.started, true, next.trigger
	}
	// Once procReady the state stays so (only the lock's holder recycles
	// p): the common Done, after Dequeued returned, reads it and pays for
	// no atomic write and no copy of the report.
	if atomic.LoadUint32(&p.state) != procReady {
		p.o.done = r // for the worker, if Dequeued still runs
		if atomic.CompareAndSwapUint32(&p.state, procObserving, procDoneEarly) {
			// Dequeued still runs (a Done from another goroutine than
			// the worker's): the worker reports this Done (see
			// observeLocked) and keeps p.
			return doneReport[K]{}
		}
	}
	// procReady: Dequeued has returned.
	r.obs, r.ctx, r.started = s.obs, p.ctx, p.o.item.DequeuedAt
	s.freeProc(p)
	return r
}

// doneReport is the Observer calls that report the end of a run, made once
// the queue lock is released; a nil obs or ctx means none. The times are
// offsets from started, the run's start (Item.DequeuedAt).
type doneReport[K comparable] struct {
	obs     Observer[K]
	ctx     context.Context
	started time.Time
	// endNs is the run's end; changeNs when the change it closed opened
	// (hasChange); nextNs when the key runs next, for nextTrigger
	// (hasNext).
	endNs, changeNs, nextNs int64
	hasChange, hasNext      bool
	nextTrigger             Trigger
}

// nextRun is when, and for what, a key runs again after a run's Done: ok
// when it is pending then.
type nextRun struct {
	at      int64
	trigger Trigger
	ok      bool
}

// nextRunObserver is an Observer with the optional NextRun method (see
// Observer).
type nextRunObserver[K comparable] interface {
	NextRun(ctx context.Context, key K, ended, next time.Time, trigger Trigger)
}

// send makes the calls, if any, for key: the Observer's NextRun when the
// key runs again, its ChangeDone for a change closed, then its Done. The
// queue lock must not be held.
func (r *doneReport[K]) send(key K) {
	if r.obs == nil || r.ctx == nil {
		return
	}
	ended := r.started.Add(time.Duration(r.endNs))
	if r.hasNext {
		if n, ok := r.obs.(nextRunObserver[K]); ok {
			n.NextRun(r.ctx, key, ended, r.started.Add(time.Duration(r.nextNs)), r.nextTrigger)
		}
	}
	if r.hasChange {
		if c, ok := r.obs.(changeObserver[K]); ok {
			c.ChangeDone(r.ctx, key, r.started.Add(time.Duration(r.changeNs)), ended)
		}
	}
	r.obs.Done(r.ctx, key, r.started, ended)
}
