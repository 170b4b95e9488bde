package scheduler

import (
	"context"
	"errors"
	"math"
	"sync"
	"sync/atomic"
	"time"

	"go.opentelemetry.io/otel/trace"
	"k8s.io/client-go/util/workqueue"
	"k8s.io/utils/clock"
)

// ErrShutDown is returned by GetContext when the queue has been shut down and
// holds no more ready keys.
var ErrShutDown = errors.New("scheduler: the queue is shut down")

// maxFree bounds the recycled entries and runs kept after a burst.
const maxFree = 1024

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
	name  string
	rl    workqueue.TypedRateLimiter[K]
	set   settings

	entries  map[K]*entry[K]
	ready    readyQueue[K]
	delayed  delayHeap[K]
	held     int
	inflight struct {
		head, tail *proc
		n          int
		startSum   int64
	}
	freeEntries []*entry[K]
	freeProcs   []*proc
	freeItems   []*Item[K]

	adds, retries, coalesced uint64

	obs       Observer[K]
	timed     bool
	wallClock bool // obs wants times against a fresh wall-clock reading

	shuttingDown bool
	drain        bool

	// The delay loop: one goroutine and one timer for every delayed key,
	// started with the first delayed key.
	loopStarted bool
	armed       int64 // ready time the loop's timer is set for, or never
	kick        chan struct{}
	stop        chan struct{}
	wg          sync.WaitGroup

	stats statsCell
	// statsOn tells operations to publish into stats: from the first Stats
	// call, or from the start for a named or observed queue. A bare queue
	// that nobody asks for numbers pays nothing for them.
	statsOn atomic.Bool
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
	s.stats.v.timed = s.timed
	s.statsOn.Store(s.timed)
	return s
}

// Name returns the queue's name from Config.Name.
func (s *Scheduler[K]) Name() string { return s.name }

// SetObserver installs obs (nil removes it). Install it before the queue is
// used: keys added earlier carry no times when the queue was unnamed. With an
// Observer installed the queue reads the clock on every Add, Get and Done.
func (s *Scheduler[K]) SetObserver(obs Observer[K]) {
	s.mu.Lock()
	s.obs = obs
	s.timed = s.name != "" || obs != nil
	s.wallClock = obs != nil
	if w, ok := obs.(WallClockObserver[K]); ok {
		s.wallClock = w.NeedsWallClock()
	}
	if s.timed {
		s.statsOn.Store(true)
	}
	s.publishLocked()
	s.mu.Unlock()
}

// Observer returns the Observer installed with SetObserver, or nil.
func (s *Scheduler[K]) Observer() Observer[K] {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.obs
}

// now returns the clock's time as nanoseconds since the scheduler's base time.
// Since reads only the monotonic clock, which is cheaper than Now.
func (s *Scheduler[K]) now() int64 { return int64(s.clock.Since(s.base)) }

func (s *Scheduler[K]) at(t int64) time.Time { return s.base.Add(time.Duration(t)) }

// addSat returns t+d saturated at never, instead of wrapping around into the
// past for a delay beyond the clock's range.
func addSat(t, d int64) int64 {
	if d > 0 && t > never-d {
		return never
	}
	return t + d
}

// Add marks key as needing processing, at once (or after the debounce
// window, see Config.Debounce). Adds after ShutDown are ignored.
func (s *Scheduler[K]) Add(key K) { s.enqueue(key, trace.SpanContext{}, 0, addPlain) }

// AddContext is Add that also remembers the span context of ctx, if valid,
// so that the run of key links to (or is parented by) the caller's trace.
func (s *Scheduler[K]) AddContext(ctx context.Context, key K) {
	s.enqueue(key, trace.SpanContextFromContext(ctx), 0, addPlain)
}

// AddAfter adds key once delay has passed. A key already pending keeps the
// earlier of its ready time and now+delay. A delay of zero or less adds at
// once, without debouncing.
func (s *Scheduler[K]) AddAfter(key K, delay time.Duration) {
	s.enqueue(key, trace.SpanContext{}, delay, addDelayed)
}

// AddAfterContext is AddAfter that remembers the span context of ctx.
func (s *Scheduler[K]) AddAfterContext(ctx context.Context, key K, delay time.Duration) {
	s.enqueue(key, trace.SpanContextFromContext(ctx), delay, addDelayed)
}

// AddRateLimited adds key after the delay the RateLimiter gives it, usually
// to retry it after an error. Called while key is being processed (the usual
// case), it also makes the next run link to the current one (see
// Item.PreviousAttempt).
func (s *Scheduler[K]) AddRateLimited(key K) {
	s.addRateLimited(key, trace.SpanContext{})
}

