package otelqueue_test

import (
	"log/slog"
	"strings"
	"testing"
	"time"

	"github.com/otelqueue/otelqueue/internal/semconv"

	metricnoop "go.opentelemetry.io/otel/metric/noop"
	"go.opentelemetry.io/otel/sdk/metric/metricdata"
	"go.uber.org/goleak"

	"github.com/otelqueue/otelqueue/otelqueue"
	"github.com/otelqueue/otelqueue/scheduler"
)

// waitFor polls cond (real time, a guard against hangs, not a
// measurement): the standby's watcher runs in its own goroutine.
func waitFor(t *testing.T, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(5 * time.Second)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("timed out waiting for %s", what)
		}
		time.Sleep(time.Millisecond)
	}
}

// standbyGauge returns the workqueue.standby point, and false when there is
// none.
func standbyGauge(t *testing.T, e *env) (int64, bool) {
	t.Helper()
	for _, sm := range e.collect(t).ScopeMetrics {
		for _, m := range sm.Metrics {
			if m.Name == semconv.MetricStandby {
				pts := m.Data.(metricdata.Gauge[int64]).DataPoints
				if len(pts) != 1 {
					t.Fatalf("%s: %d points, want 1", m.Name, len(pts))
				}
				return pts[0].Value, true
			}
		}
	}
	return 0, false
}

// oldestGauge returns the workqueue.oldest_pending_item point's value.
func oldestGauge(t *testing.T, e *env) float64 {
	t.Helper()
	pts := findMetric(t, e.collect(t), semconv.MetricOldestPending).Data.(metricdata.Gauge[float64]).DataPoints
	if len(pts) != 1 {
		t.Fatalf("%s: %d points, want 1", semconv.MetricOldestPending, len(pts))
	}
	return pts[0].Value
}

// TestStandbyWait: a warm standby fills its queue while its workers wait
// for leadership (controller-runtime's EnableWarmup). The keys' wait for a
// worker counts from when the queue became active, not from when they were
// ready: an hour of standby is not an hour of queue wait. The queued span
// still starts at the enqueue, with an "active" event where the standby
// ended; the gauge says standby (1) until then, and active (0) after; the
// oldest pending key has waited for no worker while standby, and from the
// election after it.
func TestStandbyWait(t *testing.T) {
	elected := make(chan struct{})
	e := newEnv(t, envConfig{opts: []otelqueue.Option{otelqueue.WithStandby(elected)}})
	if v, ok := standbyGauge(t, e); !ok || v != 1 || !e.inst.Standby() {
		t.Fatalf("before the election: gauge %d (reported %v), Standby() %v; want 1 and true", v, ok, e.inst.Standby())
	}
	e.q.Add("a") // t0
	e.step(time.Hour)
	if v := oldestGauge(t, e); v != 0 {
		t.Errorf("standby an hour after a's add: oldest pending %v s, want 0 (no key waits for a worker yet)", v)
	}
	close(elected) // t0+1h
	waitFor(t, "the queue to become active", func() bool { return !e.inst.Standby() })
	e.step(2 * time.Second)
	e.q.Add("b") // ready after the election
	e.step(time.Second)
	if v := oldestGauge(t, e); v != 3 {
		t.Errorf("3 s after the election: oldest pending %v s, want 3 (from the election, not from a's add an hour before)", v)
	}
	e.getKey(t, "a")
	e.q.Done("a")
	e.getKey(t, "b")
	e.q.Done("b")

	rm := e.collect(t)
	p := histogramPoint(t, findMetric(t, rm, semconv.MetricQueueDuration))
	// a: 3 s from the election (not 1 h 3 s); b: 1 s from its add.
	if maxV, ok := p.Max.Value(); p.Count != 2 || p.Sum != 4 || !ok || maxV != 3 {
		t.Errorf("queue wait: count %d, sum %v, max %v; want 2 waits of 3 s and 1 s", p.Count, p.Sum, p.Max)
	}
	if v, ok := standbyGauge(t, e); !ok || v != 0 {
		t.Errorf("after the election: gauge %d (reported %v), want 0", v, ok)
	}
	_, queued, _ := attemptSpans(t, e.sr.Ended(), "a", 1)
	assertTimes(t, queued, t0, t0.Add(time.Hour+3*time.Second))
	var active []time.Time
	for _, ev := range queued.Events() {
		if ev.Name == semconv.EventActive {
			active = append(active, ev.Time)
		}
	}
	if len(active) != 1 || !active[0].Equal(t0.Add(time.Hour)) {
		t.Errorf("the queued span of a key ready during the standby: %s events at %v, want one at the election", semconv.EventActive, active)
	}
	_, queuedB, _ := attemptSpans(t, e.sr.Ended(), "b", 1)
	for _, ev := range queuedB.Events() {
		if ev.Name == semconv.EventActive {
			t.Errorf("the queued span of a key ready after the election has an %s event", ev.Name)
		}
	}
}

