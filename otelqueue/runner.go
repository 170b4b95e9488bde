package otelqueue

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"runtime"
	"runtime/debug"
	"sync"
	"sync/atomic"
	"time"

	"github.com/otelqueue/otelqueue/inspect"

	"go.opentelemetry.io/otel/trace"
	"k8s.io/utils/clock"

	"github.com/otelqueue/otelqueue/internal/loglimit"
	"github.com/otelqueue/otelqueue/internal/schedhooks"
	"github.com/otelqueue/otelqueue/scheduler"
)

// ReconcileFunc processes one key. ctx carries the "reconcile" span, so
// spans started from it are its children. A returned error requeues the key
// through the rate limiter; a panic is recovered and treated as an error.
type ReconcileFunc[K comparable] func(ctx context.Context, key K) (Result, error)

// Runner runs workers that take keys from a scheduler and reconcile them.
// Create one with NewRunner and start it with Run.
type Runner[K comparable] struct {
	queue     *scheduler.Scheduler[K]
	workers   int
	reconcile ReconcileFunc[K]
	counters  *runnerCounters
	binding   *binding     // the queue's: what its Instrumentation reports
	share     *runnerShare // this Runner's workers in binding
	logger    *slog.Logger // nil: slog.Default()
	limiter   *loglimit.Limiter
	started   atomic.Bool // Run was called
	adaptive  *AdaptiveWorkers
	pool      atomic.Pointer[pool] // the adaptive pool while Run runs
}

// RunnerStats are a Runner's numbers.
type RunnerStats struct {
	// Workers is the Runner's configured number of workers, or, with
	// AdaptiveWorkers while Run runs, the pool's current limit.
	Workers int
	// ActiveWorkers is the number of workers processing a key right now.
	ActiveWorkers int
	// Busy is the total time workers have spent processing keys, those in
	// flight included. Its growth over an interval, divided by the interval
	// and by Workers, is the workers' utilization (1 when every worker was
	// busy all the time).
	Busy time.Duration
	// outcomes counts finished reconciles by outcome: Count.
	outcomes [numOutcomes]uint64
}

// Count returns the number of finished reconciles whose outcome is o:
// Count(OutcomeError) is the number that returned an error; 0 for a value
// that is none of the Outcome constants.
func (s RunnerStats) Count(o Outcome) uint64 {
	if o < numOutcomes {
		return s.outcomes[o]
	}
	return 0
}

// Reconciles returns the number of finished reconciles, of every outcome.
func (s RunnerStats) Reconciles() uint64 {
	var n uint64
	for _, c := range s.outcomes {
		n += c
	}
	return n
}

// runnerCounters are one Runner's numbers (Stats); the queue's binding sums
// those of all its Runners for the Instrumentation's metrics.
type runnerCounters struct {
	active   atomic.Int64
	outcomes [numOutcomes]atomic.Uint64
	busy     busyClock
}

// busyClock adds up the time workers spend processing keys, including the
// time so far of those in flight, read consistently.
type busyClock struct {
	clock clock.PassiveClock
	base  time.Time

	mu      sync.Mutex
	done    time.Duration // processing time of the keys finished
	running int64         // keys in flight
	starts  time.Duration // sum of their start times, since base
}

// start records the start of a key's processing and returns its time.
func (b *busyClock) start() time.Duration {
	now := b.clock.Since(b.base)
	b.mu.Lock()
	b.running++
	b.starts += now
	b.mu.Unlock()
	return now
}

// end records the end of the processing that started at started.
func (b *busyClock) end(started time.Duration) {
	now := b.clock.Since(b.base)
	b.mu.Lock()
	b.running--
	b.starts -= started
	b.done += now - started
	b.mu.Unlock()
}

// total returns the busy time so far.
func (b *busyClock) total() time.Duration {
	now := b.clock.Since(b.base)
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.done + time.Duration(b.running)*now - b.starts
}