// AddRateLimitedContext is AddRateLimited that remembers the span context of
// ctx.
func (s *Scheduler[K]) AddRateLimitedContext(ctx context.Context, key K) {
	s.addRateLimited(key, trace.SpanContextFromContext(ctx))
}

func (s *Scheduler[K]) addRateLimited(key K, sc trace.SpanContext) {
	if s.ShuttingDown() {
		return
	}
	d := s.rl.When(key)
	s.enqueueRequeue(key, sc, d, addRateLimited, s.rl.NumRequeues(key), 0)
}

// AddOptions are the options of AddWithOptions, as controller-runtime's
// priorityqueue.AddOpts.
type AddOptions struct {
	// After delays the keys, as AddAfter.
	After time.Duration
	// RateLimited delays the keys by the RateLimiter, as AddRateLimited;
	// with After also set, the shorter delay wins.
	RateLimited bool
	// Priority orders ready keys: a higher priority is handed out first,
	// keys of one priority in the order they became ready. A pending key
	// keeps the highest priority it was added with; raising the priority of
	// a ready key moves it to the end of its new priority. Plain adds have
	// priority 0. Priorities beyond the int32 range are clamped to it.
	Priority int
}

// AddWithOptions adds keys with opts, keeping the span context of ctx as
// AddContext does.
func (s *Scheduler[K]) AddWithOptions(ctx context.Context, opts AddOptions, keys ...K) {
	sc := trace.SpanContextFromContext(ctx)
	for _, key := range keys {
		delay, kind, requeues := opts.After, addPlain, 0
		if delay > 0 {
			kind = addDelayed
		}
		if opts.RateLimited {
			if s.ShuttingDown() {
				return
			}
			if d := s.rl.When(key); delay <= 0 || d < delay {
				delay = d
			}
			kind, requeues = addRateLimited, s.rl.NumRequeues(key)
		}
		s.enqueueRequeue(key, sc, delay, kind, requeues, opts.Priority)
	}
}

// Forget tells the RateLimiter to stop tracking key's failures. It does not
// remove key from the queue; Done must still be called.
func (s *Scheduler[K]) Forget(key K) { s.rl.Forget(key) }

// NumRequeues returns the RateLimiter's failure count for key.
func (s *Scheduler[K]) NumRequeues(key K) int { return s.rl.NumRequeues(key) }

type addKind uint8

const (
	addPlain addKind = iota
	addDelayed
	addRateLimited
)

func (s *Scheduler[K]) enqueue(key K, sc trace.SpanContext, delay time.Duration, kind addKind) {
	s.enqueueRequeue(key, sc, delay, kind, 0, 0)
}

// enqueueRequeue adds key at priority prio; requeues is the rate limiter's
// failure count for rate-limited adds.
func (s *Scheduler[K]) enqueueRequeue(key K, sc trace.SpanContext, delay time.Duration, kind addKind, requeues, priority int) {
	prio := clampPriority(priority)
	s.mu.Lock()
	if s.shuttingDown {
		s.mu.Unlock()
		return
	}
	if kind != addPlain {
		s.retries++
	}
	debounce := kind == addPlain && s.set.debounce > 0
	immediate := delay <= 0 && !debounce
	var now int64
	if s.timed || !immediate {
		now = s.now()
		if len(s.delayed) > 0 && s.delayed[0].at <= now {
			s.promoteLocked(now)
		}
	}

	// The ready time this add asks for, and why.
	reason := WaitImmediate
	target := now
	switch {
	case debounce:
		reason = WaitDebounced
	case !immediate && kind == addRateLimited:
		reason, target = WaitRateLimited, addSat(now, int64(delay))
	case !immediate:
		reason, target = WaitDelayed, addSat(now, int64(delay))
	}

	e, ok := s.entries[key]
	if !ok {
		e = s.newEntry(key)
		s.entries[key] = e
	}
	signal := false
	if !e.pending {
		// A new pending run.
		s.adds++
		e.pending = true
		e.enqueued = now
		e.coalesced = 0
		if s.set.debounce > 0 {
			x := e.extras()
			x.deadline, x.hasDeadline = addSat(now, s.set.debounceMaxWait), true
		}
		if debounce {
			target = min(addSat(now, s.set.debounce), e.x.deadline)
			e.debounced = true
		} else if !immediate && e.x != nil && e.x.hasDeadline {
			e.x.deadline = min(e.x.deadline, target)
		}
		e.readyAt, e.reason = target, reason
		e.prio = prio
		if e.processing {
			s.held++
		} else if immediate {
			s.ready.push(e)
			signal = true
		} else {
			s.delayLocked(e)
		}
	} else {
		s.coalesced++
		if e.coalesced < math.MaxInt32 {
			e.coalesced++
		}
		if prio > e.prio {
			if e.place == inReady {
				s.ready.raise(e, prio)
			} else {
				e.prio = prio
			}
		}
		if e.place != inReady {
			s.moveLocked(e, target, reason, debounce, immediate, now)
			if e.place == inDelay && e.readyAt <= now {
				s.delayed.remove(int(e.heapIdx))
				s.ready.push(e)
				signal = true
			}
		}
	}
	e.addSpan(sc, s.set.maxLinks)
	if kind == addRateLimited && e.processing && e.proc.ctx != nil {
		if prev := trace.SpanContextFromContext(e.proc.ctx); prev.IsValid() {
			e.extras().previous = prev
		}
	}
	if requeues > 0 {
		e.extras().requeues = requeues
	}
	s.publishLocked()
	s.mu.Unlock()
	if signal {
		s.cond.Signal()
	}
}

