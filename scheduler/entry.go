package scheduler

import (
	"math"

	"go.opentelemetry.io/otel/trace"
)

// place is where an entry sits.
type place uint8

const (
	nowhere place = iota // handed to a worker, possibly held for a next run
	inReady              // in the ready FIFO
	inDelay              // in the delay heap
)

// entry is the scheduler's state for one key: at most one pending run and at
// most one run in flight. Fields used by every pending key are kept inline
// and small (an entry of a string key fits in 64 bytes); the span context of
// the first add, the run in flight and the rarer fields live in its side,
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

	side *side[K] // nil until needed

	heapIdx   int32
	coalesced int32
	prio      int32  // priority of the pending run (the highest it was added with), clamped; see priority
	seq       uint32 // bumped on every push into the ready queue; kept across reuse

	place      place
	pending    bool // a run is pending (ready, delayed, or held)
	processing bool // a run is in flight
	debounced  bool // readyAt was chosen by debouncing
	bigPrio    bool // the priority is beyond int32: in extras.priority
	reason     WaitReason
	trigger    Trigger     // of the add that set readyAt (see Trigger)
	change     changeState // the pending run's change, if any (see change.go)
}

// side holds what a key needs only at times.
type side[K comparable] struct {
	origin spanRef    // first valid enqueue span context of the pending run
	extras *runExtras // links, retries, debounce deadline; nil until needed
	proc   *proc[K]   // the run in flight, when processing
}

// runExtras holds what only some pending runs need. It belongs to the
// pending run: it is cleared when the run is handed out and when the entry
// is recycled, but kept allocated for the key's later runs.
type runExtras struct {
	links       []trace.SpanContext // valid span contexts after origin
	dropped     int
	previous    trace.SpanContext // span context of the run that retried
	originState trace.TraceState
	requeues    int
	deadline    int64 // latest ready time debouncing may choose
	hasDeadline bool
	priority    int    // the pending run's priority, when it is beyond int32 (entry.bigPrio)
	changeAt    int64  // when the pending run's change opened, if not at enqueued (changeInExtras)
	source      string // AddOptions.Source of the add that set readyAt
}

// priority returns the priority of e's pending run.
func (e *entry[K]) priority() int {
	if e.bigPrio {
		return e.side.extras.priority
	}
	return int(e.prio)
}

// setPriority sets the priority of e's pending run. One within int32 is
// kept inline; a larger one, rare, in the run's extras.
func (e *entry[K]) setPriority(p int) {
	if p >= math.MinInt32 && p <= math.MaxInt32 {
		e.prio, e.bigPrio = int32(p), false
		return
	}
	e.ensureExtras().priority = p
	e.prio, e.bigPrio = int32(max(math.MinInt32, min(p, math.MaxInt32))), true
}

// readySince is when the pending run became ready to run.
func (e *entry[K]) readySince() int64 { return max(e.readyAt, e.enqueued) }

// ensureSide returns the side of e, allocating it on first use.
func (e *entry[K]) ensureSide() *side[K] {
	if e.side == nil {
		e.side = new(side[K])
	}
	return e.side
}

// ensureExtras returns the extras of e's pending run, allocating them (and
// the side) on first use. Use it to write; read with extrasOrNil, which
// allocates nothing.
func (e *entry[K]) ensureExtras() *runExtras {
	sd := e.ensureSide()
	if sd.extras == nil {
		sd.extras = new(runExtras)
	}
	return sd.extras
}

// extrasOrNil returns the extras of e's pending run, or nil when none were
// ever allocated for e.
func (e *entry[K]) extrasOrNil() *runExtras {
	if e.side == nil {
		return nil
	}
	return e.side.extras
}

// setSource keeps the source of the add that set e's ready time (see
// AddOptions.Source); an add without one clears an earlier add's.
func (e *entry[K]) setSource(source string) {
	if source != "" {
		e.ensureExtras().source = source
	} else if x := e.extrasOrNil(); x != nil {
		x.source = ""
	}
}

// running returns the run in flight of e, or nil.
func (e *entry[K]) running() *proc[K] {
	if e.side == nil {
		return nil
	}
	return e.side.proc
}

// origin returns the span context of the first add of the pending run, or
// nil.
func (e *entry[K]) origin() *spanRef {
	if e.side == nil {
		return nil
	}
	return &e.side.origin
}
