package scheduler

import (
	"context"
	"math"
	"time"

	"go.opentelemetry.io/otel/trace"
)

// Add marks key as needing processing, at once (or after the debounce
// window, see Config.Debounce). Adds after ShutDown are ignored.
func (s *Scheduler[K]) Add(key K) {
	s.enqueueRequeue(key, trace.SpanContext{}, 0, addPlain, TriggerAdd, "", 0, 0)
}

// AddContext is Add that also remembers the span context of ctx, if valid,
// so that the run of key links to (or is parented by) the caller's trace.
func (s *Scheduler[K]) AddContext(ctx context.Context, key K) {
	s.enqueueRequeue(key, trace.SpanContextFromContext(ctx), 0, addPlain, TriggerAdd, "", 0, 0)
}

// AddAfter adds key once delay has passed. A key already pending keeps the
// earlier of its ready time and now+delay. A delay of zero or less adds at
// once, without debouncing.
func (s *Scheduler[K]) AddAfter(key K, delay time.Duration) {
	s.enqueueRequeue(key, trace.SpanContext{}, delay, addDelayed, TriggerRequeueAfter, "", 0, 0)
}

// AddAfterContext is AddAfter that remembers the span context of ctx.
func (s *Scheduler[K]) AddAfterContext(ctx context.Context, key K, delay time.Duration) {
	s.enqueueRequeue(key, trace.SpanContextFromContext(ctx), delay, addDelayed, TriggerRequeueAfter, "", 0, 0)
}

// AddRateLimited adds key after the delay the RateLimiter gives it, usually
// to retry it after an error. Called while key is being processed (the usual
// case), it also makes the next run link to the current one (see
// Item.PreviousAttempt).
func (s *Scheduler[K]) AddRateLimited(key K) {
	s.addRateLimited(key, trace.SpanContext{})
}

// AddRateLimitedContext is AddRateLimited that remembers the span context of
// ctx.
func (s *Scheduler[K]) AddRateLimitedContext(ctx context.Context, key K) {
	s.addRateLimited(key, trace.SpanContextFromContext(ctx))
}

// addRateLimited adds key after the RateLimiter's delay, with the span
// context sc (zero: none).
func (s *Scheduler[K]) addRateLimited(key K, sc trace.SpanContext) {
	if s.ShuttingDown() {
		s.mu.Lock()
		s.failRunningLocked(key)
		s.mu.Unlock()
		return
	}
	d := s.rl.When(key)
	s.enqueueRequeue(key, sc, d, addRateLimited, TriggerBackoff, "", s.rl.NumRequeues(key), 0)
}

// AddOptions are the options of AddWithOptions, as controller-runtime's
// priorityqueue.AddOpts.
type AddOptions struct {
	// After delays the keys, as AddAfter.
	After time.Duration
	// RateLimited delays the keys by the RateLimiter, as AddRateLimited;
	// with After also set (not zero), the shorter delay wins: a negative
	// After adds at once.
	RateLimited bool
	// Priority orders ready keys: a higher priority is handed out first,
	// keys of one priority in the order they became ready. A pending key
	// keeps the highest priority it was added with; raising the priority of
	// a ready key moves it to the end of its new priority. Plain adds have
	// priority 0. Every int is a priority of its own. Any
	// number of distinct priorities may be used: an add or a get costs
	// O(log P) for P priorities with ready keys, and drained priorities
	// release their memory (the scheduler keeps at most 16 empty levels).
	Priority int
	// Trigger says what the add comes from (an event handler's event), for
	// the run's Item.Trigger. The zero value, TriggerAdd, says nothing: the
	// trigger is then TriggerRequeueAfter for an add with After, and
	// TriggerAdd otherwise. A RateLimited add is always TriggerBackoff.
	Trigger Trigger
	// Source names where the event of Trigger came from, for Item.Source:
	// controller-runtime's handlers of package controllerruntime give the
	// kind of the object whose event enqueued the key (the kind of For, or
	// that of an Owns or Watches), so that a run says which watch made it.
	// It goes on spans and pages as it is: give it one of a few names a
	// program knows (a kind per watch), never a value from an object. It is
	// kept with the trigger, by the add that set the run's ready time; empty
	// says nothing.
	Source string
}

