package scheduler

import (
	"context"
	"sync/atomic"
)

// proc is the state of a run in flight. The in-flight runs form a list
// (runList) in the order they started, so the oldest is at its head.
//
// With an Observer, the worker that took the run calls Dequeued outside the
// queue lock and then publishes the context it returned: it writes ctx and
// moves state from procObserving to procReady. Code under the lock reads
// ctx only in state procReady. A Done that comes while Dequeued still runs
// (from another goroutine: a misuse) moves state to procDoneEarly instead
// and leaves the proc to that worker, which reports the Done to the
// Observer once Dequeued returns.
//
// state is written once without an atomic operation: by the worker, under
// the lock, before its compare-and-swap; every other access is atomic.
// Each atomic read-modify-write costs a Get and Done several nanoseconds,
// and the common path, a Done after Dequeued returned, needs only the
// worker's.
type proc[K comparable] struct {
	started    int64 // dequeue time, ns since the scheduler's base time
	prev, next *proc[K]

	// ctx is the context the run is processed in: the Observer's, or nil
	// without one.
	ctx   context.Context
	state uint32 // procReady, procObserving or procDoneEarly; see above

	// observed tells that o holds this run's Item for an Observer;
	// measured that a DurationObserver was told of it instead (ctx is then
	// the worker's); timed that started holds the run's start (the queue
	// was timed then).
	observed, measured, timed bool
	trigger                   Trigger // of the run (Item.Trigger), for Inspect
	source                    string  // of the run (Item.Source), for Inspect
	// changeOpen says the run acts on a change opened at changeAt; failed
	// that its key was added rate-limited while it ran (see change.go).
	changeOpen, failed bool
	changeAt           int64
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
	// done is the report of a Done in state procDoneEarly, for the worker
	// to complete and send.
	done doneReport[K]
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
	if atomic.LoadUint32(&p.state) != procReady {
		return nil
	}
	return p.ctx
}

// runList is the list of the runs in flight, linked through proc.prev and
// proc.next in the order they started: Done takes a run out in O(1), and
// Stats finds the longest-running one at the head.
type runList[K comparable] struct {
	head, tail *proc[K]
	n          int
	startSum   int64 // sum of the runs' started times, for Stats.UnfinishedWork
}

// push appends p, which has just started.
func (l *runList[K]) push(p *proc[K]) {
	if t := l.tail; t != nil {
		t.next, p.prev = p, t
	} else {
		l.head = p
	}
	l.tail = p
	l.n++
	l.startSum += p.started
}

// remove takes p, which is in the list, out of it.
func (l *runList[K]) remove(p *proc[K]) {
	if p.prev != nil {
		p.prev.next = p.next
	} else {
		l.head = p.next
	}
	if p.next != nil {
		p.next.prev = p.prev
	} else {
		l.tail = p.prev
	}
	l.n--
	l.startSum -= p.started
}
