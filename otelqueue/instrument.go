package otelqueue

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"runtime"
	"sync"
	"sync/atomic"
	"weak"

	"github.com/otelqueue/otelqueue/inspect"
	"k8s.io/utils/clock"

	"go.opentelemetry.io/otel"
	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/metric"

	"github.com/otelqueue/otelqueue/internal/program"
	"github.com/otelqueue/otelqueue/internal/schedhooks"
	"github.com/otelqueue/otelqueue/scheduler"
)

// Instrumentation is the OpenTelemetry instrumentation of one scheduler,
// returned by Instrument. Stop removes it.
type Instrumentation struct {
	// inspectable is what Inspectors show of the queue.
	inspectable *inspectable
	client      *clientInstruments
	standby     *standby
	b           *binding
	reg         metric.Registration
	stop        func()
	stopOnce    sync.Once
	stopped     atomic.Bool
}

// Instrument attaches OpenTelemetry instrumentation to s: spans and
// histograms for every key handed out (through s's Observer), and
// observable counters and gauges read from s.Stats at collection time.
//
// s must be named (scheduler.Config.Name): the name becomes the "name"
// attribute of every metric and of the spans. Install the instrumentation
// before the queue is used. A scheduler has at most one live
// Instrumentation: Instrument fails on a scheduler instrumented already,
// until that Instrumentation is stopped. Errors in creating instruments go
// to otel.Handle and leave the others working; Instrument itself fails only
// on a nil, unnamed or already instrumented scheduler or an invalid option.
func Instrument[K comparable](s *scheduler.Scheduler[K], opts ...Option) (*Instrumentation, error) {
	if s == nil {
		return nil, errors.New("otelqueue: Instrument needs a scheduler, got nil")
	}
	if s.Name() == "" {
		return nil, errors.New("otelqueue: the scheduler has no name: set scheduler.Config.Name; it becomes the name attribute of every metric and span")
	}
	c := newConfig(opts)
	if err := c.validate(); err != nil {
		return nil, err
	}
	if err := checkLinkSource[K](&c, s.Name()); err != nil {
		return nil, err
	}
	b := bindingOf(s)
	b.program.Store(program.Of(c.meterProvider))
	p, err := adaptivePool(s, b, &c)
	if err != nil {
		return nil, err
	}
	in := newInstruments(&c)
	attrs := queueAttrs(s.Name(), c.controller)
	obs := newObserver[K](&c, in, b, s.Name(), attrs)
	hooks := schedhooks.Of(s)
	var sb *standby
	if c.standby != nil {
		sb = newStandby(c.standby, hooks.Clock.Now)
		obs.standby = sb
	}
	if err := install(s, obs); err != nil {
		return nil, err
	}
	b.client.Store(obs.client)
	stopStandby := func() {}
	if sb != nil {
		b.standby.Store(sb)
		stopStandby = runBeside(s, hooks, sb.watch, func() { b.standby.CompareAndSwap(sb, nil) })
	}
	stopPool := func() {}
	if p != nil {
		if err := p.attach(); err != nil {
			stopStandby()
			b.client.CompareAndSwap(obs.client, nil)
			compareAndSwapObserver(s, obs, nil)
			return nil, err
		}
		stopPool = runBeside(s, hooks, p.run, p.detach)
	}
	// The callback and the Sizer hold the scheduler weakly: a
	// MeterProvider keeps its callbacks for its life, and a queue dropped
	// without Stop must go all the same (its series then end).
	ws := weak.Make(s)
	reg, err := in.meter.RegisterCallback(observeQueue(ws, &c, in, obs, b, sb, hooks.Clock, attrs), in.observables()...)
	if err != nil {
		otel.Handle(err)
	}
	inst := &Instrumentation{
		client:  obs.client,
		standby: sb,
		b:       b,
		reg:     reg,
	}
	var clientTime *clientInstruments
	if c.clientTime {
		clientTime = obs.client
	}
	var unregister func()
	inst.inspectable, unregister = registerInspectable(s, sb, b, clientTime, c.workers)
	unsize := func() {}
	if c.sizer != nil {
		unsize = c.sizer.add(sizedQueue(s.Name(), ws, b, sb, clientTime, c.workers))
	}
	inst.stop = func() {
		unsize()
		unregister()
		stopPool()
		stopStandby()
		b.client.CompareAndSwap(obs.client, nil)
		drainAttempts(s, scheduler.Observer[K](obs))
	}
	return inst, nil
}

