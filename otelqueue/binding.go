package otelqueue

import (
	"sync/atomic"
	"time"

	"github.com/otelqueue/otelqueue/internal/clientwork"
	"github.com/otelqueue/otelqueue/internal/program"
	"github.com/otelqueue/otelqueue/internal/schedhooks"
	"github.com/otelqueue/otelqueue/internal/semconv"

	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/metric"

	"github.com/otelqueue/otelqueue/bottleneck"
	"github.com/otelqueue/otelqueue/scheduler"
)

// binding holds what the Runners of one scheduler report through its
// Instrumentation, summed over every Runner of the scheduler: Instrument
// and NewRunner both find it through bindingOf, so the numbers are
// reported however the two calls are ordered, and two Runners of one queue
// add up.
//
// The scheduler holds it as an opaque value; the
// Instrumentation itself is installed as the scheduler's Observer, with a
// compare-and-swap (Instrument).
type binding struct {
	// workers is the sum of the worker counts of the scheduler's Runners
	// that have not stopped: added by NewRunner, removed when Run returns or
	// the Runner is collected without running.
	workers   atomic.Int64
	hasRunner atomic.Bool // a Runner was made for the scheduler
	active    atomic.Int64
	outcomes  [numOutcomes]atomic.Uint64

	// client is the client instruments of the scheduler's live
	// Instrumentation, nil when it has none: an adaptive pool decides only
	// while it is set.
	client atomic.Pointer[clientInstruments]
	// pool is the scheduler's adaptive worker pool, nil when it has none.
	pool atomic.Pointer[pool]
	// standby is the standby state of the scheduler's live
	// Instrumentation (WithStandby), nil when it has none.
	standby atomic.Pointer[standby]
	// failures are the last failed attempts, for the Inspector.
	failures failureLog
	// program is the state shared by the instrumentations of the
	// MeterProvider of the scheduler's last Instrumentation (its clients'
	// API round trips), nil before one.
	program atomic.Pointer[program.State]
}

// server reads the API round trips of b's program at now: none before an
// Instrumentation.
func (b *binding) server(now time.Time) bottleneck.APIServerCounters {
	return clientwork.Server(now, b.program.Load())
}

// bindingOf returns the binding of s, created on first use. The scheduler
// holds it (internal/schedhooks.Hooks.Extension), and it goes with the
// scheduler: it holds nothing that refers to it.
func bindingOf[K comparable](s *scheduler.Scheduler[K]) *binding {
	return schedhooks.Of(s).Extension(func() any { return new(binding) }).(*binding)
}

// runnerShare is one Runner's part of its binding's worker count, released
// once: when Run returns, or when the Runner is collected without having
// run (runtime.AddCleanup).
type runnerShare struct {
	b        *binding
	workers  int64
	released atomic.Bool
}

func newRunnerShare(b *binding, workers int) *runnerShare {
	b.workers.Add(int64(workers))
	b.hasRunner.Store(true)
	return &runnerShare{b: b, workers: int64(workers)}
}

func (r *runnerShare) release() {
	if r.released.CompareAndSwap(false, true) {
		r.b.workers.Add(-r.workers)
	}
}

// runnerAttrs are the attribute sets of the Runners' metrics of one
// Instrumentation, made once.
type runnerAttrs struct {
	queue     metric.ObserveOption
	byOutcome [numOutcomes]metric.ObserveOption
	byReason  map[poolReason]metric.ObserveOption // read only once made
}

func newRunnerAttrs(queue attribute.Set) *runnerAttrs {
	a := &runnerAttrs{queue: metric.WithAttributeSet(queue), byReason: make(map[poolReason]metric.ObserveOption, len(reasons))}
	for o, attr := range outcomeAttrs {
		a.byOutcome[o] = metric.WithAttributeSet(attribute.NewSet(append(queue.ToSlice(), attr)...))
	}
	for _, r := range reasons {
		a.byReason[r] = metric.WithAttributeSet(attribute.NewSet(append(queue.ToSlice(), semconv.AttrReason.String(string(r)))...))
	}
	return a
}

// observe reports the Runners' numbers, once the scheduler has had a
// Runner, and the adaptive pool's changes, and returns the worker count:
// the pool's limit, or the sum of the Runners not stopped.
func (b *binding) observe(o metric.Observer, in *instruments, a *runnerAttrs) int64 {
	if p := b.pool.Load(); p != nil {
		p.observeChanges(o, in.workersChanges, a.byReason)
	}
	if b.hasRunner.Load() {
		o.ObserveInt64(in.activeWorkers, b.active.Load(), a.queue)
		for i := range b.outcomes {
			o.ObserveInt64(in.results, int64(b.outcomes[i].Load()), a.byOutcome[i])
		}
	}
	return b.workerCount()
}

// workerCount is the queue's worker count as its Runners and pool know it:
// the adaptive pool's limit, which gates every Runner of the queue, else
// the Runners' workers; 0 when it has neither.
func (b *binding) workerCount() int64 {
	if p := b.pool.Load(); p != nil {
		return p.limit.Load()
	}
	if b.hasRunner.Load() {
		return b.workers.Load()
	}
	return 0
}
