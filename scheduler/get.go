package scheduler

import (
	"context"
	"time"

	"go.opentelemetry.io/otel/trace"
)

// Len returns the number of keys ready and waiting for a worker, as
// client-go's Len does. Like client-go's, it is for information only.
func (s *Scheduler[K]) Len() int {
	s.mu.Lock()
	if len(s.delayed) > 0 {
		s.promoteLocked(s.now())
	}
	n := s.ready.len()
	s.mu.Unlock()
	return n
}

// Get blocks until a key is ready and returns it, or returns shutdown=true
// once the queue is shut down and no ready key is left (at once with
// Config.StopOnShutDown). Call Done with the key when its processing ends.
func (s *Scheduler[K]) Get() (key K, shutdown bool) {
	key, err := s.get(context.Background(), nil)
	return key, err != nil
}

// GetWithPriority is Get that also returns the priority of the key's run
// (see AddOptions.Priority), as controller-runtime's priority queue does.
func (s *Scheduler[K]) GetWithPriority() (key K, priority int, shutdown bool) {
	var it Item[K]
	if _, err := s.get(context.Background(), &it); err != nil {
		return key, 0, true
	}
	return it.Key, it.Priority, false
}

// GetContext is Get for workers that want the whole Item: it blocks until a
// key is ready, ctx is done (it returns ctx.Err()), or the queue is shut down
// with no ready key left, or at all with Config.StopOnShutDown (it returns
// ErrShutDown). A ready key is handed out even when ctx is already done, so
// GetContext with a done ctx never blocks. Process the key in
// item.Context() and call Done with item.Key when finished.
func (s *Scheduler[K]) GetContext(ctx context.Context) (Item[K], error) {
	var it Item[K]
	_, err := s.get(ctx, &it)
	return it, err
}

// get waits for a ready key, hands it out (to the Observer first, if one
// is installed) and returns it. Given an Item (it not nil), it fills that
// whole, its context included; Get gives none, so that it neither zeroes
// nor copies an Item (a few hundred bytes) on every call.
func (s *Scheduler[K]) get(ctx context.Context, it *Item[K]) (key K, err error) {
	s.mu.Lock()
	if err := s.waitReadyLocked(ctx); err != nil {
		s.mu.Unlock()
		return key, err
	}
	e := s.ready.pop()
	e.place = nowhere
	e.pending = false
	e.processing = true

	p := s.newProc()
	p.timed, p.trigger = s.timed, e.trigger
	if x := e.extrasOrNil(); x != nil && x.source != "" {
		p.source = x.source // cleared by freeProc
	}
	if s.changes {
		takeChange(e, p)
	} else {
		p.changeOpen = false
	}
	var wall time.Time // the clock's time at the dequeue, when an Observer needs it
	obs := s.obs
	if obs != nil && s.wallClock {
		// Observers turn the times into span timestamps, so they are taken
		// relative to a fresh wall-clock reading: a wall clock stepped since
		// New does not shift them against spans timed by time.Now.
		wall = s.clock.Now()
		p.started = int64(wall.Sub(s.base))
	} else if s.timed {
		p.started = s.now()
	}
	s.inflight.push(p)
	e.ensureSide().proc = p

	if obs != nil {
		if d := s.durations; d != nil {
			return s.measureLocked(ctx, d, e, p, it), nil
		}
		return s.observeLocked(ctx, obs, e, p, wall, it), nil
	}
	key = e.key
	if it != nil {
		it.Key = key
		s.fillItem(it, e, p.started, wall)
		it.ctx = ctx
	}
	s.resetRun(e)
	s.mu.Unlock()
	return key, nil
}

// waitReadyLocked waits until a key is ready, the queue is shut down with
// none left, or ctx is done.
func (s *Scheduler[K]) waitReadyLocked(ctx context.Context) error {
	var stop func() bool
	defer func() {
		if stop != nil {
			stop()
		}
	}()
	for {
		if s.shuttingDown && s.set.stopOnShutDown {
			return ErrShutDown
		}
		if len(s.delayed) > 0 {
			if now := s.now(); s.delayed[0].at <= now {
				s.promoteLocked(now)
			}
		}
		if s.ready.eligibleLen() > 0 && (s.maxInFlight == 0 || s.inflight.n < s.maxInFlight) {
			return nil
		}
		if s.shuttingDown {
			return ErrShutDown
		}
		if err := ctx.Err(); err != nil {
			return err
		}
		if stop == nil && ctx.Done() != nil {
			stop = context.AfterFunc(ctx, func() {
				s.mu.Lock()
				s.cond.Broadcast()
				s.mu.Unlock()
			})
		}
		s.cond.Wait()
	}
}

// fillItem copies the pending run of e into it. started is the dequeue time
// and wall, when not zero, the clock's reading at that instant.
func (s *Scheduler[K]) fillItem(it *Item[K], e *entry[K], started int64, wall time.Time) {
	it.Reason = e.reason
	it.Trigger = e.trigger
	it.Coalesced = int(e.coalesced)
	it.Priority = e.priority()
	if s.timed {
		if wall.IsZero() {
			wall = s.at(started)
		}
		it.DequeuedAt = wall
		it.EnqueuedAt = wall.Add(time.Duration(e.enqueued - started))
		if e.readyAt <= e.enqueued { // an immediate add: no second Add
			it.ReadyAt = it.EnqueuedAt
		} else {
			it.ReadyAt = wall.Add(time.Duration(e.readyAt - started))
		}
	}
	var ts trace.TraceState
	if x := e.extrasOrNil(); x != nil {
		ts = x.originState
		it.Links = x.links
		x.links = nil
		it.DroppedLinks = x.dropped
		it.PreviousAttempt = x.previous
		it.Requeues = x.requeues
		it.Source = x.source
	}
	it.Origin = e.origin().spanContext(ts)
}

// resetRun clears what belonged to the run just handed out.
func (s *Scheduler[K]) resetRun(e *entry[K]) {
	e.coalesced = 0
	e.prio, e.bigPrio = 0, false
	e.debounced = false
	if sd := e.side; sd != nil {
		sd.origin = spanRef{}
		if sd.extras != nil {
			*sd.extras = runExtras{}
		}
	}
}
