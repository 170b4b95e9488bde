package otelqueue

import (
	"errors"
	"fmt"
	"log/slog"
	"sync"
	"sync/atomic"
	"time"
	"weak"

	"github.com/otelqueue/otelqueue/inspect"

	"github.com/otelqueue/otelqueue/internal/semconv"

	"go.opentelemetry.io/otel/metric"
	"go.opentelemetry.io/otel/trace"
	"k8s.io/utils/clock"

	"github.com/otelqueue/otelqueue/bottleneck"
	"github.com/otelqueue/otelqueue/internal/schedhooks"
	"github.com/otelqueue/otelqueue/procstat"
	"github.com/otelqueue/otelqueue/scheduler"
)

// pool is a queue's adaptive worker pool: it reads the queue's signals,
// decides with its controller, and limits the queue with SetMaxInFlight. It
// is attached to the queue's binding, where the observer finds it and
// counts the signals, while it runs.
type pool struct {
	queue      string
	interval   time.Duration
	clock      clock.WithTicker
	b          *binding
	setLimit   func(int)
	queueStats func() scheduler.Stats
	dueWithin  func(time.Duration) int
	logger     func() *slog.Logger
	// readCPU reads the process's CPU for the windows (reader's Read);
	// nil: none (a queue on a clock other than the real one, whose windows
	// are not of the process's time).
	readCPU func() procstat.Sample
	reader  procstat.Reader
	// readServer reads the counts of API round trips of the queue's program (its
	// MeterProvider's, kubeclient.ServerStats); nil as readCPU.
	readServer func(time.Time) bottleneck.APIServerCounters

	sig   signals
	limit atomic.Int64
	// next is the time of the next evaluation, in nanoseconds since start
	// (attach's reading of the clock): a difference of two readings, which
	// a real clock measures on its monotonic clock, so that a wall clock
	// set back does not stop the decisions (comparing UnixNano would).
	next atomic.Int64
	// surgeNext is the time of the next check for a surge between two
	// evaluations (surgeCheck), as next.
	surgeNext atomic.Int64
	start     time.Time

	// fallback is the count to run while the queue is not instrumented (a
	// Runner's worker count: its pool cannot see the load then); 0 for a
	// pool of Instrument's, which Stop detaches.
	fallback int
	// grow, when set (a Runner's pool), starts workers up to a new limit:
	// a Runner starts as many goroutines as its pool lets take keys, not
	// its Max at once.
	grow func(int)

	mu       sync.Mutex
	detached bool // by detach: no decision is applied any more
	blind    bool // the queue was not instrumented at the last evaluation
	ctl      *controller
	prev     snapshot
	checked  snapshot // the last surge check's, for the next one's window
	stats    inspect.Pool
	changes  map[poolReason]uint64 // by reason
	recent   decisionLog           // the last decisions, for the Inspector
}

// snapshot is a read of every cumulative signal.
type snapshot struct {
	at            time.Time
	started, done uint64
	workNs        int64
	limiterNs     int64
	retryAfterNs  int64
	waits         [waitBuckets]uint64
	works         [waitBuckets]uint64
	worksNs       [waitBuckets]int64
	q             scheduler.Stats
	dueSoon       int // delayed keys that become ready within the next interval, or the one after if more
	cpu           procstat.Sample
	server        bottleneck.APIServerCounters
}

// newPool returns a pool for s between lo and hi, at start, not attached.
func newPool[K comparable](s *scheduler.Scheduler[K], b *binding, a AdaptiveWorkers, lo, hi, start int, logger func() *slog.Logger) *pool {
	clk := schedhooks.Of(s).Clock
	// The pool holds its scheduler weakly, so that a queue dropped without
	// Stop goes (its goroutine then ends: run's gone).
	ws := weak.Make(s)
	p := &pool{
		queue: s.Name(), interval: a.Interval, clock: clk, b: b, logger: logger,
		setLimit: func(n int) {
			if s := ws.Value(); s != nil {
				s.SetMaxInFlight(n)
			}
		},
		queueStats: func() scheduler.Stats {
			if s := ws.Value(); s != nil {
				return s.Stats()
			}
			return scheduler.Stats{}
		},
		dueWithin: func(d time.Duration) int {
			if s := ws.Value(); s != nil {
				return s.DueWithin(d)
			}
			return 0
		},
		ctl: newController(lo, hi, start, a.WaitObjective, a.Interval),
	}
	if _, real := clk.(clock.RealClock); real {
		p.readCPU, p.readServer = p.reader.Read, b.server
	}
	p.limit.Store(int64(start))
	p.stats = inspect.Pool{Limit: start, Min: lo, Max: hi}
	return p
}