// NewRunner returns a Runner with the given number of workers. If the queue
// is instrumented (Instrument, before or after NewRunner), the Runner's
// worker count, outcomes and active workers are reported with the queue's
// metrics, summed with those of the queue's other Runners; its workers count
// until its Run returns. It fails
// when queue or reconcile is nil, workers is less than 1 or an option is
// invalid.
func NewRunner[K comparable](queue *scheduler.Scheduler[K], workers int, reconcile ReconcileFunc[K], opts ...RunnerOption) (*Runner[K], error) {
	var errs []error
	if queue == nil {
		errs = append(errs, errors.New("otelqueue: NewRunner needs a scheduler, got nil"))
	}
	if workers < 1 {
		errs = append(errs, fmt.Errorf("otelqueue: NewRunner needs at least 1 worker, got %d", workers))
	}
	if reconcile == nil {
		errs = append(errs, errors.New("otelqueue: NewRunner needs a reconcile function, got nil"))
	}
	c := newRunnerConfig(opts)
	errs = append(errs, c.validate())
	if a := c.adaptive; a != nil && workers >= 1 && a.Min >= 1 && a.Max >= a.Min && (workers < a.Min || workers > a.Max) {
		errs = append(errs, fmt.Errorf("otelqueue: NewRunner's %d workers, the adaptive pool's starting count, are outside AdaptiveWorkers' [Min, Max] = [%d, %d]", workers, a.Min, a.Max))
	}
	if a := c.adaptive; a != nil && a.Start != 0 && a.Start != workers {
		errs = append(errs, fmt.Errorf("otelqueue: AdaptiveWorkers.Start %d differs from NewRunner's %d workers, which are the pool's starting count: leave Start 0 for a Runner", a.Start, workers))
	}
	if err := errors.Join(errs...); err != nil {
		return nil, err
	}
	b := bindingOf(queue)
	r := &Runner[K]{
		queue: queue, workers: workers, reconcile: reconcile,
		counters: &runnerCounters{busy: busyClock{clock: c.clock, base: c.clock.Now()}},
		binding:  b, share: newRunnerShare(b, workers),
		logger: c.logger, limiter: loglimit.New(c.clock, c.logBurst, c.logInterval),
		adaptive: c.adaptive,
	}
	// A Runner that is never run gives its workers back when collected.
	runtime.AddCleanup(r, (*runnerShare).release, r.share)
	return r, nil
}

// Stats returns the Runner's numbers.
func (r *Runner[K]) Stats() RunnerStats {
	c := r.counters
	workers := r.workers
	if p := r.pool.Load(); p != nil {
		workers = int(p.limit.Load())
	}
	st := RunnerStats{
		Workers:       workers,
		ActiveWorkers: int(c.active.Load()),
		Busy:          c.busy.total(),
	}
	for o := range c.outcomes {
		st.outcomes[o] = c.outcomes[o].Load()
	}
	return st
}

// Run starts the workers and blocks until ctx is done. Then its workers stop
// taking keys (one that wakes for a key at that very moment may still take
// it; its reconcile sees the cancelled ctx), Run waits for every reconcile in
// flight to return (their ctx, derived from ctx, is cancelled too) and shuts
// the queue down, as a controller-runtime controller does. It returns nil
// after a graceful stop, and also when the queue is shut down under it.
//
// A Runner runs once: Run fails when it was called before (concurrently or
// not), when the queue is already shut down, and when ctx is nil. With
// AdaptiveWorkers it also fails, and may be called again once that is
// fixed, when the queue is not instrumented or has an adaptive pool
// already.
//
// A reconcile that returns an error or panics is logged, as
// controller-runtime does, as an error "Reconciler error" with the queue,
// the key, the error (and a panic's stack trace) and the attempt's trace_id
// and span_id, to WithLogger's logger, within WithLogRateLimit's limit. A
// reconcile that calls runtime.Goexit is counted as a panic and its worker
// is replaced, so the Runner keeps its number of workers.
func (r *Runner[K]) Run(ctx context.Context) error {
	if r == nil {
		return errors.New("otelqueue: Run on a nil Runner: make one with NewRunner")
	}
	if ctx == nil {
		return errors.New("otelqueue: Run needs a context, got nil: pass one that is cancelled to stop the Runner")
	}
	if !r.started.CompareAndSwap(false, true) {
		return errors.New("otelqueue: Run was called more than once: a Runner runs once (it shuts its queue down when it stops); make a new queue and a new Runner to run again")
	}
	var p *pool
	if a := r.adaptive; a != nil {
		var err error
		if p, err = r.startPool(*a); err != nil {
			// Nothing started: Run may be called again once the cause is
			// fixed (the queue instrumented, the other pool gone).
			r.started.Store(false)
			return err
		}
		defer func() {
			p.detach()
			r.pool.Store(nil)
		}()
	}
	defer r.share.release()
	if r.queue.ShuttingDown() {
		return fmt.Errorf("otelqueue: Run on queue %q, which is already shut down and hands out no more keys: make a new queue and a new Runner", r.queue.Name())
	}
	wctx := ctx
	if r.logger != nil {
		wctx = context.WithValue(ctx, loggerKey{}, r.logger) // for LoggerFromContext
	}
	var wg sync.WaitGroup
	if p != nil {
		// As many goroutines as the pool lets take keys, and more as it
		// grows, up to Max: a Max of 50,000 starts 50,000 only if the
		// load asks for them.
		var mu sync.Mutex
		started, most := 0, r.adaptive.Max
		grow := func(n int) {
			mu.Lock()
			defer mu.Unlock()
			for ; started < min(n, most) && ctx.Err() == nil; started++ {
				r.startWorker(wctx, &wg)
			}
		}
		shutDown := schedhooks.Of(r.queue).ShutDownCh
		wg.Go(func() { p.run(ctx.Done(), shutDown, nil) }) // stops with the workers
		p.mu.Lock()
		p.grow = grow
		p.mu.Unlock()
		grow(int(p.limit.Load()))
	} else {
		for range r.workers {
			r.startWorker(wctx, &wg)
		}
	}
	wg.Wait()
	r.queue.ShutDownWithDrain()
	return nil
}