// moveLocked applies the ready time asked for by a further add to a pending
// run that is delayed or held: the earliest time wins, except that a
// debounced add may push a debounced run later, up to its deadline.
func (s *Scheduler[K]) moveLocked(e *entry[K], target int64, reason WaitReason, debounce, immediate bool, now int64) {
	old := e.readyAt
	switch {
	case debounce:
		t := min(addSat(now, s.set.debounce), e.x.deadline)
		if e.debounced || t < e.readyAt {
			e.readyAt, e.reason, e.debounced = t, WaitDebounced, true
		}
	default:
		if e.x != nil && e.x.hasDeadline {
			e.x.deadline = min(e.x.deadline, target)
		}
		if target < e.readyAt || immediate {
			e.readyAt, e.reason, e.debounced = target, reason, false
		}
	}
	// A key now due is taken out of the heap by the caller; only a key that
	// stays delayed needs the heap fixed and the loop armed.
	if e.place == inDelay && e.readyAt != old && e.readyAt > now {
		s.delayed.fix(int(e.heapIdx))
		s.armLocked(e.readyAt)
	}
}

// delayLocked puts e into the delay heap and makes sure the delay loop wakes
// up in time for it.
func (s *Scheduler[K]) delayLocked(e *entry[K]) {
	e.place = inDelay
	s.delayed.push(e)
	s.armLocked(e.readyAt)
}

func (s *Scheduler[K]) armLocked(t int64) {
	if !s.loopStarted {
		s.loopStarted = true
		s.wg.Add(1)
		go s.delayLoop()
	}
	if t < s.armed {
		s.armed = t
		select {
		case s.kick <- struct{}{}:
		default:
		}
	}
}

// promoteLocked moves every delayed key whose ready time has come to the
// ready FIFO, in ready-time order.
func (s *Scheduler[K]) promoteLocked(now int64) {
	n := 0
	for len(s.delayed) > 0 && s.delayed[0].at <= now {
		e := s.delayed.remove(0)
		s.ready.push(e)
		n++
	}
	switch {
	case n == 1:
		s.cond.Signal()
	case n > 1:
		s.cond.Broadcast()
	}
}

func (s *Scheduler[K]) delayLoop() {
	defer s.wg.Done()
	var timer clock.Timer
	defer func() {
		if timer != nil {
			timer.Stop()
		}
	}()
	for {
		s.mu.Lock()
		if s.shuttingDown {
			s.mu.Unlock()
			return
		}
		wait := time.Duration(-1)
		s.armed = never
		if len(s.delayed) > 0 {
			now := s.now()
			s.promoteLocked(now)
			if len(s.delayed) > 0 {
				s.armed = s.delayed[0].at
				wait = time.Duration(s.armed - now)
			}
			s.publishLocked()
		}
		s.mu.Unlock()

		var fired <-chan time.Time
		if wait >= 0 {
			if timer == nil {
				timer = s.clock.NewTimer(wait)
			} else {
				// Drain a tick that fired while the loop woke for a kick:
				// testing.FakeClock.Step blocks, holding the clock, on a
				// re-armed timer whose channel is full.
				if !timer.Stop() {
					select {
					case <-timer.C():
					default:
					}
				}
				timer.Reset(wait)
			}
			fired = timer.C()
		} else if timer != nil {
			timer.Stop()
		}
		select {
		case <-fired:
		case <-s.kick:
		case <-s.stop:
			return
		}
	}
}

