package scheduler

import (
	"errors"
	"fmt"
	"math"
	"time"

	"github.com/otelqueue/otelqueue/internal/schedhooks"

	"k8s.io/client-go/util/workqueue"
	"k8s.io/utils/clock"
)

// defaultMaxLinks is the number of enqueue span contexts kept per run of a
// key when Config.MaxLinks is zero: 8.
const defaultMaxLinks = schedhooks.DefaultMaxLinks

// Config configures a [Scheduler]. The zero Config works: an unnamed queue on
// the real clock with client-go's default controller rate limiter, no
// debounce, and up to 8 enqueue span contexts kept per key.
//
// New never fails and never panics on a bad Config: it replaces every invalid
// field as documented on that field. Call [Config.Validate] first to reject
// such a Config instead.
type Config[K comparable] struct {
	// Name names the queue. Instrumentation reports it as the "name"
	// attribute. A named queue reads the clock on every Add, Get and Done so
	// that Stats reports ages; an unnamed queue with no Observer does not,
	// like client-go's unnamed queues.
	Name string

	// Clock drives delays, backoff, debounce and every timestamp. Nil means
	// the real clock. Tests inject k8s.io/utils/clock/testing.FakeClock.
	Clock clock.WithTicker

	// RateLimiter decides the delay of AddRateLimited and keeps the failure
	// counts behind NumRequeues and Forget. Nil means
	// workqueue.DefaultTypedControllerRateLimiter. A negative delay from it
	// is treated as zero.
	RateLimiter workqueue.TypedRateLimiter[K]

	// MaxLinks bounds the valid enqueue span contexts kept per run of a key
	// (Item.Origin and Item.Links together); further ones are only counted
	// (Item.DroppedLinks). Zero means 8. A negative value keeps
	// no span context at all; every one is counted as dropped.
	MaxLinks int

	// Debounce, when positive, delays every Add and AddContext of a key that
	// is not yet pending by this window, and pushes the run back by another
	// window on every further Add while it waits, so a burst of changes runs
	// once, a window after its last add. The run is never pushed later than
	// DebounceMaxWait after the first pending add, nor later than a time asked
	// for with AddAfter. AddAfter, AddRateLimited and adds to a key that is
	// already ready are not debounced. Zero disables debouncing; a negative
	// value is treated as zero.
	Debounce time.Duration

	// DebounceMaxWait bounds how long debouncing may defer a key that keeps
	// changing: it runs at least once per DebounceMaxWait after its first
	// pending add. Zero means 10 × Debounce; a value below Debounce
	// (negative included) is raised to Debounce.
	DebounceMaxWait time.Duration

	// StopOnShutDown makes Get and its variants hand out no key once
	// ShutDown or ShutDownWithDrain has been called, even keys still ready
	// or held, as controller-runtime's priority queue does: a stopping
	// controller does not reconcile them with a cancelled context. Runs in
	// flight are unaffected (ShutDownWithDrain still waits for them). By
	// default, as client-go, workers keep getting the ready keys until none
	// is left.
	StopOnShutDown bool

	// OrderByAdd keeps a key added again in the place of its add: in line
	// at once when added during its run, and in the place of its first add
	// when a delayed key is added again with no delay. It is how
	// controller-runtime's priority queue orders keys where it differs from
	// client-go's queue (docs/scheduler.md has a table of both; package
	// controllerruntime sets it):
	//   - A key added while its previous run is in flight joins the queue at
	//     once: Len, Stats().Depth and DepthByPriority count it (at its
	//     priority), a delay asked for runs from the add, and once Done ends
	//     the run in flight it is handed out in the order it was added
	//     relative to other keys. By default, as client-go's queue, it is
	//     held (Stats().Held) out of sight until Done, then goes behind the
	//     keys added meanwhile. Either way a key is never handed out while
	//     it is processed, and its wait reason is WaitHeld when it waited
	//     for its previous run.
	//   - A delayed key added again with no delay becomes ready in the place
	//     of its first add among the keys of its priority; by default, at
	//     the end.
	OrderByAdd bool
}

// Validate reports every field of c that New would have to replace, joined in
// one error, or nil when c is used as it is.
func (c Config[K]) Validate() error {
	var errs []error
	if c.MaxLinks < 0 {
		errs = append(errs, fmt.Errorf("scheduler: MaxLinks is %d: use 0 for the default (%d) or a positive bound; a negative value disables links", c.MaxLinks, defaultMaxLinks))
	}
	if c.Debounce < 0 {
		errs = append(errs, fmt.Errorf("scheduler: Debounce is %v: use a positive window, or 0 to disable debouncing", c.Debounce))
	}
	if c.DebounceMaxWait < 0 {
		errs = append(errs, fmt.Errorf("scheduler: DebounceMaxWait is %v: use 0 for 10 × Debounce or a duration of at least Debounce", c.DebounceMaxWait))
	} else if c.Debounce > 0 && c.DebounceMaxWait > 0 && c.DebounceMaxWait < c.Debounce {
		errs = append(errs, fmt.Errorf("scheduler: DebounceMaxWait (%v) is shorter than Debounce (%v): it must be at least Debounce", c.DebounceMaxWait, c.Debounce))
	}
	return errors.Join(errs...)
}

// settings are the normalised values the scheduler runs with.
type settings struct {
	maxLinks        int // < 0: keep none
	debounce        int64
	debounceMaxWait int64
	stopOnShutDown  bool
	crOrder         bool
}

// settings returns the values the scheduler runs with, c's invalid fields
// replaced as Config documents.
func (c Config[K]) settings() settings {
	s := settings{maxLinks: c.MaxLinks, stopOnShutDown: c.StopOnShutDown, crOrder: c.OrderByAdd}
	if s.maxLinks == 0 {
		s.maxLinks = defaultMaxLinks
	}
	if c.Debounce > 0 {
		s.debounce = int64(c.Debounce)
		switch {
		case c.DebounceMaxWait == 0:
			s.debounceMaxWait = math.MaxInt64 // 10 × Debounce, saturated
			if s.debounce <= math.MaxInt64/10 {
				s.debounceMaxWait = 10 * s.debounce
			}
		case c.DebounceMaxWait < c.Debounce:
			s.debounceMaxWait = s.debounce
		default:
			s.debounceMaxWait = int64(c.DebounceMaxWait)
		}
	}
	return s
}