// startPool attaches the Runner's adaptive pool to its queue, starting at
// the Runner's worker count, with the Runner's logger.
func (r *Runner[K]) startPool(a AdaptiveWorkers) (*pool, error) {
	if r.binding.client.Load() == nil {
		return nil, fmt.Errorf("otelqueue: Run with AdaptiveWorkers: queue %q %w", r.queue.Name(), errNotInstrumented)
	}
	logger := func() *slog.Logger {
		switch {
		case a.Logger != nil:
			return a.Logger
		case r.logger != nil:
			return r.logger
		}
		return slog.Default()
	}
	p := newPool(r.queue, r.binding, a, a.Min, a.Max, r.workers, logger)
	p.fallback = r.workers
	if err := p.attach(); err != nil {
		return nil, err
	}
	r.pool.Store(p)
	return p, nil
}

// inspect.Pool returns the state of the Runner's adaptive pool, and false
// when it has none (no AdaptiveWorkers) or Run is not running.
func (r *Runner[K]) AdaptiveStats() (inspect.Pool, bool) {
	if r == nil {
		return inspect.Pool{}, false
	}
	p := r.pool.Load()
	if p == nil {
		return inspect.Pool{}, false
	}
	return p.Stats(), true
}

// startWorker starts a worker, and starts another in its place if a
// reconcile ends the worker's goroutine with runtime.Goexit.
func (r *Runner[K]) startWorker(ctx context.Context, wg *sync.WaitGroup) {
	wg.Go(func() {
		exited := true
		defer func() {
			if exited { // runtime.Goexit: this goroutine is still counted by wg, so wg.Go is safe
				r.startWorker(ctx, wg)
			}
		}()
		r.work(ctx)
		exited = false
	})
}

func (r *Runner[K]) work(ctx context.Context) {
	for ctx.Err() == nil {
		it, err := r.queue.GetContext(ctx)
		if err != nil {
			return
		}
		r.process(&it)
	}
}

// process reconciles one item; status, metrics, logs and the queue's
// bookkeeping are finalised in one deferred function, whether the reconcile
// returned, panicked or called runtime.Goexit.
func (r *Runner[K]) process(it *scheduler.Item[K]) {
	ctx := it.Context()
	c, b := r.counters, r.binding
	c.active.Add(1)
	b.active.Add(1)
	started := c.busy.start()
	var (
		res      Result
		err      error
		panicked = true
	)
	defer func() {
		c.busy.end(started)
		var outcome Outcome
		var stack []byte
		if panicked {
			stack = debug.Stack()
			perr := NewPanicError(recover(), stack)
			err = fmt.Errorf("otelqueue: reconcile of %v %w", it.Key, perr)
			if perr.Goexit {
				err = fmt.Errorf("%w: counted as a panic, and its worker was replaced", err)
			}
			outcome = OutcomePanic
		} else {
			outcome = Classify(res, err)
		}
		switch outcome {
		case OutcomeError, OutcomePanic, OutcomeRequeue:
			r.queue.AddRateLimited(it.Key)
		case OutcomeRequeueAfter:
			r.queue.Forget(it.Key)
			r.queue.AddAfter(it.Key, res.RequeueAfter)
		default:
			r.queue.Forget(it.Key)
		}
		RecordOutcome(trace.SpanFromContext(ctx), outcome, err)
		c.outcomes[outcome].Add(1)
		b.outcomes[outcome].Add(1)
		if err != nil {
			r.logError(ctx, it.Key, err, stack)
			b.failures.add(failure(ctx, keyString(it.Key), outcome, err, c.busy.clock.Now()))
		}
		c.active.Add(-1)
		b.active.Add(-1)
		r.queue.Done(it.Key)
	}()
	res, err = r.reconcile(ctx, it.Key)
	err = safeError(err)
	panicked = false
}
