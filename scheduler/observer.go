package scheduler

import (
	"context"
	"time"
)

// Observer is the seam through which instrumentation sees each item's life
// without the scheduler knowing about metrics or spans. Package otelqueue
// provides the OpenTelemetry implementation; install one with
// [Scheduler.SetObserver].
//
// An Observer that uses only durations, not span timestamps, may also
// implement [WallClockObserver].
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
	// work started (the dequeue) and ended.
	Done(ctx context.Context, key K, started, ended time.Time)
}

// WallClockObserver is an Observer that tells the scheduler whether the
// times it reports must be wall-clock times. When NeedsWallClock returns
// false (at SetObserver), the scheduler reads the cheaper monotonic clock
// only, and the times it reports are offsets from the wall clock read at
// the scheduler's creation: right as durations, but drifting from the wall
// clock as it is adjusted. An Observer without the method gets wall-clock
// times.
type WallClockObserver[K comparable] interface {
	Observer[K]
	NeedsWallClock() bool
}
