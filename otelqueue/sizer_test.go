package otelqueue_test

import (
	"context"
	"fmt"
	"reflect"
	"strings"
	"sync"
	"testing"
	"time"

	testingclock "k8s.io/utils/clock/testing"

	"github.com/otelqueue/otelqueue/bottleneck"
	"github.com/otelqueue/otelqueue/otelqueue"
	"github.com/otelqueue/otelqueue/procstat"
	"github.com/otelqueue/otelqueue/scheduler"
)

// sizerEnv is a queue on a fake clock, instrumented with the real SDK and
// sized by a Sizer on the same clock.
type sizerEnv struct {
	*env
	sizer *otelqueue.Sizer
	next  int // the next key
}

func newSizerEnv(t *testing.T, workers int, opts ...otelqueue.Option) *sizerEnv {
	t.Helper()
	s := &otelqueue.Sizer{}
	clk := testingclock.NewFakeClock(t0)
	otelqueue.SetSizerClock(s, clk)
	otelqueue.SetSizerProcess(s, fakeProcess(clk))
	e := newEnvOn(t, clk, append([]otelqueue.Option{otelqueue.WithSizer(s), otelqueue.WithWorkers(workers)}, opts...)...)
	return &sizerEnv{env: e, sizer: s}
}

// second runs one second of load: n keys added, worked concurrently
// `at once` keys at a time, each for work, then the rest of the second
// idle; the Sizer reads every 10 s of it.
func (e *sizerEnv) second(t *testing.T, n, atOnce int, work time.Duration) {
	t.Helper()
	start := e.clock.Now()
	for i := 0; i < n; i++ {
		e.q.Add(fmt.Sprint("key-", e.next))
		e.next++
	}
	for done := 0; done < n; done += atOnce {
		var items []scheduler.Item[string]
		for range min(atOnce, n-done) {
			items = append(items, e.get(t))
		}
		e.step(work)
		for _, it := range items {
			e.q.Done(it.Key)
		}
	}
	if rest := time.Second - e.clock.Since(start); rest > 0 {
		e.step(rest)
	}
	if e.clock.Now().Sub(t0)%(10*time.Second) < time.Second {
		otelqueue.TickSizer(e.sizer)
	}
}

func (e *sizerEnv) run(t *testing.T, d time.Duration, n, atOnce int, work time.Duration) {
	t.Helper()
	for range int(d / time.Second) {
		e.second(t, n, atOnce, work)
	}
}

// TestSizerHoldsThePeak runs a queue through a quiet, a busy and a quiet
// phase: the recommendation holds the busy phase's workers until it is
// older than the horizon, and the history it keeps stays bounded.
func TestSizerHoldsThePeak(t *testing.T) {
	e := newSizerEnv(t, 4)
	// 10 keys/s of 50ms: 10 × 0.05 / 0.7 = 0.71, 1 worker.
	e.run(t, 10*time.Minute, 10, 2, 50*time.Millisecond)
	// Between two readings every reader sees the same answer.
	before := e.sizer.Recommend()
	e.step(5 * time.Second)
	if after := e.sizer.Recommend(); !reflect.DeepEqual(before, after) {
		t.Errorf("two looks between readings differ:\n%v\n%v", before, after)
	}
	q := e.sizer.Recommend().Queues[0]
	if !q.Known || q.Run != 1 || q.Workers != 4 || q.Class != bottleneck.None {
		t.Fatalf("quiet: %+v, want 1 of 4", q)
	}
	// 40 keys/s of 50ms, 4 at once: 40 × 0.05 / 0.7 = 2.86, 3 workers.
	e.run(t, 6*time.Minute, 40, 4, 50*time.Millisecond)
	busyEnd := e.clock.Now()
	e.run(t, 20*time.Minute, 10, 2, 50*time.Millisecond)
	r := e.sizer.Recommend()
	q = r.Queues[0]
	if q.Run != 3 || q.PeakAt.After(busyEnd) || q.PeakAt.Before(busyEnd.Add(-time.Minute)) {
		t.Errorf("after the busy phase: %+v, want 3 from a span that ends in the busy phase's last minute (%v)", q, busyEnd)
	}
	if r.Span != bottleneck.PeakSpan || !strings.Contains(r.String(), "orders 3 (4 run: more than enough") {
		t.Errorf("span %v, %q", r.Span, r)
	}
	if !r.CPU.Known || !r.Memory.Known || r.Memory.Request < r.Memory.Needed {
		t.Errorf("cpu %+v memory %+v", r.CPU, r.Memory)
	}
	// An hour later the busy phase is beyond the horizon.
	e.run(t, bottleneck.Horizon, 10, 2, 50*time.Millisecond)
	if q := e.sizer.Recommend().Queues[0]; q.Run != 1 {
		t.Errorf("an hour after the busy phase: %+v, want 1", q)
	}
	spans, readings := otelqueue.SizerHistory(e.sizer)
	if want := int(bottleneck.Horizon / time.Minute); spans < want-1 || spans > want+1 {
		t.Errorf("%d spans kept, want about %d (an hour of spans a minute apart)", spans, want)
	}
	if want := int(bottleneck.PeakSpan/(10*time.Second)) + 1; readings > want+1 {
		t.Errorf("%d readings kept, want at most %d", readings, want+1)
	}
}