// adaptivePool returns the adaptive worker pool c asks for (nil when none):
// its bounds checked against the workers given, and b free of another pool.
func adaptivePool[K comparable](s *scheduler.Scheduler[K], b *binding, c *config) (*pool, error) {
	if c.adaptive == nil {
		return nil, nil
	}
	workers := 0
	if c.workersSet {
		workers = c.workers
	}
	lo, hi, start, err := poolBounds(*c.adaptive, workers)
	if err != nil {
		return nil, err
	}
	if b.pool.Load() != nil {
		return nil, errPoolTaken(s.Name())
	}
	logger := c.adaptive.Logger
	return newPool(s, b, *c.adaptive, lo, hi, start, func() *slog.Logger {
		if logger != nil {
			return logger
		}
		return slog.Default()
	}), nil
}

// runBeside runs work in a goroutine beside s until the returned function
// is called (which then waits for it and calls after), s shuts down, or s
// is garbage collected (a queue dropped without Stop).
func runBeside[K comparable](s *scheduler.Scheduler[K], hooks *schedhooks.Hooks, work func(stop, shutDown, gone <-chan struct{}), after func()) (stop func()) {
	stopCh, exited, gone := make(chan struct{}), make(chan struct{}), make(chan struct{})
	runtime.AddCleanup(s, func(gone chan struct{}) { close(gone) }, gone)
	go func() {
		defer close(exited)
		work(stopCh, hooks.ShutDownCh, gone)
	}()
	return func() {
		close(stopCh)
		<-exited
		after()
	}
}

// observeQueue returns the metric callback of a queue: its counters and
// gauges read from s.Stats, its binding and its standby at collection time.
func observeQueue[K comparable](ws weak.Pointer[scheduler.Scheduler[K]], c *config, in *instruments, obs *observer[K], b *binding, sb *standby, clk clock.PassiveClock, attrs attribute.Set) metric.Callback {
	observe := metric.WithAttributeSet(attrs)
	depth := newDepthByPriority(attrs)
	runnerAttrs := newRunnerAttrs(attrs)
	configured := int64(c.workers)
	return func(_ context.Context, o metric.Observer) error {
		s := ws.Value()
		if s == nil {
			return nil
		}
		observeDepth(depth, s, o, in.depth)
		st := s.Stats()
		o.ObserveInt64(in.delayed, int64(st.Delayed), observe)
		o.ObserveInt64(in.adds, int64(st.Adds), observe)
		o.ObserveInt64(in.retries, int64(st.Retries), observe)
		o.ObserveInt64(in.delayedAdds, int64(st.DelayedAdds), observe)
		o.ObserveInt64(in.coalesced, int64(st.Coalesced), observe)
		o.ObserveFloat64(in.unfinished, st.UnfinishedWork.Seconds(), observe)
		o.ObserveFloat64(in.longestRunning, st.LongestRunning.Seconds(), observe)
		oldest := st.OldestPending
		if sb != nil {
			oldest = sb.oldest(oldest, clk.Now())
		}
		o.ObserveFloat64(in.oldestPending, oldest.Seconds(), observe)
		workers := b.observe(o, in, runnerAttrs)
		if workers == 0 {
			workers = configured
		}
		if workers > 0 {
			o.ObserveInt64(in.workers, workers, observe)
		}
		obs.client.observe(o, in, observe)
		if sb != nil {
			standbyValue := int64(0)
			if sb.isStandby() {
				standbyValue = 1
			}
			o.ObserveInt64(in.standby, standbyValue, observe)
		}
		return nil
	}
}