// errPoolTaken is the error of a second pool on one queue.
func errPoolTaken(queue string) error {
	return fmt.Errorf("otelqueue: queue %q has an adaptive worker pool already (AdaptiveWorkers given to another Runner or Instrument): a queue has one, since it limits the whole queue", queue)
}

// attach makes p the pool of its queue and applies its limit; it fails when
// the queue has one. p is ready (its first snapshot taken, its next
// decision time set) before the queue's observer can find it.
func (p *pool) attach() error {
	if p.b.pool.Load() != nil {
		return errPoolTaken(p.queue)
	}
	now := p.clock.Now()
	p.mu.Lock()
	defer p.mu.Unlock()
	p.prev = p.snapshot(now)
	p.start = now
	p.next.Store(int64(p.interval))
	if !p.b.pool.CompareAndSwap(nil, p) {
		return errPoolTaken(p.queue)
	}
	p.apply(int(p.limit.Load()))
	return nil
}

// detach removes p from its queue and lifts its limit, after any decision
// being applied: no decision applies a limit after it.
func (p *pool) detach() {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.b.pool.CompareAndSwap(p, nil) {
		p.detached = true
		p.setLimit(0)
	}
}

// run evaluates every interval until one of the channels is closed: a
// stop, the queue's shut down, its scheduler collected (nil: never).
func (p *pool) run(stop, shutDown, gone <-chan struct{}) {
	t := p.clock.NewTicker(p.interval)
	defer t.Stop()
	for {
		select {
		case <-stop:
			return
		case <-shutDown:
			return
		case <-gone:
			return
		case <-t.C():
			p.evaluate(p.clock.Now(), nil)
		}
	}
}

// Stats returns the pool's state.
func (p *pool) Stats() inspect.Pool {
	p.mu.Lock()
	defer p.mu.Unlock()
	st := p.stats
	st.Limit = int(p.limit.Load())
	return st
}

// decisions returns the pool's last decisions, the latest first.
func (p *pool) decisions() []inspect.Decision {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.recent.last()
}

// observeChanges reports the changes by reason; byReason holds the
// attribute sets of the reasons.
func (p *pool) observeChanges(o metric.Observer, c metric.Int64ObservableCounter, byReason map[poolReason]metric.ObserveOption) {
	p.mu.Lock()
	defer p.mu.Unlock()
	for reason, n := range p.changes {
		if opt, ok := byReason[reason]; ok {
			o.ObserveInt64(c, int64(n), opt)
		}
	}
}

// snapshot reads the signals at now.
func (p *pool) snapshot(now time.Time) snapshot {
	s := snapshot{
		at:           now,
		started:      p.sig.started.Load(),
		done:         p.sig.done.Load(),
		workNs:       p.sig.workNs.Load(),
		limiterNs:    p.sig.limiterNs.Load(),
		retryAfterNs: p.sig.retryAfterNs.Load(),
		q:            p.queueStats(),
	}
	// The keys due in the next interval, or in the one after if more: a
	// change needs two intervals, so the pool looks that far ahead.
	next := p.dueWithin(p.interval)
	s.dueSoon = max(next, p.dueWithin(2*p.interval)-next)
	for i := range s.waits {
		s.waits[i] = p.sig.waits[i].Load()
		s.works[i] = p.sig.works[i].Load()
		s.worksNs[i] = p.sig.worksNs[i].Load()
	}
	if p.readCPU != nil {
		s.cpu = p.readCPU()
	}
	if p.readServer != nil {
		s.server = p.readServer(now)
	}
	return s
}

