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
	s.mu.Lock()
	e, ok := s.entries[key]
	if !ok || !e.processing {
		s.mu.Unlock()
		return
	}
	p := e.s.proc
	e.s.proc = nil
	e.processing = false
	if p.prev != nil {
		p.prev.next = p.next
	} else {
		s.inflight.head = p.next
	}
	if p.next != nil {
		p.next.prev = p.prev
	} else {
		s.inflight.tail = p.prev
	}
	s.inflight.n--
	s.inflight.startSum -= p.started

	var now int64
	if s.timed || (e.pending && e.readyAt != 0) {
		now = s.now()
	}
	signal := false
	if e.pending {
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
			s.ready.push(e)
			signal = true
		}
	} else {
		s.forgetLocked(e)
	}
	if s.inflight.n == 0 && s.drain {
		s.drained.Broadcast()
	}
	// The times given to the Observer are anchored to the dequeue's: the
	// end is the dequeue time plus the monotonic time since, so that Done
	// reads no wall clock and a wall clock stepped while the key was
	// processed does not make the work look shorter or longer.
	obs := s.obs
	var started, ended time.Time
	var ctx context.Context
	if p.observed {
		started = p.o.item.DequeuedAt
		ended = started.Add(time.Duration(now - p.started))
		p.o.ended = ended // for the worker, if Dequeued still runs
		if !p.state.CompareAndSwap(procObserving, procDoneEarly) {
			ctx = p.ctx // procReady: Dequeued has returned
		} else {
			// Dequeued still runs (a Done from another goroutine than the
			// worker's): the worker reports this Done (see observeLocked)
			// and keeps p.
			obs, p = nil, nil
		}
	}
	if p != nil {
		s.freeProc(p)
	}
	s.mu.Unlock()
	if signal {
		s.cond.Signal()
	}
	if obs != nil && ctx != nil {
		obs.Done(ctx, key, started, ended)
	}
}