// Len returns the number of keys ready and waiting for a worker, as
// client-go's Len does. Like client-go's, it is for information only.
func (s *Scheduler[K]) Len() int {
	s.mu.Lock()
	if len(s.delayed) > 0 {
		s.promoteLocked(s.now())
		s.publishLocked()
	}
	n := s.ready.len()
	s.mu.Unlock()
	return n
}

// Get blocks until a key is ready and returns it, or returns shutdown=true
// once the queue is shut down and no ready key is left (at once with
// Config.StopOnShutDown). Call Done with the key when its processing ends.
func (s *Scheduler[K]) Get() (key K, shutdown bool) {
	it, err := s.get(context.Background(), false)
	if err != nil {
		return key, true
	}
	return it.Key, false
}

// GetWithPriority is Get that also returns the priority of the key's run
// (see AddOptions.Priority), as controller-runtime's priority queue does.
func (s *Scheduler[K]) GetWithPriority() (key K, priority int, shutdown bool) {
	it, err := s.get(context.Background(), true)
	if err != nil {
		return key, 0, true
	}
	return it.Key, it.Priority, false
}

// GetContext is Get for workers that want the whole Item: it blocks until a
// key is ready, ctx is done (it returns ctx.Err()), or the queue is shut down
// with no ready key left, or at all with Config.StopOnShutDown (it returns
// ErrShutDown). A ready key is handed out even when ctx is already done, so
// GetContext with a done ctx never blocks. Process the key in
// item.Context() and call Done with item.Key when finished.
func (s *Scheduler[K]) GetContext(ctx context.Context) (Item[K], error) {
	return s.get(ctx, true)
}

func (s *Scheduler[K]) get(ctx context.Context, full bool) (Item[K], error) {
	var it Item[K]
	s.mu.Lock()
	if err := s.waitReadyLocked(ctx); err != nil {
		s.mu.Unlock()
		return it, err
	}
	e := s.ready.pop()
	e.place = nowhere
	e.pending = false
	e.processing = true

	p := s.newProc()
	var wall time.Time // the clock's time at the dequeue, when an Observer needs it
	obs := s.obs
	if obs != nil && s.wallClock {
		// Observers turn the times into span timestamps, so they are taken
		// relative to a fresh wall-clock reading: a wall clock stepped since
		// New does not shift them against spans timed by time.Now.
		wall = s.clock.Now()
		p.started = int64(wall.Sub(s.base))
	} else if s.timed {
		p.started = s.now()
	}
	if t := s.inflight.tail; t != nil {
		t.next, p.prev = p, t
	} else {
		s.inflight.head = p
	}
	s.inflight.tail = p
	s.inflight.n++
	s.inflight.startSum += p.started
	e.proc = p

	if obs != nil {
		return s.observeLocked(ctx, obs, e, p, wall), nil
	}
	it.Key = e.key
	if full {
		s.fillItem(&it, e, p.started, wall)
	}
	s.resetRun(e)
	s.publishLocked()
	s.mu.Unlock()
	it.ctx = ctx
	return it, nil
}

// observeLocked hands the item just taken to the Observer and unlocks. The
// Item the Observer sees is recycled (it must not keep it), so that neither
// path of get allocates one.
func (s *Scheduler[K]) observeLocked(ctx context.Context, obs Observer[K], e *entry[K], p *proc, wall time.Time) Item[K] {
	var itp *Item[K]
	if n := len(s.freeItems); n > 0 {
		itp = s.freeItems[n-1]
		s.freeItems = s.freeItems[:n-1]
	} else {
		itp = new(Item[K])
	}
	itp.Key = e.key
	s.fillItem(itp, e, p.started, wall)
	s.resetRun(e)
	s.publishLocked()
	s.mu.Unlock()

	itp.ctx = obs.Dequeued(ctx, itp)
	it := *itp
	*itp = Item[K]{}
	// Under the lock: AddRateLimited of this key, from any goroutine, reads
	// p.ctx for Item.PreviousAttempt.
	s.mu.Lock()
	p.ctx = it.ctx
	if len(s.freeItems) < maxFree {
		s.freeItems = append(s.freeItems, itp)
	}
	s.mu.Unlock()
	return it
}

