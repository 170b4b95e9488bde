package scheduler

import "github.com/otelqueue/otelqueue/internal/schedhooks"

// The hooks package otelqueue reaches through internal/schedhooks: what
// code that works beside the queue needs (its clock, its shutdown, a
// compare-and-swap of its Observer, a value of otelqueue's kept with it),
// kept out of the Scheduler's API.
func init() { schedhooks.Register(hooksOf) }

// hooked is every *Scheduler[K], whatever K.
type hooked interface {
	hooks() *schedhooks.Hooks
}

// hooksOf returns the hooks of s, or nil when s is no *Scheduler[K].
func hooksOf(s any) *schedhooks.Hooks {
	if h, ok := s.(hooked); ok {
		return h.hooks()
	}
	return nil
}

func (s *Scheduler[K]) hooks() *schedhooks.Hooks {
	return &schedhooks.Hooks{
		Clock:                  s.clock,
		ShutDownCh:             s.stop,
		CompareAndSwapObserver: s.compareAndSwapObserverAny,
		Extension:              s.extension,
	}
}

// extension returns the value of s's extension, made by make once.
func (s *Scheduler[K]) extension(make func() any) any {
	s.ext.once.Do(func() { s.ext.v = make() })
	return s.ext.v
}

// compareAndSwapObserverAny is compareAndSwapObserver with Observers
// passed as any, as schedhooks.Hooks documents.
func (s *Scheduler[K]) compareAndSwapObserverAny(old, obs any) bool {
	o, ok := old.(Observer[K])
	if !ok && old != nil {
		return false // never installed: it matches nothing
	}
	n, ok := obs.(Observer[K])
	if !ok && obs != nil {
		return false // no Observer of the scheduler's keys: nothing to install
	}
	return s.compareAndSwapObserver(o, n)
}

// compareAndSwapObserver installs obs as SetObserver does, but only if the
// Observer installed is old (nil: none), and reports whether it did. It lets
// instrumentation install itself without replacing an Observer someone else
// installed meanwhile, and remove itself without removing a newer one:
// otelqueue.Instrument and Instrumentation.Stop use it. An old whose dynamic
// type is not comparable (a func, say) matches nothing.
func (s *Scheduler[K]) compareAndSwapObserver(old, obs Observer[K]) bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	if !sameObserver(s.obs, old) {
		return false
	}
	s.setObserverLocked(obs)
	return true
}