// TestStandbyAbsentAndRefused: a queue without WithStandby has no standby
// gauge and is never standby; a nil channel is refused with an error that
// says what to pass; Stop ends the watcher of a standby never elected
// (goleak in TestMain checks it), and Standby on a nil Instrumentation is
// false.
func TestStandbyAbsentAndRefused(t *testing.T) {
	e := newEnv(t, envConfig{})
	if _, ok := standbyGauge(t, e); ok || e.inst.Standby() {
		t.Errorf("a queue without WithStandby reports standby")
	}
	q := scheduler.New(scheduler.Config[string]{Name: "refused"})
	defer q.ShutDown()
	if _, err := otelqueue.Instrument(q, otelqueue.WithStandby(nil)); err == nil || !strings.Contains(err.Error(), "mgr.Elected()") {
		t.Errorf("WithStandby(nil): %v, want an error naming mgr.Elected()", err)
	}
	never := make(chan struct{})
	inst, err := otelqueue.Instrument(q, otelqueue.WithStandby(never))
	if err != nil {
		t.Fatal(err)
	}
	if !inst.Standby() {
		t.Errorf("not standby before its channel is closed")
	}
	if err := inst.Stop(); err != nil {
		t.Fatal(err)
	}
	if err := inst.Stop(); err != nil {
		t.Errorf("a second Stop: %v", err)
	}
	var none *otelqueue.Instrumentation
	if none.Standby() {
		t.Errorf("a nil Instrumentation is standby")
	}
}

// TestStandbyPoolIdle: an adaptive pool decides nothing while its queue is
// standby: no worker takes a key for two minutes, which shrinks an active
// queue's idle pool (the control below); once active, the pool decides
// again.
func TestStandbyPoolIdle(t *testing.T) {
	// idle steps 2 minutes without a key taken, the pool's ticker ticking
	// every second.
	idle := func(a *adaptiveEnv) {
		for range 120 {
			a.clk.Step(time.Second)
			a.clk.tick(t)
		}
	}
	control := newAdaptiveEnv(t)
	idle(control)
	if st := control.stats(t); st.Changes == 0 {
		t.Fatalf("control: an active queue's pool idle for 2 minutes did not change: %+v; the standby case proves nothing", st)
	}

	clk := newTickClock()
	logs := new(logRecords)
	elected := make(chan struct{})
	e := newEnv(t, envConfig{
		sched: scheduler.Config[string]{Clock: clk},
		opts: []otelqueue.Option{otelqueue.WithStandby(elected), otelqueue.AdaptiveWorkers{
			Min: 1, Max: 16, Start: 2, Interval: time.Second, Logger: slog.New(logs),
		}},
	})
	a := &adaptiveEnv{env: e, clk: clk, logs: logs, d: &driver{t: t, q: e.q, clk: clk}}
	idle(a)
	if st := a.stats(t); st.Changes != 0 || st.Limit != 2 {
		t.Fatalf("standby for 2 minutes: %+v; want no change from 2", st)
	}
	close(elected)
	waitFor(t, "the queue to become active", func() bool { return !e.inst.Standby() })
	a.grow(t)
	if st := a.stats(t); st.Changes == 0 || st.Limit <= 2 {
		t.Errorf("active, under a load that needs 20: %+v; want grown from 2", st)
	}
}