// waitReadyLocked waits until a key is ready, the queue is shut down with
// none left, or ctx is done.
func (s *Scheduler[K]) waitReadyLocked(ctx context.Context) error {
	var stop func() bool
	defer func() {
		if stop != nil {
			stop()
		}
	}()
	for {
		if s.shuttingDown && s.set.stopOnShutDown {
			return ErrShutDown
		}
		if len(s.delayed) > 0 {
			if now := s.now(); s.delayed[0].at <= now {
				s.promoteLocked(now)
			}
		}
		if s.ready.len() > 0 {
			return nil
		}
		if s.shuttingDown {
			return ErrShutDown
		}
		if err := ctx.Err(); err != nil {
			return err
		}
		if stop == nil && ctx.Done() != nil {
			stop = context.AfterFunc(ctx, func() {
				s.mu.Lock()
				s.cond.Broadcast()
				s.mu.Unlock()
			})
		}
		s.cond.Wait()
	}
}

// fillItem copies the pending run of e into it. started is the dequeue time
// and wall, when not zero, the clock's reading at that instant.
func (s *Scheduler[K]) fillItem(it *Item[K], e *entry[K], started int64, wall time.Time) {
	it.Reason = e.reason
	it.Coalesced = int(e.coalesced)
	it.Priority = int(e.prio)
	if s.timed {
		if wall.IsZero() {
			wall = s.at(started)
		}
		it.DequeuedAt = wall
		it.EnqueuedAt = wall.Add(time.Duration(e.enqueued - started))
		it.ReadyAt = wall.Add(time.Duration(max(e.readyAt, e.enqueued) - started))
	}
	var ts trace.TraceState
	if x := e.x; x != nil {
		ts = x.originState
		it.Links = x.links
		x.links = nil
		it.DroppedLinks = x.dropped
		it.PreviousAttempt = x.previous
		it.Requeues = x.requeues
	}
	it.Origin = e.origin.spanContext(ts)
}

// resetRun clears what belonged to the run just handed out.
func (s *Scheduler[K]) resetRun(e *entry[K]) {
	e.origin = spanRef{}
	e.coalesced = 0
	e.prio = 0
	e.debounced = false
	if x := e.x; x != nil {
		*x = extras{}
	}
}

// ProcessingContext returns the context key is being processed in (the
// Item.Context of its run in flight), and false when key is not in flight.
// It lets code that receives only the key from a plain Get, such as
// controller-runtime's controller, find the span of the run.
func (s *Scheduler[K]) ProcessingContext(key K) (context.Context, bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	e, ok := s.entries[key]
	if !ok || !e.processing || e.proc.ctx == nil {
		return nil, false
	}
	return e.proc.ctx, true
}

// Done marks the end of the processing of key. If key was added again
// meanwhile, it becomes pending again: ready at once, or when its delay ends.
// Done of a key that is not being processed does nothing.
func (s *Scheduler[K]) Done(key K) {
	s.mu.Lock()
	e, ok := s.entries[key]
	if !ok || !e.processing {
		s.mu.Unlock()
		return
	}
	p := e.proc
	e.proc = nil
	e.processing = false
	if p.prev != nil {
		p.prev.next = p.next
	} else {
		s.inflight.head = p.next
	}
	if p.next != nil {
		p.next.prev = p.prev
	} else {
		s.inflight.tail = p.prev
	}
	s.inflight.n--
	s.inflight.startSum -= p.started

	var now int64
	var wall time.Time
	obs := s.obs
	switch {
	case obs != nil && s.wallClock:
		wall = s.clock.Now() // see get
		now = int64(wall.Sub(s.base))
	case s.timed || (e.pending && e.readyAt != 0):
		now = s.now()
	}
	signal := false
	if e.pending {
		s.held--
		switch {
		case e.readyAt > now && s.shuttingDown:
			// Its delay would end after the delay loop stopped: dropped,
			// as client-go drops delayed keys at shutdown.
			s.forgetLocked(e)
		case e.readyAt > now:
			s.delayLocked(e)
		default:
			if e.readyAt < now {
				e.readyAt, e.reason = now, WaitHeld
			}
			s.ready.push(e)
			signal = true
		}
	} else {
		s.forgetLocked(e)
	}
	if s.inflight.n == 0 && s.drain {
		s.drained.Broadcast()
	}
	ctx, started := p.ctx, p.started
	s.freeProc(p)
	s.publishLocked()
	s.mu.Unlock()
	if signal {
		s.cond.Signal()
	}
	if obs != nil && ctx != nil {
		if wall.IsZero() {
			wall = s.at(now)
		}
		obs.Done(ctx, key, wall.Add(time.Duration(started-now)), wall)
	}
}

