package scheduler

import (
	"context"
	"time"
)

// ProcessingContext returns the context key is being processed in (the
// Item.Context of its run in flight), and false when key is not in flight.
// It lets code that receives only the key from a plain Get, such as
// controller-runtime's controller, find the span of the run.
func (s *Scheduler[K]) ProcessingContext(key K) (context.Context, bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	e, ok := s.entries[key]
	if !ok || !e.processing || e.running().ctx == nil {
		return nil, false
	}
	return e.running().ctx, true
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
	var wall time.Time
	obs := s.obs
	switch {
	case obs != nil && s.wallClock:
		wall = s.clock.Now() // see get
		now = int64(wall.Sub(s.base))
	case s.timed || (e.pending && e.readyAt != 0):
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
	ctx, started := p.ctx, p.started
	s.freeProc(p)
	s.publishLocked()
	s.mu.Unlock()
	if signal {
		s.cond.Signal()
	}
	if obs != nil && ctx != nil {
		if wall.IsZero() {
			wall = s.at(now)
		}
		obs.Done(ctx, key, wall.Add(time.Duration(started-now)), wall)
	}
}