// AddWithOptions adds keys with opts, keeping the span context of ctx as
// AddContext does.
func (s *Scheduler[K]) AddWithOptions(ctx context.Context, opts AddOptions, keys ...K) {
	sc := trace.SpanContextFromContext(ctx)
	for _, key := range keys {
		delay, kind, requeues := opts.After, addPlain, 0
		if delay > 0 {
			kind = addDelayed
		}
		trigger := opts.Trigger
		if opts.RateLimited {
			if s.ShuttingDown() {
				s.mu.Lock()
				for _, k := range keys {
					s.failRunningLocked(k)
				}
				s.mu.Unlock()
				return
			}
			// After zero means none; a negative After is shorter than
			// any backoff, as in controller-runtime's queue.
			if d := s.rl.When(key); delay == 0 || d < delay {
				delay = d
			}
			kind, requeues, trigger = addRateLimited, s.rl.NumRequeues(key), TriggerBackoff
		}
		if trigger == TriggerAdd {
			trigger = triggerOf(kind)
		}
		s.enqueueRequeue(key, sc, delay, kind, trigger, opts.Source, requeues, opts.Priority)
	}
}

// Forget tells the RateLimiter to stop tracking key's failures. It does not
// remove key from the queue; Done must still be called.
func (s *Scheduler[K]) Forget(key K) { s.rl.Forget(key) }

// NumRequeues returns the RateLimiter's failure count for key.
func (s *Scheduler[K]) NumRequeues(key K) int { return s.rl.NumRequeues(key) }

// addKind tells which method added a key: a plain add (Add, AddContext), a
// delayed one (AddAfter) or a rate-limited one (AddRateLimited).
type addKind uint8

const (
	addPlain addKind = iota
	addDelayed
	addRateLimited
)

// enqueueRequeue adds key at priority prio for trigger from source;
// requeues is the rate limiter's failure count for rate-limited adds. Add
// and the other entry points call it directly: in a generic instantiation
// a wrapper between them is a call of its own on every add.
func (s *Scheduler[K]) enqueueRequeue(key K, sc trace.SpanContext, delay time.Duration, kind addKind, trigger Trigger, source string, requeues, priority int) {
	s.mu.Lock()
	if s.shuttingDown {
		if kind == addRateLimited {
			s.failRunningLocked(key)
		}
		s.mu.Unlock()
		return
	}
	if kind != addPlain {
		s.retries++
		if kind == addDelayed {
			s.delayedAdds++
		}
	}
	r := addRequest{trigger: trigger, source: source}
	s.requestLocked(&r, delay, kind)
	e, ok := s.entries[key]
	if !ok {
		e = s.newEntry(key)
		s.entries[key] = e
	}
	var signal bool
	if !e.pending {
		signal = s.startRunLocked(e, &r, priority)
	} else {
		signal = s.coalesceLocked(e, &r, priority)
	}
	if sc.IsValid() || kind == addRateLimited || requeues > 0 {
		s.noteAddLocked(e, sc, kind, requeues)
	}
	if s.changes {
		s.noteChangeLocked(e, kind, trigger, r.now)
	}
	s.mu.Unlock()
	if signal {
		s.cond.Signal()
	}
}

// addRequest is what one add asks of a key's pending run: to be ready at
// target, for reason, as read at now.
type addRequest struct {
	now, target int64
	reason      WaitReason
	trigger     Trigger
	source      string // AddOptions.Source
	debounce    bool   // a plain add in a debouncing queue
	immediate   bool   // no delay at all
}

// requestLocked sets r to what an add of kind with delay asks for. It reads
// the clock when the queue is timed or the add delayed, and then first
// promotes the delayed keys already due.
func (s *Scheduler[K]) requestLocked(r *addRequest, delay time.Duration, kind addKind) {
	r.reason = WaitImmediate
	r.debounce = kind == addPlain && s.set.debounce > 0
	r.immediate = delay <= 0 && !r.debounce
	if s.timed || !r.immediate {
		r.now = s.now()
		if len(s.delayed) > 0 && s.delayed[0].at <= r.now {
			s.promoteLocked(r.now)
		}
	}
	r.target = r.now
	switch {
	case r.debounce:
		r.reason = WaitDebounced
	case !r.immediate && kind == addRateLimited:
		r.reason, r.target = WaitRateLimited, addSat(r.now, int64(delay))
	case !r.immediate:
		r.reason, r.target = WaitDelayed, addSat(r.now, int64(delay))
	}
}

