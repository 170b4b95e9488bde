package otelqueue

import (
	"log/slog"
	"sync"
	"testing"
	"time"

	metricnoop "go.opentelemetry.io/otel/metric/noop"
	tracenoop "go.opentelemetry.io/otel/trace/noop"
	testingclock "k8s.io/utils/clock/testing"

	"github.com/otelqueue/otelqueue/internal/testutil"
	"github.com/otelqueue/otelqueue/scheduler"
)

// poolEnv is an instrumented scheduler on a fake clock and a pool for it,
// not attached, whose decisions are logged nowhere.
func poolEnv(t *testing.T) (*scheduler.Scheduler[int], *testingclock.FakeClock, *pool) {
	t.Helper()
	fc := testingclock.NewFakeClock(time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC))
	s := scheduler.New(scheduler.Config[int]{Name: "pool", Clock: fc})
	t.Cleanup(s.ShutDown)
	inst, err := Instrument(s, WithMeterProvider(metricnoop.NewMeterProvider()), WithTracerProvider(tracenoop.NewTracerProvider()))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { inst.Stop() })
	a := AdaptiveWorkers{Min: 1, Max: 64, Interval: time.Second}
	if err := a.check(); err != nil {
		t.Fatal(err)
	}
	return s, fc, newPool(s, bindingOf(s), a, 1, 64, 4, func() *slog.Logger { return slog.New(slog.DiscardHandler) })
}

// demandWindow makes the pool's next window call for a grow: 300 keys
// ready, and 40 reconciles of 100ms counted as done in the interval.
func demandWindow(s *scheduler.Scheduler[int], p *pool) {
	for k := range 300 {
		s.Add(k)
	}
	for range 40 {
		p.sig.dequeued(0)
		p.sig.finished(100*time.Millisecond, 0, 0, false)
	}
}

// TestPoolDetachDuringEvaluation checks that a decision being applied when
// the pool is detached does not land after the detach: the queue ends with
// no limit. The regression this guards: detach lifted the limit at once,
// and an evaluation that had decided before it then set its new limit on a
// queue with no pool.
func TestPoolDetachDuringEvaluation(t *testing.T) {
	s, fc, p := poolEnv(t)
	setLimit := p.setLimit
	entered, release := make(chan struct{}), make(chan struct{})
	var once sync.Once
	p.setLimit = func(n int) {
		if n > 4 { // the evaluation's grow, not attach's 4 or detach's 0
			once.Do(func() { close(entered); <-release })
		}
		setLimit(n)
	}
	if err := p.attach(); err != nil {
		t.Fatal(err)
	}
	demandWindow(s, p)
	fc.Step(time.Second)
	evaluated := make(chan struct{})
	go func() { defer close(evaluated); p.evaluate(fc.Now(), nil) }()
	<-entered // the evaluation applies its grow

	detached := make(chan struct{})
	go func() { defer close(detached); p.detach() }()
	// detach either returns (lifting the limit under the evaluation), or
	// waits for the evaluation to be over.
	testutil.WaitFor(t, "detach to return or to wait for the evaluation", func() bool {
		select {
		case <-detached:
			return true
		default:
			return testutil.BlockedIn("detach", "sync.Mutex.Lock") > 0
		}
	})
	close(release)
	<-evaluated
	<-detached
	if n := s.MaxInFlight(); n != 0 {
		t.Errorf("MaxInFlight() = %d after detach, want 0 (no limit): a decision landed after the detach", n)
	}
	// A detached pool decides nothing more.
	demandWindow(s, p)
	fc.Step(time.Second)
	p.evaluate(fc.Now(), nil)
	if n := s.MaxInFlight(); n != 0 {
		t.Errorf("MaxInFlight() = %d after an evaluation of the detached pool, want 0", n)
	}
}

// TestPoolReadyWhenPublished checks that the queue's observer finds the
// pool only once it is ready: while attach takes the first snapshot, the
// queue has no pool. The regression this guards: attach published the pool
// first, so that a Done in between made it decide on a window from the
// zero time.
func TestPoolReadyWhenPublished(t *testing.T) {
	s, _, p := poolEnv(t)
	stats := p.queueStats
	entered, release := make(chan struct{}), make(chan struct{})
	var once sync.Once
	p.queueStats = func() scheduler.Stats {
		once.Do(func() { close(entered); <-release })
		return stats()
	}
	attached := make(chan error, 1)
	go func() { attached <- p.attach() }()
	<-entered // attach is taking its first snapshot
	if got := bindingOf(s).pool.Load(); got != nil {
		t.Errorf("the queue's pool is %p while attach takes its first snapshot, want none until it is ready", got)
	}
	close(release)
	if err := <-attached; err != nil {
		t.Fatal(err)
	}
	if got := bindingOf(s).pool.Load(); got != p {
		t.Errorf("after attach the queue's pool is %p, want %p", got, p)
	}
	if p.prev.at.IsZero() || p.next.Load() == 0 {
		t.Errorf("attached with no first snapshot (%v) or next decision time (%d)", p.prev.at, p.next.Load())
	}
	p.detach()
}

