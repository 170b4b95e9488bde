package scheduler

import (
	"context"
	"math"
	"time"

	"go.opentelemetry.io/otel/trace"
)

// Add marks key as needing processing, at once (or after the debounce
// window, see Config.Debounce). Adds after ShutDown are ignored.
func (s *Scheduler[K]) Add(key K) { s.enqueue(key, trace.SpanContext{}, 0, addPlain) }

// AddContext is Add that also remembers the span context of ctx, if valid,
// so that the run of key links to (or is parented by) the caller's trace.
func (s *Scheduler[K]) AddContext(ctx context.Context, key K) {
	s.enqueue(key, trace.SpanContextFromContext(ctx), 0, addPlain)
}

// AddAfter adds key once delay has passed. A key already pending keeps the
// earlier of its ready time and now+delay. A delay of zero or less adds at
// once, without debouncing.
func (s *Scheduler[K]) AddAfter(key K, delay time.Duration) {
	s.enqueue(key, trace.SpanContext{}, delay, addDelayed)
}

// AddAfterContext is AddAfter that remembers the span context of ctx.
func (s *Scheduler[K]) AddAfterContext(ctx context.Context, key K, delay time.Duration) {
	s.enqueue(key, trace.SpanContextFromContext(ctx), delay, addDelayed)
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

func (s *Scheduler[K]) addRateLimited(key K, sc trace.SpanContext) {
	if s.ShuttingDown() {
		return
	}
	d := s.rl.When(key)
	s.enqueueRequeue(key, sc, d, addRateLimited, s.rl.NumRequeues(key), 0)
}

// AddOptions are the options of AddWithOptions, as controller-runtime's
// priorityqueue.AddOpts.
type AddOptions struct {
	// After delays the keys, as AddAfter.
	After time.Duration
	// RateLimited delays the keys by the RateLimiter, as AddRateLimited;
	// with After also set, the shorter delay wins.
	RateLimited bool
	// Priority orders ready keys: a higher priority is handed out first,
	// keys of one priority in the order they became ready. A pending key
	// keeps the highest priority it was added with; raising the priority of
	// a ready key moves it to the end of its new priority. Plain adds have
	// priority 0. Priorities beyond the int32 range are clamped to it.
	Priority int
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
		if opts.RateLimited {
			if s.ShuttingDown() {
				return
			}
			if d := s.rl.When(key); delay <= 0 || d < delay {
				delay = d
			}
			kind, requeues = addRateLimited, s.rl.NumRequeues(key)
		}
		s.enqueueRequeue(key, sc, delay, kind, requeues, opts.Priority)
	}
}

// Forget tells the RateLimiter to stop tracking key's failures. It does not
// remove key from the queue; Done must still be called.
func (s *Scheduler[K]) Forget(key K) { s.rl.Forget(key) }

// NumRequeues returns the RateLimiter's failure count for key.
func (s *Scheduler[K]) NumRequeues(key K) int { return s.rl.NumRequeues(key) }

type addKind uint8

const (
	addPlain addKind = iota
	addDelayed
	addRateLimited
)

func (s *Scheduler[K]) enqueue(key K, sc trace.SpanContext, delay time.Duration, kind addKind) {
	s.enqueueRequeue(key, sc, delay, kind, 0, 0)
}

// enqueueRequeue adds key at priority prio; requeues is the rate limiter's
// failure count for rate-limited adds.
func (s *Scheduler[K]) enqueueRequeue(key K, sc trace.SpanContext, delay time.Duration, kind addKind, requeues, priority int) {
	prio := clampPriority(priority)
	s.mu.Lock()
	if s.shuttingDown {
		s.mu.Unlock()
		return
	}
	if kind != addPlain {
		s.retries++
	}
	debounce := kind == addPlain && s.set.debounce > 0
	immediate := delay <= 0 && !debounce
	var now int64
	if s.timed || !immediate {
		now = s.now()
		if len(s.delayed) > 0 && s.delayed[0].at <= now {
			s.promoteLocked(now)
		}
	}

	// The ready time this add asks for, and why.
	reason := WaitImmediate
	target := now
	switch {
	case debounce:
		reason = WaitDebounced
	case !immediate && kind == addRateLimited:
		reason, target = WaitRateLimited, addSat(now, int64(delay))
	case !immediate:
		reason, target = WaitDelayed, addSat(now, int64(delay))
	}

	e, ok := s.entries[key]
	if !ok {
		e = s.newEntry(key)
		s.entries[key] = e
	}
	signal := false
	if !e.pending {
		// A new pending run.
		s.adds++
		e.pending = true
		e.enqueued = now
		e.coalesced = 0
		if s.set.debounce > 0 {
			x := e.extras()
			x.deadline, x.hasDeadline = addSat(now, s.set.debounceMaxWait), true
		}
		if debounce {
			target = min(addSat(now, s.set.debounce), e.x.deadline)
			e.debounced = true
		} else if !immediate && e.x != nil && e.x.hasDeadline {
			e.x.deadline = min(e.x.deadline, target)
		}
		e.readyAt, e.reason = target, reason
		e.prio = prio
		if e.processing {
			s.held++
		} else if immediate {
			s.ready.push(e)
			signal = true
		} else {
			s.delayLocked(e)
		}
	} else {
		s.coalesced++
		if e.coalesced < math.MaxInt32 {
			e.coalesced++
		}
		if prio > e.prio {
			if e.place == inReady {
				s.ready.raise(e, prio)
			} else {
				e.prio = prio
			}
		}
		if e.place != inReady {
			s.moveLocked(e, target, reason, debounce, immediate, now)
			if e.place == inDelay && e.readyAt <= now {
				s.delayed.remove(int(e.heapIdx))
				s.ready.push(e)
				signal = true
			}
		}
	}
	e.addSpan(sc, s.set.maxLinks)
	if kind == addRateLimited && e.processing && e.proc.ctx != nil {
		if prev := trace.SpanContextFromContext(e.proc.ctx); prev.IsValid() {
			e.extras().previous = prev
		}
	}
	if requeues > 0 {
		e.extras().requeues = requeues
	}
	s.publishLocked()
	s.mu.Unlock()
	if signal {
		s.cond.Signal()
	}
}

// moveLocked applies the ready time asked for by a further add to a pending
// run that is delayed or held: the earliest time wins, except that a
// debounced add may push a debounced run later, up to its deadline.
func (s *Scheduler[K]) moveLocked(e *entry[K], target int64, reason WaitReason, debounce, immediate bool, now int64) {
	old := e.readyAt
	switch {
	case debounce:
		t := min(addSat(now, s.set.debounce), e.x.deadline)
		if e.debounced || t < e.readyAt {
			e.readyAt, e.reason, e.debounced = t, WaitDebounced, true
		}
	default:
		if e.x != nil && e.x.hasDeadline {
			e.x.deadline = min(e.x.deadline, target)
		}
		if target < e.readyAt || immediate {
			e.readyAt, e.reason, e.debounced = target, reason, false
		}
	}
	// A key now due is taken out of the heap by the caller; only a key that
	// stays delayed needs the heap fixed and the loop armed.
	if e.place == inDelay && e.readyAt != old && e.readyAt > now {
		s.delayed.fix(int(e.heapIdx))
		s.armLocked(e.readyAt)
	}
}