// startRunLocked makes a new pending run of e, which has none, at priority
// prio. It reports whether e became ready.
func (s *Scheduler[K]) startRunLocked(e *entry[K], r *addRequest, prio int) bool {
	s.adds++
	e.pending = true
	e.enqueued = r.now
	e.coalesced = 0
	target := r.target
	if s.set.debounce > 0 {
		x := e.ensureExtras()
		x.deadline, x.hasDeadline = addSat(r.now, s.set.debounceMaxWait), true
	}
	if x := e.extrasOrNil(); r.debounce {
		target = min(addSat(r.now, s.set.debounce), x.deadline)
		e.debounced = true
	} else if !r.immediate && x != nil && x.hasDeadline {
		x.deadline = min(x.deadline, target)
	}
	e.readyAt, e.reason, e.trigger = target, r.reason, r.trigger
	if r.source != "" {
		// A new run's extras hold no source (resetRun and forgetLocked
		// clear them): only a source to keep costs a step, written here
		// since setSource is no inlined call in a generic instantiation.
		e.ensureExtras().source = r.source
	}
	e.setPriority(prio)
	switch {
	case e.processing && !s.set.crOrder:
		s.held++
	case r.immediate:
		s.ready.push(e, s.nextOrder()) // locked while e is processed
		return !e.processing
	default:
		s.delayLocked(e)
	}
	return false
}

// coalesceLocked merges an add at priority prio into the pending run of e:
// the highest priority and (see moveLocked) the earliest time win. It
// reports whether e became ready.
func (s *Scheduler[K]) coalesceLocked(e *entry[K], r *addRequest, prio int) bool {
	s.coalesced++
	if e.coalesced < math.MaxInt32 {
		e.coalesced++
	}
	if prio > e.priority() {
		switch e.place {
		case inReady:
			s.ready.raise(e, prio, s.nextOrder())
		case inDelay:
			// Last among the keys of its new priority due at its time, as
			// a ready key goes last in its new priority.
			e.setPriority(prio)
			s.delayed[e.heapIdx].ord = s.nextOrder()
			s.delayed.fix(int(e.heapIdx))
		default:
			e.setPriority(prio)
		}
	}
	if e.place == inReady {
		return false
	}
	s.moveLocked(e, r)
	if e.place == inDelay && e.readyAt <= r.now {
		ord := s.delayed[e.heapIdx].ord
		s.delayed.remove(int(e.heapIdx))
		if !s.set.crOrder || !r.immediate {
			ord = s.nextOrder()
		}
		s.ready.push(e, ord)
		return !e.processing
	}
	return false
}

// noteAddLocked records what an add tells the pending run of e beyond its
// time: the span context of the add, the run that retries (for a
// rate-limited add while e is processed) and the rate limiter's count.
func (s *Scheduler[K]) noteAddLocked(e *entry[K], sc trace.SpanContext, kind addKind, requeues int) {
	e.addSpan(sc, s.set.maxLinks)
	if p := e.running(); kind == addRateLimited && p != nil {
		if prev := trace.SpanContextFromContext(p.context()); prev.IsValid() {
			e.ensureExtras().previous = prev
		}
	}
	if requeues > 0 {
		e.ensureExtras().requeues = requeues
	}
}

// moveLocked applies the ready time asked for by a further add to a pending
// run that is delayed or held: the earliest time wins, except that a
// debounced add may push a debounced run later, up to its deadline.
func (s *Scheduler[K]) moveLocked(e *entry[K], r *addRequest) {
	old, x := e.readyAt, e.extrasOrNil()
	switch {
	case r.debounce:
		t := min(addSat(r.now, s.set.debounce), x.deadline)
		if e.debounced || t < e.readyAt {
			e.readyAt, e.reason, e.trigger, e.debounced = t, WaitDebounced, r.trigger, true
			e.setSource(r.source)
		}
	default:
		if x != nil && x.hasDeadline {
			x.deadline = min(x.deadline, r.target)
		}
		if r.target < e.readyAt || r.immediate {
			e.readyAt, e.reason, e.trigger, e.debounced = r.target, r.reason, r.trigger, false
			e.setSource(r.source)
		}
	}
	// A key now due is taken out of the heap by the caller; only a key that
	// stays delayed needs the heap fixed and the loop armed.
	if e.place == inDelay && e.readyAt != old && e.readyAt > r.now {
		s.delayed.fix(int(e.heapIdx))
		s.armLocked(e.readyAt)
	}
}