// ShutDown makes the queue ignore every further add. Keys already ready are
// still handed out by Get until none is left (none at all with
// Config.StopOnShutDown); then Get reports shutdown.
// Delayed keys (AddAfter, AddRateLimited, debounce) are dropped, as client-go
// drops them; a key added while it was processed, with no delay, still runs
// once more after its Done. ShutDown does not wait for runs in flight.
func (s *Scheduler[K]) ShutDown() {
	s.mu.Lock()
	s.drain = false
	s.shutDownLocked()
	s.drained.Broadcast()
	s.mu.Unlock()
	s.wg.Wait()
}

// ShutDownWithDrain is ShutDown that then waits until every run in flight is
// Done, as client-go's does. Workers must call Done for every key, or it
// blocks forever; a later ShutDown stops the wait.
func (s *Scheduler[K]) ShutDownWithDrain() {
	s.mu.Lock()
	s.drain = true
	s.shutDownLocked()
	for s.inflight.n > 0 && s.drain {
		s.drained.Wait()
	}
	s.mu.Unlock()
	s.wg.Wait()
}

func (s *Scheduler[K]) shutDownLocked() {
	if !s.shuttingDown {
		s.shuttingDown = true
		close(s.stop)
		for len(s.delayed) > 0 {
			s.forgetLocked(s.delayed.remove(len(s.delayed) - 1))
		}
		s.publishLocked()
	}
	s.cond.Broadcast()
}

// ShuttingDown reports whether ShutDown or ShutDownWithDrain was called.
func (s *Scheduler[K]) ShuttingDown() bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.shuttingDown
}

// Stats returns a consistent snapshot of the queue's numbers. It does not
// take the queue lock (except once, at the first call on an unnamed queue
// with no Observer, which until then publishes nothing), and reads the clock
// only to compute the ages.
func (s *Scheduler[K]) Stats() Stats {
	if !s.statsOn.Load() {
		// The first call of an unnamed queue: from now on operations
		// publish; this once, publish what is there under the queue lock.
		s.mu.Lock()
		s.statsOn.Store(true)
		s.publishLocked()
		s.mu.Unlock()
	}
	v := s.stats.load()
	return v.snapshot(s.now)
}

// forgetLocked removes an entry that has nothing pending and nothing in
// flight (or whose pending run is dropped) and recycles it.
func (s *Scheduler[K]) forgetLocked(e *entry[K]) {
	delete(s.entries, e.key)
	if len(s.freeEntries) < maxFree {
		x := e.x
		if x != nil {
			*x = extras{}
		}
		*e = entry[K]{x: x, seq: e.seq} // seq survives: stale ready slots may still point here
		s.freeEntries = append(s.freeEntries, e)
	}
}

func (s *Scheduler[K]) newEntry(key K) *entry[K] {
	var e *entry[K]
	if n := len(s.freeEntries); n > 0 {
		e = s.freeEntries[n-1]
		s.freeEntries[n-1] = nil
		s.freeEntries = s.freeEntries[:n-1]
	} else {
		e = new(entry[K])
	}
	e.key = key
	e.heapIdx = -1
	return e
}

func (s *Scheduler[K]) newProc() *proc {
	if n := len(s.freeProcs); n > 0 {
		p := s.freeProcs[n-1]
		s.freeProcs[n-1] = nil
		s.freeProcs = s.freeProcs[:n-1]
		return p
	}
	return new(proc)
}

func (s *Scheduler[K]) freeProc(p *proc) {
	*p = proc{}
	if len(s.freeProcs) < maxFree {
		s.freeProcs = append(s.freeProcs, p)
	}
}

// publishLocked copies the queue's numbers into the stats cell.
func (s *Scheduler[K]) publishLocked() {
	if !s.statsOn.Load() {
		return
	}
	c := &s.stats
	c.mu.Lock()
	v := &c.v
	v.depth = s.ready.len()
	v.delayed = len(s.delayed)
	v.held = s.held
	v.inFlight = s.inflight.n
	v.adds, v.retries, v.coalesced = s.adds, s.retries, s.coalesced
	v.timed = s.timed
	if s.timed {
		if e := s.ready.oldest(); e != nil {
			v.oldestReady = e.readySince()
		}
		if h := s.inflight.head; h != nil {
			v.oldestStart = h.started
		}
		v.startSum = s.inflight.startSum
	}
	c.mu.Unlock()
}
