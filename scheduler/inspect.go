package scheduler

import (
	"cmp"
	"container/heap"
	"slices"
	"time"

	"go.opentelemetry.io/otel/trace"
)

// Inspection is a look inside a queue at one moment: how many keys wait, by
// priority and reason, the longest-waiting ones and the runs in flight. It
// is for a debug page (package otelqueue's Inspector) or a program's own
// diagnostics, not for a hot path: see Scheduler.Inspect for its cost.
//
// The times are those of the scheduler's clock, and zero in a queue that
// reads no clock (see Config.Name), where Oldest and Running are then any
// of the keys.
type Inspection[K comparable] struct {
	// At is when the inspection was taken.
	At time.Time
	// Pending is the number of keys with a run pending: ready, delayed, or
	// held until their run in flight is done. InFlight is the number of
	// runs handed to workers and not yet Done.
	Pending, InFlight int
	// ByPriority counts the pending keys by priority, wait reason and
	// place, the highest priority first, then the ready, delayed and held
	// keys, then by reason.
	ByPriority []PendingCount
	// Oldest are the pending keys that were enqueued first, the oldest
	// first (of keys enqueued at one instant, the one ready first): at most
	// the limit given to Inspect.
	Oldest []PendingKey[K]
	// Running are the runs in flight, the longest-running first: at most
	// the limit given to Inspect.
	Running []RunningKey[K]
}

// PendingCount is the number of pending keys of one priority and wait
// reason, and where they are: ready (neither flag: Stats.Depth counts
// them), delayed (Stats.Delayed) or held until their run in flight is done
// (Stats.Held). A ready key keeps the reason it waited for: a key held
// until its run ended is ready with the reason WaitHeld once it did.
type PendingCount struct {
	Priority      int
	Reason        WaitReason
	Delayed, Held bool
	Keys          int
}

// PendingKey describes a key with a run pending.
type PendingKey[K comparable] struct {
	Key K
	// EnqueuedAt is the time of the earliest add still pending; ReadyAt
	// when the run may start (after At for a key still delayed or held).
	EnqueuedAt, ReadyAt time.Time
	// Reason tells why the key waits, or waited, before ReadyAt; Trigger
	// what the add that set ReadyAt came from.
	Reason  WaitReason
	Trigger Trigger
	// Source is where the event of Trigger came from (Item.Source).
	Source string
	// Priority is the pending run's priority.
	Priority int
	// Requeues is the rate limiter's count of failures for the key as of
	// its last AddRateLimited merged into this run; Coalesced the adds
	// merged into it after the first.
	Requeues, Coalesced int
	// Delayed says the run waits for a delay, a backoff or a debounce
	// window; Held that it waits for the key's run in flight.
	Delayed, Held bool
	// Origin is the span context of the first add of the run that carried
	// one; PreviousAttempt that of the attempt that asked for this run with
	// AddRateLimited (a retry), with an Observer. Either may be invalid.
	Origin, PreviousAttempt trace.SpanContext
}

// RunningKey describes a run in flight.
type RunningKey[K comparable] struct {
	Key K
	// StartedAt is when a worker took the key; Trigger what made the run
	// (Item.Trigger), Source where its event came from (Item.Source).
	StartedAt time.Time
	Trigger   Trigger
	Source    string
	// SpanContext is that of the context the run is processed in (the
	// Observer's: with package otelqueue and tracing on, the attempt's
	// "reconcile" span); invalid without one.
	SpanContext trace.SpanContext
}

// Inspect returns an Inspection of the queue with at most limit keys in
// Oldest and in Running (a limit below 1 lists none; the counts are always
// whole). It reads every key the queue holds under the queue's lock, which
// the queue's operations wait for meanwhile: about O(keys · log limit)
// time, and no allocation per key beyond the keys listed. Like Stats, it
// first moves the delayed keys that are due to the ready queue.
func (s *Scheduler[K]) Inspect(limit int) Inspection[K] {
	limit = max(limit, 0)
	s.mu.Lock()
	defer s.mu.Unlock()
	var now int64
	if s.timed || len(s.delayed) > 0 {
		now = s.now()
	}
	if len(s.delayed) > 0 {
		s.promoteLocked(now)
	}
	in := Inspection[K]{InFlight: s.inflight.n}
	if s.timed {
		in.At = s.at(now)
	}
	type countKey struct {
		prio          int
		reason        WaitReason
		delayed, held bool
	}
	counts := make(map[countKey]int)
	oldest := make(entryHeap[K], 0, min(limit, len(s.entries)))
	for _, e := range s.entries {
		if e.processing && limit > 0 {
			if len(in.Running) < limit {
				in.Running = append(in.Running, s.runningLocked(e))
			} else {
				s.keepLongestLocked(in.Running, e)
			}
		}
		if !e.pending {
			continue
		}
		in.Pending++
		counts[countKey{e.priority(), pendingReason(e), e.place == inDelay, e.place == nowhere}]++
		if limit == 0 {
			continue
		}
		if len(oldest) < limit {
			heap.Push(&oldest, e)
		} else if cmpOldest(e, oldest[0]) < 0 {
			oldest[0] = e
			heap.Fix(&oldest, 0)
		}
	}
	for k, n := range counts {
		in.ByPriority = append(in.ByPriority, PendingCount{Priority: k.prio, Reason: k.reason, Delayed: k.delayed, Held: k.held, Keys: n})
	}
	place := func(c PendingCount) int { // ready, delayed, held
		switch {
		case c.Held:
			return 2
		case c.Delayed:
			return 1
		}
		return 0
	}
	slices.SortFunc(in.ByPriority, func(a, b PendingCount) int {
		if c := cmp.Compare(b.Priority, a.Priority); c != 0 {
			return c
		}
		if c := cmp.Compare(place(a), place(b)); c != 0 {
			return c
		}
		return cmp.Compare(a.Reason, b.Reason)
	})
	slices.SortFunc(oldest, cmpOldest[K])
	for _, e := range oldest {
		in.Oldest = append(in.Oldest, s.pendingLocked(e, now))
	}
	slices.SortFunc(in.Running, func(a, b RunningKey[K]) int { return a.StartedAt.Compare(b.StartedAt) })
	return in
}