// sizedQueue is a queue as a Sizer reads it: its stats and its worker
// count (the pool's or Runners', else WithWorkers', else the scheduler's
// MaxInFlight).
func sizedQueue[K comparable](name string, ws weak.Pointer[scheduler.Scheduler[K]], b *binding, sb *standby, client *clientInstruments, workers int) *sized {
	return &sized{name: name, client: client, standby: sb, b: b,
		stats: func() (scheduler.Stats, bool) {
			if s := ws.Value(); s != nil {
				return s.Stats(), true
			}
			return scheduler.Stats{}, false
		},
		count: func() int {
			if n := int(b.workerCount()); n > 0 {
				return n
			}
			if workers > 0 {
				return workers
			}
			if s := ws.Value(); s != nil {
				return s.MaxInFlight()
			}
			return 0
		}}
}

// install makes obs the Observer of s, atomically: it fails when s is
// instrumented already or has an Observer of someone else's, and takes over
// from a stopped Instrumentation whose attempts are still in flight (obs's
// Done ends their spans).
func install[K comparable](s *scheduler.Scheduler[K], obs *observer[K]) error {
	for {
		cur := s.Observer()
		switch cur.(type) {
		case nil, *drainObserver[K]:
		case *observer[K]:
			return fmt.Errorf("otelqueue: the scheduler %q is instrumented already: Stop its Instrumentation before instrumenting it again (two would count everything twice)", s.Name())
		default:
			return fmt.Errorf("otelqueue: the scheduler %q has an Observer already (%T, installed with SetObserver): Instrument would replace it; remove it first (SetObserver(nil))", s.Name(), cur)
		}
		if compareAndSwapObserver(s, cur, obs) {
			return nil
		}
		// cur changed meanwhile (a drain ended, or another Instrument won):
		// look again.
	}
}

// ClientStats returns where the queue's reconcile attempts spent their time
// in Kubernetes API clients instrumented with package kubeclient: the
// numbers behind the workqueue.client.* metrics, for a program that uses no
// metrics library. They are recorded only for a queue instrumented
// WithClientTime; otherwise they are zero.
// Attempts that end after Stop are not counted, as they are not measured.
func (i *Instrumentation) ClientStats() ClientStats {
	if i == nil || i.client == nil {
		return ClientStats{}
	}
	return i.client.stats()
}

// inspect.Pool returns the state of the queue's adaptive worker pool
// (AdaptiveWorkers, given to Instrument or to a Runner of the queue), and
// false when the queue has none running.
func (i *Instrumentation) AdaptiveStats() (inspect.Pool, bool) {
	if i == nil || i.b == nil {
		return inspect.Pool{}, false
	}
	p := i.b.pool.Load()
	if p == nil {
		return inspect.Pool{}, false
	}
	return p.Stats(), true
}

// Standby reports whether the queue is standby: instrumented WithStandby,
// with the channel given not closed yet. A nil Instrumentation, or one
// without WithStandby, is never standby.
func (i *Instrumentation) Standby() bool { return i != nil && i.standby.isStandby() }

// Stop removes the instrumentation: the observable instruments are no longer
// reported, and keys handed out from then on get no spans and are not
// measured. The spans of keys in flight at Stop still end when their Done is
// called: the scheduler's Observer is uninstalled after the last of them. It
// is safe to call more than once, and on a nil or zero Instrumentation.
func (i *Instrumentation) Stop() error {
	if i == nil {
		return nil
	}
	var err error
	i.stopOnce.Do(func() {
		i.stopped.Store(true)
		if i.reg != nil {
			err = i.reg.Unregister()
		}
		if i.stop != nil { // nil in a zero Instrumentation, which Instrument did not make
			i.stop()
		}
	})
	return err
}