// TestSizerStart checks that Start reads every Interval until its context
// ends, refuses a second Start while running, and may start again after.
func TestSizerStart(t *testing.T) {
	e := newSizerEnv(t, 2)
	e.sizer.Interval = 5 * time.Second
	ctx, cancel := context.WithCancel(context.Background())
	var wg sync.WaitGroup
	wg.Go(func() {
		if err := e.sizer.Start(ctx); err != nil {
			t.Errorf("Start: %v", err)
		}
	})
	waitFor(t, "the first reading", func() bool { _, r := otelqueue.SizerHistory(e.sizer); return r >= 2 })
	if err := e.sizer.Start(ctx); err == nil || !strings.Contains(err.Error(), "started already") {
		t.Errorf("a second Start: %v, want an error", err)
	}
	for i := 0; i < 3; i++ {
		waitFor(t, "the ticker", e.clock.HasWaiters)
		e.clock.Step(time.Minute) // the ticker's period passes, and the history's step
		want := i + 1
		waitFor(t, fmt.Sprintf("span %d", want), func() bool { s, _ := otelqueue.SizerHistory(e.sizer); return s >= want })
	}
	cancel()
	wg.Wait()
	ctx2, cancel2 := context.WithCancel(context.Background())
	cancel2()
	if err := e.sizer.Start(ctx2); err != nil {
		t.Errorf("Start after the first returned: %v", err)
	}
	var nilSizer *otelqueue.Sizer
	if err := nilSizer.Start(context.Background()); err == nil {
		t.Error("Start on a nil Sizer: no error")
	}
	if r := nilSizer.Recommend(); !r.At.IsZero() {
		t.Errorf("a nil Sizer recommends %v", r)
	}
	if r := (&otelqueue.Sizer{}).Recommend(); !r.At.IsZero() || r.String() != "size: nothing measured yet" {
		t.Errorf("a Sizer without queues recommends %v", r)
	}
}

// TestSizerQueues checks that a queue stopped leaves the recommendation,
// that WithSizer(nil) is ignored, and that a standby queue is not sized
// until it leads.
func TestSizerQueues(t *testing.T) {
	e := newSizerEnv(t, 2)
	other := scheduler.New(scheduler.Config[string]{Name: "others", Clock: e.clock})
	defer other.ShutDown()
	active := make(chan struct{})
	inst, err := otelqueue.Instrument(other, otelqueue.WithMeterProvider(e.mp), otelqueue.WithSizer(e.sizer), otelqueue.WithStandby(active), otelqueue.WithWorkers(1))
	if err != nil {
		t.Fatal(err)
	}
	defer inst.Stop()
	third := scheduler.New(scheduler.Config[string]{Name: "unsized", Clock: e.clock})
	defer third.ShutDown()
	inst3, err := otelqueue.Instrument(third, otelqueue.WithMeterProvider(e.mp), otelqueue.WithSizer(nil))
	if err != nil {
		t.Fatalf("WithSizer(nil): %v", err)
	}
	defer inst3.Stop()
	e.run(t, 20*time.Second, 10, 2, 10*time.Millisecond)
	if names := queueNames(e.sizer.Recommend()); names != "orders" {
		t.Errorf("queues %s, want orders only (others standby, unsized not sized)", names)
	}
	close(active)
	e.run(t, 20*time.Second, 10, 2, 10*time.Millisecond)
	if names := queueNames(e.sizer.Recommend()); names != "orders others" {
		t.Errorf("queues %s after others leads, want orders others", names)
	}
	if err := inst.Stop(); err != nil {
		t.Fatal(err)
	}
	e.run(t, 20*time.Second, 10, 2, 10*time.Millisecond)
	if names := queueNames(e.sizer.Recommend()); names != "orders" {
		t.Errorf("queues %s after others stopped, want orders", names)
	}
}

func queueNames(r bottleneck.Recommendation) string {
	var names []string
	for _, q := range r.Queues {
		names = append(names, q.Name)
	}
	return strings.Join(names, " ")
}

