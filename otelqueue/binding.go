package otelqueue

import (
	"runtime"
	"sync"
	"sync/atomic"
	"weak"

	"github.com/otelqueue/otelqueue/scheduler"
)

// binding is what the Instrumentation and the Runner of one scheduler share,
// whichever of them was made first: Instrument and NewRunner both find it
// through bindingOf, so the Runner's numbers are reported however the two
// calls are ordered.
type binding struct {
	// mu serializes the installation and removal of the scheduler's
	// Observer by this package (Instrument, Stop, the end of a drain), so
	// that one never removes an Observer another just installed.
	mu sync.Mutex
	// instrumented is set while an Instrumentation of the scheduler is live
	// (from Instrument to Stop), under mu.
	instrumented bool
	// runner holds the counters of the Runner made last for the scheduler.
	runner atomic.Pointer[runnerCounters]
}

// bindings maps weak pointers to schedulers (weak.Pointer[scheduler.Scheduler[K]],
// for every K in use) to their *binding. A binding holds nothing that refers
// to its scheduler, so the map does not keep schedulers alive; the entry is
// deleted when its scheduler is collected.
var bindings sync.Map

// bindingOf returns the binding of s, created on first use.
func bindingOf[K comparable](s *scheduler.Scheduler[K]) *binding {
	key := weak.Make(s)
	if b, ok := bindings.Load(key); ok {
		return b.(*binding)
	}
	b, loaded := bindings.LoadOrStore(key, new(binding))
	if !loaded {
		runtime.AddCleanup(s, func(key weak.Pointer[scheduler.Scheduler[K]]) { bindings.Delete(key) }, key)
	}
	return b.(*binding)
}