// pendingLocked describes e's pending run.
func (s *Scheduler[K]) pendingLocked(e *entry[K], now int64) PendingKey[K] {
	p := PendingKey[K]{
		Key:       e.key,
		Reason:    pendingReason(e),
		Trigger:   e.trigger,
		Priority:  e.priority(),
		Coalesced: int(e.coalesced),
		Delayed:   e.place == inDelay,
		Held:      e.place == nowhere,
	}
	if s.timed {
		p.EnqueuedAt = s.at(e.enqueued)
		p.ReadyAt = s.at(max(e.readyAt, e.enqueued))
	}
	var ts trace.TraceState
	if x := e.extrasOrNil(); x != nil {
		ts = x.originState
		p.Requeues = x.requeues
		p.PreviousAttempt = x.previous
		p.Source = x.source
	}
	p.Origin = e.origin().spanContext(ts)
	return p
}

// pendingReason is why e's pending run waits: WaitHeld while the key's run
// in flight holds it (the reason the run will carry once ready), else the
// reason its add gave.
func pendingReason[K comparable](e *entry[K]) WaitReason {
	if e.place == nowhere {
		return WaitHeld
	}
	return e.reason
}

// runningLocked describes e's run in flight.
func (s *Scheduler[K]) runningLocked(e *entry[K]) RunningKey[K] {
	r := RunningKey[K]{Key: e.key}
	p := e.running()
	if p == nil {
		return r
	}
	r.Trigger, r.Source = p.trigger, p.source
	if s.timed && p.timed {
		r.StartedAt = s.at(p.started)
	}
	if ctx := p.context(); ctx != nil {
		r.SpanContext = trace.SpanContextFromContext(ctx)
	}
	return r
}

// keepLongestLocked puts e's run in running, which is full, in place of the
// run that started last, if e's started before it. (O(limit) per run in
// flight beyond the limit: runs in flight are at most the workers.)
func (s *Scheduler[K]) keepLongestLocked(running []RunningKey[K], e *entry[K]) {
	p := e.running()
	if p == nil || !s.timed {
		return
	}
	latest := 0
	for i, r := range running {
		if r.StartedAt.After(running[latest].StartedAt) {
			latest = i
		}
	}
	if s.at(p.started).Before(running[latest].StartedAt) {
		running[latest] = s.runningLocked(e)
	}
}

// cmpOldest orders pending entries oldest first: by enqueue time, then,
// for keys enqueued at one instant, the one ready first (a key delayed
// since then waits for its delay, not for a worker). Entries equal in both
// are in no particular order.
func cmpOldest[K comparable](a, b *entry[K]) int {
	if c := cmp.Compare(a.enqueued, b.enqueued); c != 0 {
		return c
	}
	return cmp.Compare(max(a.readyAt, a.enqueued), max(b.readyAt, b.enqueued))
}

// entryHeap is a max-heap of entries by cmpOldest: its root is the
// youngest of those kept, the one an older key replaces.
type entryHeap[K comparable] []*entry[K]

func (h entryHeap[K]) Len() int           { return len(h) }
func (h entryHeap[K]) Less(i, j int) bool { return cmpOldest(h[i], h[j]) > 0 }
func (h entryHeap[K]) Swap(i, j int)      { h[i], h[j] = h[j], h[i] }
func (h *entryHeap[K]) Push(x any)        { *h = append(*h, x.(*entry[K])) }
func (h *entryHeap[K]) Pop() any {
	old := *h
	e := old[len(old)-1]
	*h = old[:len(old)-1]
	return e
}