// TestSizerCaches checks the objects counted from the caches, and that a
// nil cache, a typed nil and one whose List panics are left out.
func TestSizerCaches(t *testing.T) {
	var typedNil *panicky
	s := &otelqueue.Sizer{Caches: []otelqueue.Cache{nil, typedNil, &panicky{}, store{"a", "bb"}, store{"ccc"}}}
	clk := testingclock.NewFakeClock(t0)
	otelqueue.SetSizerClock(s, clk)
	newEnvOn(t, clk, otelqueue.WithSizer(s))
	clk.Step(2 * time.Second)
	m := s.Recommend().Memory
	if m.Objects != 3 || m.PerObject == 0 {
		t.Errorf("memory %+v, want 3 objects counted", m)
	}
}

type panicky struct{}

func (*panicky) List() []any { panic("a broken cache") }

// TestSizerConcurrent reads the recommendation from several goroutines
// while the Sizer ticks and queues come and go (-race).
func TestSizerConcurrent(t *testing.T) {
	s := &otelqueue.Sizer{Interval: time.Millisecond}
	ctx, cancel := context.WithCancel(context.Background())
	var wg sync.WaitGroup
	wg.Go(func() { _ = s.Start(ctx) })
	for g := range 4 {
		wg.Go(func() {
			for i := range 50 {
				q := scheduler.New(scheduler.Config[string]{Name: fmt.Sprintf("q%d-%d", g, i)})
				inst, err := otelqueue.Instrument(q, otelqueue.WithSizer(s))
				if err != nil {
					t.Error(err)
					return
				}
				q.Add("k")
				_ = s.Recommend().String()
				_ = inst.Stop()
				q.ShutDown()
			}
		})
	}
	time.Sleep(50 * time.Millisecond)
	cancel()
	wg.Wait()
}

// newEnvOn is newEnv with the queue on clk, and opts after the providers.
func newEnvOn(t *testing.T, clk *testingclock.FakeClock, opts ...otelqueue.Option) *env {
	t.Helper()
	e := newEnv(t, envConfig{sched: scheduler.Config[string]{Clock: clk}, opts: opts})
	e.clock = clk
	return e
}

// TestSizerWorkersAfterRun checks that the recommendation read after a
// Runner's Run returned still knows how many workers ran.
func TestSizerWorkersAfterRun(t *testing.T) {
	q := scheduler.New(scheduler.Config[string]{Name: "after-run"})
	s := &otelqueue.Sizer{}
	inst, err := otelqueue.Instrument(q, otelqueue.WithSizer(s))
	if err != nil {
		t.Fatal(err)
	}
	defer inst.Stop()
	r, err := otelqueue.NewRunner(q, 3, func(context.Context, string) (otelqueue.Result, error) { return otelqueue.Result{}, nil })
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error)
	go func() { done <- r.Run(ctx) }()
	for i := range 10 {
		q.Add(fmt.Sprint(i))
	}
	waitFor(t, "the workers", func() bool { return s.Recommend().Queues[0].Workers == 3 })
	time.Sleep(1100 * time.Millisecond)
	cancel()
	if err := <-done; err != nil {
		t.Fatal(err)
	}
	if got := s.Recommend().Queues[0]; got.Workers != 3 {
		t.Errorf("after Run returned: %+v, want 3 workers run", got)
	}
}

// TestSizerShortInterval checks that an Interval under 100 ms reads every
// 100 ms, not in a loop that burns a core and fills the memory.
func TestSizerShortInterval(t *testing.T) {
	s := &otelqueue.Sizer{Interval: time.Nanosecond}
	q := scheduler.New(scheduler.Config[string]{Name: "short"})
	defer q.ShutDown()
	inst, err := otelqueue.Instrument(q, otelqueue.WithSizer(s))
	if err != nil {
		t.Fatal(err)
	}
	defer inst.Stop()
	ctx, cancel := context.WithTimeout(context.Background(), 550*time.Millisecond)
	defer cancel()
	if err := s.Start(ctx); err != nil {
		t.Fatal(err)
	}
	if _, readings := otelqueue.SizerHistory(s); readings > 8 {
		t.Errorf("%d readings in 550ms with Interval 1ns, want about 6 (one per 100ms)", readings)
	}
}

// fakeProcess is a process on clk that uses a tenth of one of its 2 cores,
// waits for no CPU, and holds 20 MiB: the figures of a test on a fake clock
// are the clock's, not the load of the machine that runs it.
func fakeProcess(clk *testingclock.FakeClock) func() procstat.Sample {
	return func() procstat.Sample {
		elapsed := clk.Since(t0)
		return procstat.Sample{
			At: clk.Now(), CPUKnown: true, User: elapsed / 10, GOMAXPROCS: 2, NumCPU: 2,
			RunDelayKnown: true, HeapLive: 8 << 20, HeapGoal: 16 << 20, MemoryUsed: 20 << 20, MemoryNeeded: 20 << 20,
		}
	}
}
