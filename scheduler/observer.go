package scheduler

import (
	"context"
	"sync/atomic"
	"time"

	"github.com/otelqueue/otelqueue/internal/nilcheck"
	"github.com/otelqueue/otelqueue/internal/schedhooks"
)

// Observer is the seam through which instrumentation sees each item's life
// without the scheduler knowing about metrics or spans. Package otelqueue
// provides the OpenTelemetry implementation; install one with
// [Scheduler.SetObserver].
//
// An Observer may also have a method NeedsWallClock() bool, as an
// http.ResponseWriter may also be an http.Flusher; the scheduler calls it at
// SetObserver. An Observer that uses only durations, not span timestamps,
// returns false: the scheduler then reads the cheaper monotonic clock only,
// and the times it reports are offsets from the wall clock read at the
// scheduler's creation: right as durations, but drifting from the wall
// clock as it is adjusted. An Observer without the method, or whose method
// returns true, gets wall-clock times: the scheduler reads the wall clock
// once per item, at the dequeue, and gives every time of the item (enqueue,
// ready, dequeue, end) as that reading plus or minus the monotonic time
// between them, as OpenTelemetry SDKs anchor the spans of one trace to one
// clock reading.
//
// An Observer may also have the methods ObservesChanges() bool and
// ChangeDone(ctx context.Context, key K, changed, ended time.Time). When
// ObservesChanges, called at SetObserver, returns true, the scheduler keeps
// each key's changes (an event's add opens one; the run that ends it with
// no failure closes it; a failure hands it to the retry) and calls
// ChangeDone, just before Done, for a run that closed one: changed is when
// the change was opened, on the clock of the run's times; ended is Done's.
// The time between is how long after a change the controller had acted on
// it, retries and backoffs included (package otelqueue's
// workqueue.change.duration).
//
// An Observer may also have the method NextRun(ctx context.Context, key K,
// ended, next time.Time, trigger Trigger): for a run whose key is pending
// when it ends (a requeue, a backoff, an add while it ran), the scheduler
// calls it first, with when the key runs next (ended itself when it is
// ready at once) and for what (package otelqueue puts them on the
// attempt's "reconcile" span).
//
// The scheduler calls the methods outside its lock, in the goroutine of the
// worker that called Get, GetContext or Done. They must be safe for
// concurrent use and should be fast: they run once per item.
type Observer[K comparable] interface {
	// Dequeued is called once for every item handed to a worker, after the
	// item left the queue and before Get or GetContext returns. ctx is the
	// context given to GetContext (context.Background for Get). The context it
	// returns is the one the item is processed in: it is available as
	// Item.Context and is passed back to Done. It must not return nil, and
	// must not keep item after it returns: the scheduler reuses it.
	Dequeued(ctx context.Context, item *Item[K]) context.Context

	// Done is called once for every item handed out, when the worker calls
	// Done for its key, with the context Dequeued returned and the times the
	// work started (Item.DequeuedAt) and ended. ended is started plus the
	// time elapsed on the monotonic clock, so that the duration is right
	// even if the wall clock is stepped meanwhile. If Done for the key is
	// called (from another goroutine) before Dequeued has returned, Done is
	// called by the worker once Dequeued returns.
	Done(ctx context.Context, key K, started, ended time.Time)
}

// wallClockObserver is an Observer with the optional NeedsWallClock method
// (see Observer).
type wallClockObserver interface {
	NeedsWallClock() bool
}

// SetObserver installs obs (nil, or a typed nil, removes it). Install it
// before the queue is used: keys added earlier carry no times when the queue
// was unnamed. With an Observer installed the queue reads the clock on every
// Add, Get and Done.
func (s *Scheduler[K]) SetObserver(obs Observer[K]) {
	if nilcheck.IsNil(obs) {
		obs = nil
	}
	s.mu.Lock()
	s.setObserverLocked(obs)
	s.mu.Unlock()
}

// sameObserver reports a == b, and false where comparing them would panic
// (two values of one uncomparable dynamic type).
func sameObserver[K comparable](a, b Observer[K]) (same bool) {
	defer func() {
		if recover() != nil {
			same = false
		}
	}()
	return a == b
}

// setObserverLocked installs obs and sets the clock reads it needs.
func (s *Scheduler[K]) setObserverLocked(obs Observer[K]) {
	s.obs = obs
	s.timed = s.name != "" || obs != nil
	s.wallClock = obs != nil
	if w, ok := obs.(wallClockObserver); ok {
		s.wallClock = w.NeedsWallClock()
	}
	s.changes = observesChanges(obs)
	s.durations = nil
	// An Observer that keeps changes needs the Observer's path: ChangeDone
	// is made from Done's report.
	if d, ok := obs.(schedhooks.DurationObserver); ok && !s.changes && d.DurationsOnly() {
		s.durations = d
	}
}

// measureLocked tells d, the Observer installed, of the run p of e just
// taken, by its queue wait alone (see schedhooks.DurationObserver), and
// unlocks. The run's context is ctx, the worker's. It returns the key, and
// fills *it whole when it is not nil.
func (s *Scheduler[K]) measureLocked(ctx context.Context, d schedhooks.DurationObserver, e *entry[K], p *proc[K], it *Item[K]) K {
	key := e.key
	w := schedhooks.Wait{
		// Item.ReadyAt is the enqueue time for an immediate add.
		Wait:     time.Duration(p.started - max(e.readyAt, e.enqueued)),
		Priority: e.priority(),
		Reason:   uint8(e.reason),
	}
	p.ctx, p.measured = ctx, true
	if it != nil {
		it.Key = key
		s.fillItem(it, e, p.started, time.Time{})
		it.ctx = ctx
	}
	s.resetRun(e)
	s.mu.Unlock()
	d.Waited(w)
	return key
}

// Observer returns the Observer installed with SetObserver, or nil.
func (s *Scheduler[K]) Observer() Observer[K] {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.obs
}

// observeLocked hands the item just taken to the Observer and unlocks. The
// Item the Observer sees lives with the proc p (it must not keep it), so that
// neither path of get allocates one; the context Dequeued returns is
// published in p without taking the lock again (see proc). It returns the
// key, and fills *it whole, with that context, when it is not nil.
func (s *Scheduler[K]) observeLocked(ctx context.Context, obs Observer[K], e *entry[K], p *proc[K], wall time.Time, it *Item[K]) K {
	if p.o == nil {
		p.o = new(procObs[K])
	}
	itp := &p.o.item
	itp.Key = e.key
	s.fillItem(itp, e, p.started, wall)
	p.observed = true
	p.state = procObserving // under the lock, before this worker's CAS (see proc)
	s.resetRun(e)
	s.mu.Unlock()

	ctx = obs.Dequeued(ctx, itp)
	p.ctx = ctx
	key := itp.Key
	if it != nil {
		*it = *itp
		it.ctx = ctx
	}
	// From here a Done may recycle p: nothing of it is read after.
	if !atomic.CompareAndSwapUint32(&p.state, procObserving, procReady) {
		// Done came while Dequeued ran (procDoneEarly): it left p to this
		// worker, with the time it ended; report it as Done would have.
		r := p.o.done
		r.obs, r.ctx, r.started = obs, ctx, itp.DequeuedAt
		r.send(key)
	}
	return key
}
