// Package schedhooks is the bridge through which package otelqueue reaches
// the parts of a scheduler.Scheduler that exist only for it: the clock the
// queue reads, the channel closed when it shuts down, the
// compare-and-swap of its Observer, the value package otelqueue keeps in
// it (Extension), and a metrics-only Observer's cheaper path
// (DurationObserver). They are no API of the scheduler's, so
// that its users do not see them; package scheduler registers, in an init,
// the function Of calls. Only package otelqueue uses this package.
//
// The bridge takes a scheduler as any, since a *scheduler.Scheduler[K] of
// every K answers it: package scheduler matches them all with an interface
// of an unexported method.
package schedhooks

import (
	"time"

	"k8s.io/utils/clock"
)

// DurationObserver is a scheduler.Observer that, when DurationsOnly reports
// true at SetObserver (and it observes no changes: see scheduler.Observer's
// ObservesChanges), reads no time, context or span context of a run,
// only its queue wait and its work: package otelqueue's with tracing off
// (and no standby, client time or change durations). The scheduler then
// tells it of each run with Waited and Worked, in place of Dequeued and
// Done, and builds no Item, hands over no context and keeps no report for
// it; the run's context is the worker's own, as if Dequeued had returned
// it (bench/'s scheduler-otel measures what that saves). Waited's type
// being this package's, no Observer outside the module can take this path.
//
// A run Waited was called for gets Worked at its Done, unless the Observer
// was replaced meanwhile by one that is not a DurationObserver: that one
// gets Done, as after any replacement.
type DurationObserver interface {
	DurationsOnly() bool
	// Waited is called for a run before Get or GetContext returns it, out
	// of the queue lock, in the worker's goroutine.
	Waited(Wait)
	// Worked is called at the run's Done, out of the queue lock: work is
	// the time from its dequeue, ended the time of the Done (on the clock
	// and anchor of the times Observers are given).
	Worked(work time.Duration, ended time.Time)
}

// Wait is a run's queue wait, for a DurationObserver.
type Wait struct {
	// Wait is the time from when the run was ready to its dequeue
	// (Item.DequeuedAt - Item.ReadyAt).
	Wait time.Duration
	// Priority and Reason are the run's Item.Priority and Item.Reason
	// (a scheduler.WaitReason).
	Priority int
	Reason   uint8
}

// Hooks are what package otelqueue reaches in one scheduler.
type Hooks struct {
	// Clock is the clock the queue reads (scheduler.Config.Clock, or the
	// real clock): code that works beside the queue, such as an adaptive
	// worker pool, measures with it so that its times agree with the
	// queue's.
	Clock clock.WithTicker

	// ShutDownCh is closed when ShutDown or ShutDownWithDrain is first
	// called, for a goroutine that works beside the queue to stop with it.
	ShutDownCh <-chan struct{}

	// CompareAndSwapObserver installs obs as SetObserver does, but only if
	// the Observer installed is old (nil: none), and reports whether it
	// did: instrumentation installs itself without replacing an Observer
	// someone else installed meanwhile, and removes itself without removing
	// a newer one. old and obs are scheduler.Observer[K] of the scheduler's
	// K, or nil; an old of another type, or whose dynamic type is not
	// comparable (a func, say), matches nothing, and an obs of another type
	// installs nothing: both return false.
	CompareAndSwapObserver func(old, obs any) bool

	// Extension returns the value the scheduler holds for package
	// otelqueue (what ties its Instrumentation and Runners together),
	// made by make on the first call: it lives and goes with the
	// scheduler, which knows nothing of it.
	Extension func(make func() any) any
}

// of is the function package scheduler registers.
var of func(s any) *Hooks

// Register sets the function Of calls. Package scheduler calls it in an
// init, and nothing else may.
func Register(f func(s any) *Hooks) { of = f }

// Of returns the hooks of s, a *scheduler.Scheduler[K] of any K, or nil
// when s is none.
func Of(s any) *Hooks {
	if of == nil {
		return nil // package scheduler is not linked in: s cannot be one
	}
	return of(s)
}

// DefaultMaxLinks is the number of enqueue span contexts a scheduler keeps
// per run of a key when its Config.MaxLinks is zero: package otelqueue
// sizes its per-attempt arrays of links by it.
const DefaultMaxLinks = 8