// TestPoolAttachTwice checks that a second pool on a queue is refused, and
// that the first keeps its limit.
func TestPoolAttachTwice(t *testing.T) {
	s, _, p := poolEnv(t)
	if err := p.attach(); err != nil {
		t.Fatal(err)
	}
	a := AdaptiveWorkers{Min: 1, Max: 8, Interval: time.Second}
	_ = a.check()
	q := newPool(s, bindingOf(s), a, 1, 8, 2, func() *slog.Logger { return slog.New(slog.DiscardHandler) })
	if err := q.attach(); err == nil {
		t.Fatal("a second pool attached to the queue")
	}
	if n := s.MaxInFlight(); n != 4 {
		t.Errorf("MaxInFlight() = %d after a refused attach, want the first pool's 4", n)
	}
	q.detach() // not attached: harmless
	if n := s.MaxInFlight(); n != 4 {
		t.Errorf("MaxInFlight() = %d after detaching a pool that never attached, want 4", n)
	}
	p.detach()
	p.detach()
	if n := s.MaxInFlight(); n != 0 {
		t.Errorf("MaxInFlight() = %d after detach, want 0", n)
	}
}

// TestPoolReadsCPUOnRealClock checks that a pool reads the process's CPU
// for its windows on the real clock, and not on another clock, whose
// windows are not the process's time.
func TestPoolReadsCPUOnRealClock(t *testing.T) {
	_, _, fake := poolEnv(t)
	if fake.readCPU != nil {
		t.Error("a pool on a fake clock reads the process's CPU")
	}
	s := scheduler.New(scheduler.Config[int]{Name: "real"})
	t.Cleanup(s.ShutDown)
	a := AdaptiveWorkers{Min: 1, Max: 4}
	_ = a.check()
	p := newPool(s, bindingOf(s), a, 1, 4, 1, func() *slog.Logger { return slog.New(slog.DiscardHandler) })
	if p.readCPU == nil {
		t.Fatal("a pool on the real clock reads no CPU")
	}
	first := p.snapshot(time.Now())
	second := p.snapshot(time.Now())
	if w := p.window(&first, &second); !w.cpu.Known || w.cpu.Cores <= 0 {
		t.Errorf("a window of two snapshots on the real clock: CPU %+v, want known", w.cpu)
	}
}

// TestPoolUninstrumented: a Runner's pool whose queue's instrumentation
// stops goes back to the Runner's worker count once, and says why (it had
// kept the count it had shrunk to: 1 of 8, with keys waiting); instrumented
// again, it decides from a new window.
func TestPoolUninstrumented(t *testing.T) {
	fc := testingclock.NewFakeClock(time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC))
	s := scheduler.New(scheduler.Config[int]{Name: "pool", Clock: fc})
	t.Cleanup(s.ShutDown)
	opts := []Option{WithMeterProvider(metricnoop.NewMeterProvider()), WithTracerProvider(tracenoop.NewTracerProvider())}
	inst, err := Instrument(s, opts...)
	if err != nil {
		t.Fatal(err)
	}
	a := AdaptiveWorkers{Min: 1, Max: 8, Interval: time.Second}
	if err := a.check(); err != nil {
		t.Fatal(err)
	}
	p := newPool(s, bindingOf(s), a, 1, 8, 8, func() *slog.Logger { return slog.New(slog.DiscardHandler) })
	p.fallback = 8
	if err := p.attach(); err != nil {
		t.Fatal(err)
	}
	defer p.detach()
	p.mu.Lock()
	p.apply(1) // as a shrink would
	p.mu.Unlock()
	if err := inst.Stop(); err != nil {
		t.Fatal(err)
	}
	for range 2 {
		fc.Step(time.Second)
		p.evaluate(fc.Now(), nil)
	}
	st := p.Stats()
	if st.Limit != 8 || s.MaxInFlight() != 8 || st.Reason != string(reasonUninstrumented) {
		t.Errorf("after Stop: %+v, queue limit %d; want 8 for %s", st, s.MaxInFlight(), reasonUninstrumented)
	}
	if d := p.decisions(); len(d) != 1 || d[0].From != 1 || d[0].To != 8 {
		t.Errorf("decisions %+v, want one, 1 → 8", d)
	}
	inst2, err := Instrument(s, opts...)
	if err != nil {
		t.Fatal(err)
	}
	defer inst2.Stop()
	fc.Step(time.Second)
	p.evaluate(fc.Now(), nil)
	p.mu.Lock()
	blind := p.blind
	p.mu.Unlock()
	if blind {
		t.Error("instrumented again, the pool is still blind")
	}
}
