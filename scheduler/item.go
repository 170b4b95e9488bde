package scheduler

import (
	"context"
	"time"

	"go.opentelemetry.io/otel/trace"
)

// Item is what a worker receives from [Scheduler.GetContext]: the key and
// everything instrumentation needs to describe the wait that preceded it.
//
// The times are read from the scheduler's clock. They are zero when nothing
// consumes them: for a queue with an empty Config.Name and no Observer, like
// client-go's unnamed queues, the scheduler reads no clock on Add, Get or
// Done.
type Item[K comparable] struct {
	// Key is the key to process. Call Done with it when the work is finished.
	Key K

	// EnqueuedAt is the time of the earliest add still pending when the key
	// was handed out; later adds coalesced into this run do not move it.
	EnqueuedAt time.Time
	// ReadyAt is when the key became eligible to run: EnqueuedAt for an
	// immediate add, the end of the delay, backoff or debounce window, or the
	// time the previous run of the key ended (WaitHeld).
	ReadyAt time.Time
	// DequeuedAt is when a worker took the key.
	DequeuedAt time.Time

	// Reason tells why the key waited before ReadyAt.
	Reason WaitReason
	// Trigger tells what the add that set ReadyAt came from: an event,
	// a requeue, a retry (see Trigger).
	Trigger Trigger
	// Source is where the event of Trigger came from, as the add that set
	// ReadyAt gave it (AddOptions.Source): with package controllerruntime's
	// handlers the kind of the watched object. Empty if none was given.
	Source string
	// Requeues is the rate limiter's count of failures for the key as of the
	// last AddRateLimited merged into this run; zero if none was.
	Requeues int
	// Coalesced counts the adds merged into this run after the first one.
	Coalesced int
	// Priority is the highest priority the run was added with (see
	// AddOptions.Priority); 0 for plain adds.
	Priority int

	// Origin is the span context of the first add of this run that carried a
	// valid one (zero when none did).
	Origin trace.SpanContext
	// Links holds the valid span contexts of further adds merged into this
	// run, in order, bounded by Config.MaxLinks (Origin included).
	Links []trace.SpanContext
	// DroppedLinks counts the valid span contexts not kept because of that
	// bound.
	DroppedLinks int
	// PreviousAttempt is the span context in which the previous run of this
	// key was processed (its Item.Context as the Observer returned it) when
	// that run asked for this one with AddRateLimited (a retry); zero
	// otherwise, and always zero without an Observer.
	PreviousAttempt trace.SpanContext

	ctx context.Context
}

// Context returns the context in which the item should be processed: the one
// the Observer returned from Dequeued, or the context given to GetContext when
// no Observer is installed.
func (it *Item[K]) Context() context.Context {
	if it.ctx == nil {
		return context.Background()
	}
	return it.ctx
}
