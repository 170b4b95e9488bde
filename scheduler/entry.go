package scheduler

import (
	"context"
	"sync/atomic"
	"time"

	"go.opentelemetry.io/otel/trace"
)

// where an entry sits.
type place uint8

const (
	nowhere place = iota // handed to a worker, possibly held for a next run
	inReady              // in the ready FIFO
	inDelay              // in the delay heap
)

// entry is the scheduler's state for one key: at most one pending run and at
// most one run in flight. Fields used by every pending key are kept inline
// and small (an entry of a string key fits in 64 bytes); the span context of
// the first add, the run in flight and the rarer fields live in side,
// allocated on first use and kept with the entry for its later runs (and
// when it is recycled), so that a key added without a span context pays for
// none of them while it waits.
type entry[K comparable] struct {
	key K

	// enqueued is the time of the earliest add still pending; readyAt the
	// time the pending run may start (ns since the scheduler's base time;
	// zero in an untimed queue for immediate adds).
	enqueued int64
	readyAt  int64

	s *side[K] // nil until needed

	heapIdx   int32
	coalesced int32
	prio      int32  // priority of the pending run: the highest it was added with
	seq       uint32 // bumped on every push into the ready queue; kept across reuse

	place      place
	pending    bool // a run is pending (ready, delayed, or held)
	processing bool // a run is in flight
	debounced  bool // readyAt was chosen by debouncing
	reason     WaitReason
}

// side holds what a key needs only at times.
type side[K comparable] struct {
	origin spanRef  // first valid enqueue span context of the pending run
	x      *extras  // links, retries, debounce deadline; nil until needed
	proc   *proc[K] // the run in flight, when processing
}

// extras holds what only some keys need.
type extras struct {
	links       []trace.SpanContext // valid span contexts after origin
	dropped     int
	previous    trace.SpanContext // span context of the run that retried
	originState trace.TraceState
	requeues    int
	deadline    int64 // latest ready time debouncing may choose
	hasDeadline bool
}

// readySince is when the pending run became ready to run.
func (e *entry[K]) readySince() int64 { return max(e.readyAt, e.enqueued) }

// side returns the side of e, making it if needed.
func (e *entry[K]) side() *side[K] {
	if e.s == nil {
		e.s = new(side[K])
	}
	return e.s
}

// extras returns the extras of e, making them if needed.
func (e *entry[K]) extras() *extras {
	s := e.side()
	if s.x == nil {
		s.x = new(extras)
	}
	return s.x
}

// xs returns the extras of e, or nil.
func (e *entry[K]) xs() *extras {
	if e.s == nil {
		return nil
	}
	return e.s.x
}

// running returns the run in flight of e, or nil.
func (e *entry[K]) running() *proc[K] {
	if e.s == nil {
		return nil
	}
	return e.s.proc
}

// origin returns the span context of the first add of the pending run, or
// nil.
func (e *entry[K]) origin() *spanRef {
	if e.s == nil {
		return nil
	}
	return &e.s.origin
}

// proc is the state of a run in flight. The in-flight runs form a list in
// the order they started, so the oldest is at its head.
//
// With an Observer, the worker that took the run calls Dequeued outside the
// queue lock and then publishes the context it returned: it writes ctx and
// moves state from procObserving to procReady. Code under the lock reads
// ctx only in state procReady. A Done that comes while Dequeued still runs
// (from another goroutine: a misuse) moves state to procDoneEarly instead
// and leaves the proc to that worker, which reports the Done to the
// Observer once Dequeued returns.
type proc[K comparable] struct {
	started    int64 // dequeue time, ns since the scheduler's base time
	prev, next *proc[K]

	// ctx is the context the run is processed in: the Observer's, or nil
	// without one.
	ctx   context.Context
	state atomic.Uint32

	// observed tells that o holds this run's Item for an Observer.
	observed bool
	// o is allocated with the first observed run of this proc and kept as
	// it is recycled, so that a get allocates none; nil until then, so that
	// a queue with no Observer keeps its runs small.
	o *procObs[K]
}

// procObs is what an observed run needs beyond proc.
type procObs[K comparable] struct {
	// item is the Item Dequeued is shown. It holds the dequeue's wall-clock
	// time that Done's time is anchored to.
	item Item[K]
	// ended is the time of a Done in state procDoneEarly, for the worker.
	ended time.Time
}

// States of a proc with an Observer (see proc). Without one a proc stays in
// procReady, with a nil ctx.
const (
	procReady uint32 = iota
	procObserving
	procDoneEarly
)

// context returns the context the run is processed in, or nil before the
// Observer's Dequeued has returned (or without an Observer). The queue lock
// must be held.
func (p *proc[K]) context() context.Context {
	if p.state.Load() != procReady {
		return nil
	}
	return p.ctx
}

// spanRef is a trace.SpanContext without its trace state (kept in extras when
// present), to keep entries small.
type spanRef struct {
	traceID trace.TraceID
	spanID  trace.SpanID
	flags   trace.TraceFlags
	remote  bool
	valid   bool
}

func (r *spanRef) spanContext(ts trace.TraceState) trace.SpanContext {
	if r == nil || !r.valid {
		return trace.SpanContext{}
	}
	return trace.NewSpanContext(trace.SpanContextConfig{
		TraceID:    r.traceID,
		SpanID:     r.spanID,
		TraceFlags: r.flags,
		TraceState: ts,
		Remote:     r.remote,
	})
}

func (r *spanRef) equal(sc trace.SpanContext) bool {
	return r != nil && r.valid && r.traceID == sc.TraceID() && r.spanID == sc.SpanID()
}

// addSpan records the valid span context sc of an add to the pending run,
// keeping at most max of them (max < 0: none) and counting the others.
func (e *entry[K]) addSpan(sc trace.SpanContext, max int) {
	if !sc.IsValid() {
		return
	}
	if o := e.origin(); o == nil || !o.valid {
		if max < 0 {
			e.extras().dropped++
			return
		}
		e.side().origin = spanRef{traceID: sc.TraceID(), spanID: sc.SpanID(), flags: sc.TraceFlags(), remote: sc.IsRemote(), valid: true}
		if ts := sc.TraceState(); ts.Len() > 0 {
			e.extras().originState = ts
		}
		return
	}
	if e.origin().equal(sc) {
		return
	}
	x := e.extras()
	for _, l := range x.links {
		if l.TraceID() == sc.TraceID() && l.SpanID() == sc.SpanID() {
			return
		}
	}
	if 1+len(x.links) >= max {
		x.dropped++
		return
	}
	x.links = append(x.links, sc)
}