// TestStandbyEndsAtTheFirstKeyTaken: controller-runtime starts a new
// leader's workers before it closes mgr.Elected(): a worker that takes a
// key ends the standby, and the keys' wait counts from then.
func TestStandbyEndsAtTheFirstKeyTaken(t *testing.T) {
	never := make(chan struct{})
	e := newEnv(t, envConfig{opts: []otelqueue.Option{otelqueue.WithStandby(never)}})
	e.q.Add("a")
	e.q.Add("b")
	e.step(time.Minute)
	e.getKey(t, "a") // the standby ends
	if e.inst.Standby() {
		t.Error("standby after a worker took a key")
	}
	e.step(time.Second)
	e.getKey(t, "b")
	e.q.Done("a")
	e.q.Done("b")
	p := histogramPoint(t, findMetric(t, e.collect(t), semconv.MetricQueueDuration))
	if maxV, ok := p.Max.Value(); p.Count != 2 || p.Sum != 1 || !ok || maxV != 1 {
		t.Errorf("queue wait: count %d, sum %v, max %v; want 0 s and 1 s from the first key taken, not a minute", p.Count, p.Sum, p.Max)
	}
	if v, ok := standbyGauge(t, e); !ok || v != 0 {
		t.Errorf("gauge %d (reported %v), want 0", v, ok)
	}
}

// TestStandbyElectedBefore: a queue instrumented again with a channel
// closed already (its election came before, with the earlier
// instrumentation) is active from the start: a key that waited 1.2 s
// before the new Instrument has its whole wait recorded, where it was cut
// at the instrumentation, as if the election had come then.
func TestStandbyElectedBefore(t *testing.T) {
	elected := make(chan struct{})
	close(elected)
	e := newEnv(t, envConfig{opts: []otelqueue.Option{otelqueue.WithStandby(elected)}})
	if e.inst.Standby() {
		t.Fatal("standby with its channel closed already")
	}
	if err := e.inst.Stop(); err != nil {
		t.Fatal(err)
	}
	e.q.Add("a") // t0, between two instrumentations
	e.step(1200 * time.Millisecond)
	inst, err := otelqueue.Instrument(e.q, otelqueue.WithMeterProvider(e.mp), otelqueue.WithTracerProvider(e.tp), otelqueue.WithStandby(elected))
	if err != nil {
		t.Fatal(err)
	}
	defer inst.Stop()
	e.getKey(t, "a")
	e.q.Done("a")
	p := histogramPoint(t, findMetric(t, e.collect(t), semconv.MetricQueueDuration))
	if p.Count != 1 || p.Sum != 1.2 {
		t.Errorf("queue wait: count %d, sum %v; want the whole 1.2 s", p.Count, p.Sum)
	}
}

// TestStandbyWatcherEndsWithTheQueue: a standby queue never elected, shut
// down without Instrumentation.Stop, does not keep its watcher goroutine.
func TestStandbyWatcherEndsWithTheQueue(t *testing.T) {
	ignore := goleak.IgnoreCurrent()
	q := scheduler.New(scheduler.Config[string]{Name: "never-elected"})
	if _, err := otelqueue.Instrument(q, otelqueue.WithStandby(make(chan struct{})), otelqueue.WithMeterProvider(metricnoop.NewMeterProvider())); err != nil {
		t.Fatal(err)
	}
	q.ShutDown()
	waitFor(t, "the standby watcher to end", func() bool { return goleak.Find(ignore) == nil })
}