// window is what happened between two snapshots.
func (p *pool) window(a, b *snapshot) window {
	w := window{
		dur:         b.at.Sub(a.at),
		limit:       int(p.limit.Load()),
		started:     b.started - a.started,
		done:        b.done - a.done,
		work:        time.Duration(b.workNs - a.workNs),
		oldest:      b.q.OldestPending,
		longest:     b.q.LongestRunning,
		depth:       b.q.Depth,
		depthBefore: a.q.Depth,
		adds:        b.q.Adds - a.q.Adds,
		retries:     b.q.Retries - a.q.Retries,

		limiterWait:    time.Duration(b.limiterNs - a.limiterNs),
		retryAfterWait: time.Duration(b.retryAfterNs - a.retryAfterNs),
	}
	w.busy = max(0, w.work+b.q.UnfinishedWork-a.q.UnfinishedWork)
	var counts, works [waitBuckets]uint64
	var worksNs [waitBuckets]int64
	for i := range counts {
		counts[i] = b.waits[i] - a.waits[i]
		works[i] = b.works[i] - a.works[i]
		worksNs[i] = b.worksNs[i] - a.worksNs[i]
	}
	w.waitP90 = waitQuantile(&counts, 0.9)
	w.typicalWork, w.typicalDone = typicalWork(&works, &worksNs)
	w.inFlight = b.q.InFlight
	w.dueSoon, w.dueWindow = b.dueSoon, p.interval
	w.delayedAdds = b.q.DelayedAdds - a.q.DelayedAdds
	w.cpu = bottleneck.ProcessCPU(procstat.Between(a.cpu, b.cpu))
	if p.sig.usedClient.Load() {
		w.apiserver = bottleneck.APIServerBetween(a.server, b.server)
	}
	return w
}

// since returns the nanoseconds from attach to now.
func (p *pool) since(now time.Time) int64 { return int64(now.Sub(p.start)) }

