package scheduler

import (
	"errors"
	"math"
	"sync"
	"time"

	"k8s.io/client-go/util/workqueue"
	"k8s.io/utils/clock"

	"github.com/otelqueue/otelqueue/internal/schedhooks"
)

// ErrShutDown is returned by GetContext when the queue has been shut down and
// holds no more ready keys.
var ErrShutDown = errors.New("scheduler: the queue is shut down")

// never is a ready time that never comes: the delay loop's timer when no key
// is delayed, and the end of a delay beyond the clock's range.
const never = math.MaxInt64

// Scheduler is a deduplicating, delaying, rate-limiting work queue of keys of
// type K. Create one with [New]; all methods are safe for concurrent use.
//
// It implements workqueue.TypedRateLimitingInterface[K] with client-go's
// semantics; see the package documentation.
type Scheduler[K comparable] struct {
	mu      sync.Mutex
	cond    sync.Cond // signalled when a key becomes ready or the queue shuts down
	drained sync.Cond // signalled when the last run in flight is done

	clock clock.WithTicker
	base  time.Time
	// ext is the value package otelqueue keeps in the scheduler
	// (internal/schedhooks.Hooks.Extension).
	ext struct {
		once sync.Once
		v    any
	}
	name string
	rl   workqueue.TypedRateLimiter[K]
	set  settings

	entries map[K]*entry[K]
	ready   readyQueue[K]
	delayed delayHeap[K]
	// order numbers the pushes into the ready and the delay queues: keys
	// of one priority are handed out, and keys due at one instant made
	// ready, in that order (see nextOrder).
	order    uint64
	held     int        // pending runs of keys in flight, to start after their Done
	inflight runList[K] // runs handed to workers and not yet Done
	// maxInFlight, when positive, is the most runs handed out at once
	// (SetMaxInFlight); 0: no limit.
	maxInFlight int
	freeEntries []*entry[K]
	freeProcs   []*proc[K]

	adds, retries, coalesced uint64
	delayedAdds              uint64 // of retries: the adds of kind addDelayed
	// finished counts the runs ended by Done, busy sums their run time
	// (ns; in a timed queue only, for Stats.Busy).
	finished uint64
	busy     int64

	obs       Observer[K]
	timed     bool
	wallClock bool // obs wants times against a fresh wall-clock reading
	changes   bool // obs asks for changes (see change.go)
	// durations is obs when it takes the durations-only path
	// (schedhooks.DurationObserver), else nil.
	durations schedhooks.DurationObserver

	shuttingDown bool
	drain        bool

	// The delay loop: one goroutine and one timer for every delayed key,
	// started with the first delayed key.
	loopStarted bool
	armed       int64 // ready time the loop's timer is set for, or never
	kick        chan struct{}
	stop        chan struct{}
	wg          sync.WaitGroup
}

var _ workqueue.TypedRateLimitingInterface[string] = (*Scheduler[string])(nil)

// New returns a Scheduler configured by cfg. The zero Config works; invalid
// fields are replaced as Config documents (see Config.Validate).
func New[K comparable](cfg Config[K]) *Scheduler[K] {
	s := &Scheduler[K]{
		clock:   cfg.Clock,
		name:    cfg.Name,
		rl:      cfg.RateLimiter,
		set:     cfg.settings(),
		entries: make(map[K]*entry[K]),
		armed:   never,
		kick:    make(chan struct{}, 1),
		stop:    make(chan struct{}),
	}
	if s.clock == nil {
		s.clock = clock.RealClock{}
	}
	if s.rl == nil {
		s.rl = workqueue.DefaultTypedControllerRateLimiter[K]()
	}
	s.base = s.clock.Now()
	s.cond.L = &s.mu
	s.drained.L = &s.mu
	s.timed = s.name != ""
	return s
}

// Name returns the queue's name from Config.Name.
func (s *Scheduler[K]) Name() string { return s.name }

// now returns the clock's time as nanoseconds since the scheduler's base time.
// Since reads only the monotonic clock, which is cheaper than Now.
func (s *Scheduler[K]) now() int64 { return int64(s.clock.Since(s.base)) }

// at returns the time t ns after the scheduler's base time.
func (s *Scheduler[K]) at(t int64) time.Time { return s.base.Add(time.Duration(t)) }

// addSat returns t+d saturated at never, instead of wrapping around into the
// past for a delay beyond the clock's range.
func addSat(t, d int64) int64 {
	if d > 0 && t > never-d {
		return never
	}
	return t + d
}

// nextOrder returns the order of a key pushed now into the ready or the
// delay queue: after every key pushed before.
func (s *Scheduler[K]) nextOrder() uint64 {
	s.order++
	return s.order
}