// evaluate decides, once an interval has passed since the last decision,
// and applies the change if any; span, if recording, is the attempt whose
// end called it, and gets an event for a change.
func (p *pool) evaluate(now time.Time, span trace.Span) {
	if since := p.since(now); since < p.next.Load() {
		if since >= p.surgeNext.Load() {
			p.checkSurge(now, span)
		}
		return
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	since := p.since(now)
	if since < p.next.Load() {
		return
	}
	p.next.Store(since + int64(p.interval))
	p.surgeNext.Store(since + int64(p.interval/surgeChecks))
	if p.detached {
		return
	}
	if p.b.client.Load() == nil {
		// Not instrumented any more (Instrumentation.Stop): nothing to
		// decide on, and a limit the pool set must not stay.
		p.uninstrumented(now)
		return
	}
	cur := p.snapshot(now)
	if p.blind {
		// Instrumented again: a window from here.
		p.blind, p.prev = false, cur
		return
	}
	if p.b.standby.Load().isStandby() {
		// Standby (WithStandby): no worker may run, so nothing to decide
		// on; the next window starts here, without the standby's time.
		p.prev = cur
		return
	}
	w := p.window(&p.prev, &cur)
	idle := w.started == 0 && w.done == 0 && cur.q.InFlight == 0 && cur.q.Depth == 0
	if w.done < minSample && w.dur < maxWindowIntervals*p.interval && !idle {
		return // too few reconciles to judge: extend the window
	}
	p.prev = cur
	d, f, ok := p.ctl.decide(&w, now)
	p.stats.Needed, p.stats.Ceiling = f.needed, p.ctl.ceiling
	if !ok {
		return
	}
	p.record(d, &f, now, span)
}

// checkSurge grows the pool, between two evaluations, for a surge of plain
// demand (controller.surge) on the window since the last check or
// decision: at most every interval/surgeChecks, on the attempts' ends, so
// that the keys of a surge wait a fraction of an interval for the workers
// they need, not a whole one. The decision's window goes on unless it
// decides.
func (p *pool) checkSurge(now time.Time, span trace.Span) {
	p.mu.Lock()
	defer p.mu.Unlock()
	since := p.since(now)
	if since < p.surgeNext.Load() || since >= p.next.Load() {
		return
	}
	p.surgeNext.Store(since + int64(p.interval/surgeChecks))
	if p.detached || p.blind || p.b.client.Load() == nil || p.b.standby.Load().isStandby() {
		return
	}
	cur := p.snapshot(now)
	from := &p.prev
	if p.checked.at.After(from.at) {
		from = &p.checked
	}
	w := p.window(from, &cur)
	whole := p.window(&p.prev, &cur)
	p.checked = cur
	d, f, ok := p.ctl.surge(&w, &whole, now)
	if !ok {
		return
	}
	p.prev = cur
	p.next.Store(since + int64(p.interval))
	p.record(d, &f, now, span)
}

// record applies decision d, decided on figures f at now, and tells of it:
// the pool's stats and last decisions, its log line, and an event of span
// when it is recording.
func (p *pool) record(d decision, f *figures, now time.Time, span trace.Span) {
	from := int(p.limit.Load())
	if d.to != from {
		p.apply(d.to)
		p.stats.Changes++
		if p.changes == nil {
			p.changes = make(map[poolReason]uint64)
		}
		p.changes[d.reason]++
	}
	p.stats.Reason, p.stats.Detail, p.stats.Changed = string(d.reason), d.detail, now
	p.recent.add(inspect.Decision{At: now, From: from, To: d.to, Reason: string(d.reason), Detail: d.detail})
	p.logger().Info("adaptive workers", "queue", p.queue, "from", from, "to", d.to, "reason", d.reason,
		"detail", d.detail, "needed", f.needed, "busy", round2(f.busy), "usable", round2(f.usable),
		"wait", round(f.wait), "ceiling", p.ctl.ceiling)
	if span != nil && span.IsRecording() {
		span.AddEvent(semconv.EventWorkersChanged, trace.WithTimestamp(now), trace.WithAttributes(
			semconv.AttrWorkersFrom.Int(from), semconv.AttrWorkersTo.Int(d.to), semconv.AttrWorkersReason.String(string(d.reason))))
	}
}

// apply makes n the queue's limit, and a Runner's workers at least n.
func (p *pool) apply(n int) {
	p.limit.Store(int64(n))
	p.setLimit(n)
	if p.grow != nil {
		p.grow(n)
	}
}

// uninstrumented puts a Runner's pool back to the Runner's worker count
// once, and says so, when the queue's instrumentation stopped: the pool
// sees nothing of the load until it is instrumented again.
func (p *pool) uninstrumented(now time.Time) {
	if p.blind {
		return
	}
	p.blind = true
	from := int(p.limit.Load())
	to := from
	if p.fallback > 0 {
		to = p.fallback
		p.apply(to)
	}
	detail := fmt.Sprintf("the queue is not instrumented any more (Instrumentation.Stop): the pool sees no load, and runs %d workers until it is instrumented again", to)
	p.stats.Reason, p.stats.Detail, p.stats.Changed, p.stats.Ceiling = string(reasonUninstrumented), detail, now, 0
	p.recent.add(inspect.Decision{At: now, From: from, To: to, Reason: string(reasonUninstrumented), Detail: detail})
	p.logger().Info("adaptive workers", "queue", p.queue, "from", from, "to", to, "reason", reasonUninstrumented, "detail", detail)
}

// round2 rounds to two decimals for a log line.
func round2(x float64) float64 { return float64(int64(x*100+0.5)) / 100 }

// poolBounds returns the bounds and start of a pool from a and the workers
// that take keys (0 when unknown), or why they cannot be used.
func poolBounds(a AdaptiveWorkers, workers int) (lo, hi, start int, err error) {
	lo, hi = a.Min, a.Max
	if workers > 0 {
		if workers < lo {
			return 0, 0, 0, fmt.Errorf("otelqueue: AdaptiveWorkers.Min %d is above the %d workers that take keys (WithWorkers, controller-runtime's MaxConcurrentReconciles): raise the workers or lower Min", lo, workers)
		}
		hi = min(hi, workers)
	}
	start = a.Start
	if start == 0 {
		start = lo
	}
	return lo, hi, min(start, hi), nil
}

var errNotInstrumented = errors.New("is not instrumented: AdaptiveWorkers decides on the queue's measurements; call otelqueue.Instrument on it before Run (a no-op MeterProvider and TracerProvider will do)")
