package otelqueue_test

import (
	"context"
	"errors"
	"fmt"
	"math"
	"runtime"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/otelqueue/otelqueue/internal/semconv"

	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/sdk/metric/metricdata"
	"go.opentelemetry.io/otel/sdk/metric/metricdata/metricdatatest"

	"github.com/otelqueue/otelqueue/internal/testutil"
	"github.com/otelqueue/otelqueue/otelqueue"
	"github.com/otelqueue/otelqueue/scheduler"
)

// The observable instruments every instrumented queue reports.
var queueGauges = []string{
	semconv.MetricDepth, semconv.MetricDelayed, semconv.MetricAdds,
	semconv.MetricRetries, semconv.MetricDelayedAdds, semconv.MetricCoalesced, semconv.MetricOldestPending,
	semconv.MetricUnfinishedWork, semconv.MetricLongestRunning,
}

// queueState is what the observable instruments of one queue say.
type queueState struct {
	depth, delayed, adds, retries, coalesced int64
	delayedAdds                              int64
	oldest, unfinished, longest              float64
}

// withPriority is attrs with the depth's priority attribute.
func withPriority(attrs attribute.Set, priority string) attribute.Set {
	return attribute.NewSet(append(attrs.ToSlice(), semconv.AttrPriority.String(priority))...)
}

func (s queueState) metrics(attrs attribute.Set) []metricdata.Metrics {
	return []metricdata.Metrics{
		intSum(semconv.MetricDepth, "{item}", false, withPriority(attrs, "0"), s.depth),
		intSum(semconv.MetricDelayed, "{item}", false, attrs, s.delayed),
		intSum(semconv.MetricAdds, "{item}", true, attrs, s.adds),
		intSum(semconv.MetricRetries, "{item}", true, attrs, s.retries),
		intSum(semconv.MetricDelayedAdds, "{item}", true, attrs, s.delayedAdds),
		intSum(semconv.MetricCoalesced, "{item}", true, attrs, s.coalesced),
		seconds(semconv.MetricOldestPending, attrs, s.oldest),
		seconds(semconv.MetricUnfinishedWork, attrs, s.unfinished),
		seconds(semconv.MetricLongestRunning, attrs, s.longest),
	}
}

// TestMetricsScriptedSequence drives a named scheduler through Add, AddAfter,
// Get, Done, AddRateLimited and coalesced adds on a fake clock and checks
// every instrument's name, unit, kind, attributes and value at each stage.
func TestMetricsScriptedSequence(t *testing.T) {
	e := newEnv(t, envConfig{})
	q := e.q
	bounds := otelqueue.DefaultBuckets()

	// t=0: a and b ready, a added again (coalesced), c delayed by 10s.
	q.Add("a")
	q.Add("b")
	q.Add("a")
	q.AddAfter("c", 10*time.Second)

	e.step(2 * time.Second) // t=2s
	rm := e.collect(t)
	assertNames(t, rm, queueGauges...) // no histogram before the first Get, no runner metrics without a Runner
	assertMetrics(t, rm, noTime, queueState{
		depth: 2, delayed: 1, adds: 3, retries: 1, delayedAdds: 1, coalesced: 1,
		oldest: 2, // a has been ready since t=0
	}.metrics(queueAttrs)...)

	// The plain client-go loop: Get and Done without a context.
	if k, shutdown := q.Get(); k != "a" || shutdown {
		t.Fatalf("Get = %q, %v; want a, false", k, shutdown)
	} // waited 2s
	e.step(time.Second) // t=3s
	if k, _ := q.Get(); k != "b" {
		t.Fatalf("Get = %q, want b", k)
	} // waited 3s
	e.step(time.Second) // t=4s

	rm = e.collect(t)
	assertNames(t, rm, append(slices.Clone(queueGauges), semconv.MetricQueueDuration)...)
	assertMetrics(t, rm, noTimeNoExemplars, queueState{
		delayed: 1, adds: 3, retries: 1, delayedAdds: 1, coalesced: 1,
		unfinished: 3, // a for 2s, b for 1s
		longest:    2, // a, since t=2s
	}.metrics(queueAttrs)...)
	assertMetrics(t, rm, noTimeNoExemplars,
		histogram(semconv.MetricQueueDuration, queueAttrs, bounds, map[float64]uint64{2.5: 1, 5: 1}, 2, 5, 2, 3))

	q.Done("a")           // worked 2s
	q.AddRateLimited("b") // a retry while b is processed: held, ready at t=5s (backoff 1s)
	q.Done("b")           // worked 1s; b now waits for its backoff
	rm = e.collect(t)
	assertMetrics(t, rm, noTimeNoExemplars, queueState{
		delayed: 2, // b and c
		adds:    4, // b became pending again
		retries: 2, delayedAdds: 1, coalesced: 1,
	}.metrics(queueAttrs)...)
	assertMetrics(t, rm, noTimeNoExemplars,
		histogram(semconv.MetricWorkDuration, queueAttrs, bounds, map[float64]uint64{1: 1, 2.5: 1}, 2, 3, 1, 2))

	e.step(1500 * time.Millisecond) // t=5.5s: b's backoff ended at 5s
	rm = e.collect(t)
	assertMetrics(t, rm, noTimeNoExemplars, queueState{
		depth: 1, delayed: 1, adds: 4, retries: 2, delayedAdds: 1, coalesced: 1,
		oldest: 0.5, // ready since t=5s: the age counts from ReadyAt, not from the add
	}.metrics(queueAttrs)...)

	e.getKey(t, "b")               // waited 0.5s ready (5.5s since its add)
	e.step(500 * time.Millisecond) // t=6s
	q.Done("b")                    // worked 0.5s
	e.step(4 * time.Second)        // t=10s: c's delay ends
	e.getKey(t, "c")               // waited 0s ready (10s since its add)
	e.step(250 * time.Millisecond)
	q.Done("c") // worked 0.25s

	rm = e.collect(t)
	assertNames(t, rm, append(slices.Clone(queueGauges), semconv.MetricQueueDuration, semconv.MetricWorkDuration)...)
	assertMetrics(t, rm, noTimeNoExemplars, queueState{adds: 4, retries: 2, delayedAdds: 1, coalesced: 1}.metrics(queueAttrs)...)
	assertMetrics(t, rm, noTimeNoExemplars,
		// Queue wait is DequeuedAt - ReadyAt, client-go's meaning: 2, 3, 0.5, 0.
		histogram(semconv.MetricQueueDuration, queueAttrs, bounds,
			map[float64]uint64{0.0001: 1, 0.5: 1, 2.5: 1, 5: 1}, 4, 5.5, 0, 3),
		histogram(semconv.MetricWorkDuration, queueAttrs, bounds,
			map[float64]uint64{0.25: 1, 0.5: 1, 1: 1, 2.5: 1}, 4, 3.75, 0.25, 2))

	// The default buckets are second-scale, 100µs to 1000s.
	got := histogramPoint(t, findMetric(t, rm, semconv.MetricQueueDuration)).Bounds
	if len(got) != 22 || got[0] != 0.0001 || got[len(got)-1] != 1000 || !slices.IsSorted(got) {
		t.Errorf("default bounds = %v", got)
	}
}

// TestMetricsHeldKey checks the numbers of a key added again while it is
// processed: a new pending run (an add, not a coalesced one) that waits,
// held, until Done and then counts as ready from the Done.
func TestMetricsHeldKey(t *testing.T) {
	e := newEnv(t, envConfig{})
	q := e.q
	q.Add("a")
	e.getKey(t, "a")
	e.step(time.Second)
	q.Add("a") // held while a is processed
	q.Add("a") // coalesced into the held run
	e.step(time.Second)
	rm := e.collect(t)
	assertMetrics(t, rm, noTimeNoExemplars, queueState{
		adds: 2, coalesced: 1, unfinished: 2, longest: 2,
	}.metrics(queueAttrs)...)
	q.Done("a") // t=2s: a is ready again
	e.step(3 * time.Second)
	rm = e.collect(t)
	assertMetrics(t, rm, noTimeNoExemplars, queueState{depth: 1, adds: 2, coalesced: 1, oldest: 3}.metrics(queueAttrs)...)
	e.getKey(t, "a")
	q.Done("a")
	rm = e.collect(t)
	assertMetrics(t, rm, noTimeNoExemplars,
		// 0s for the first run, 3s ready (since the Done) for the second.
		histogram(semconv.MetricQueueDuration, queueAttrs, otelqueue.DefaultBuckets(),
			map[float64]uint64{0.0001: 1, 5: 1}, 2, 3, 0, 3))
}

// TestMetricsKeyInLineWhileProcessed: with the scheduler's
// OrderByAdd, the key added again while processed counts in
// the depth and the oldest pending item from its add, as
// controller-runtime's workqueue_depth does.
func TestMetricsKeyInLineWhileProcessed(t *testing.T) {
	e := newEnv(t, envConfig{sched: scheduler.Config[string]{OrderByAdd: true}})
	q := e.q
	q.Add("a")
	e.getKey(t, "a")
	e.step(time.Second)
	q.Add("a") // in line while a is processed
	q.Add("a") // coalesced
	e.step(time.Second)
	rm := e.collect(t)
	assertMetrics(t, rm, noTimeNoExemplars, queueState{
		depth: 1, adds: 2, coalesced: 1, oldest: 1, unfinished: 2, longest: 2,
	}.metrics(queueAttrs)...)
	q.Done("a")
	e.getKey(t, "a")
	q.Done("a")
	rm = e.collect(t)
	assertMetrics(t, rm, noTimeNoExemplars, queueState{adds: 2, coalesced: 1}.metrics(queueAttrs)...)
}

// TestMetricsExplicitBuckets checks the WithExplicitBuckets override on both
// histograms, and that it copies its arguments.
func TestMetricsExplicitBuckets(t *testing.T) {
	bounds := []float64{1, 10}
	e := newEnv(t, envConfig{opts: []otelqueue.Option{otelqueue.WithExplicitBuckets(bounds...)}})
	bounds[0] = 5 // must not change the instrumentation's boundaries
	e.q.Add("a")
	e.step(3 * time.Second)
	e.getKey(t, "a")
	e.step(20 * time.Second)
	e.q.Done("a")
	rm := e.collect(t)
	assertMetrics(t, rm, noTimeNoExemplars,
		histogram(semconv.MetricQueueDuration, queueAttrs, []float64{1, 10}, map[float64]uint64{10: 1}, 1, 3, 3, 3),
		histogram(semconv.MetricWorkDuration, queueAttrs, []float64{1, 10}, map[float64]uint64{math.Inf(1): 1}, 1, 20, 20, 20))
}

// TestMetricsControllerName checks that WithControllerName sets the
// controller attribute of every data point of every metric, Runner metrics
// included, and that the name attribute stays the queue's name.
func TestMetricsControllerName(t *testing.T) {
	e := newEnv(t, envConfig{opts: []otelqueue.Option{otelqueue.WithControllerName("order-reconciler")}})
	r, err := newRunner(e.q, 1, func(context.Context, string) (otelqueue.Result, error) {
		return otelqueue.Result{}, nil
	})
	if err != nil {
		t.Fatal(err)
	}
	defer runtime.KeepAlive(r) // its workers count while it lives
	e.q.Add("a")
	e.getKey(t, "a")
	e.q.Done("a")
	rm := e.collect(t)
	assertNames(t, rm, append(slices.Clone(queueGauges), semconv.MetricQueueDuration, semconv.MetricWorkDuration,
		semconv.MetricActiveWorkers, semconv.MetricWorkers, semconv.MetricReconcileResults)...)
	metricdatatest.AssertHasAttributes(t, rm,
		semconv.AttrName.String(queueName), semconv.AttrController.String("order-reconciler"))
	want := attribute.NewSet(semconv.AttrName.String(queueName), semconv.AttrController.String("order-reconciler"))
	assertMetrics(t, rm, noTime, intSum(semconv.MetricAdds, "{item}", true, want, 1))
}

// TestMetricsRunner checks the Runner's metrics: active workers and
// reconciles by result.
func TestMetricsRunner(t *testing.T) {
	e := newEnv(t, envConfig{})
	hold := make(chan struct{})
	started := make(chan string, 10)
	r, err := newRunner(e.q, 1, func(_ context.Context, key string) (otelqueue.Result, error) {
		started <- key
		switch key {
		case "hold":
			<-hold
		case "error":
			return otelqueue.Result{}, errors.New("boom")
		case "requeue":
			return otelqueue.Result{Requeue: true}, nil
		case "requeue_after":
			return otelqueue.Result{RequeueAfter: time.Minute}, nil
		case "panic":
			panic("boom")
		}
		return otelqueue.Result{}, nil
	}, otelqueue.WithRunnerClock(e.clock))
	if err != nil {
		t.Fatal(err)
	}
	results := func(success, errs, requeue, requeueAfter, panics int64) metricdata.Metrics {
		dp := func(result otelqueue.Outcome, v int64) metricdata.DataPoint[int64] {
			return metricdata.DataPoint[int64]{
				Attributes: attribute.NewSet(append(queueAttrs.ToSlice(), semconv.AttrResult.String(result.String()))...),
				Value:      v,
			}
		}
		return metricdata.Metrics{
			Name: semconv.MetricReconcileResults,
			Unit: "{reconcile}",
			Data: metricdata.Sum[int64]{
				Temporality: metricdata.CumulativeTemporality,
				IsMonotonic: true,
				DataPoints: []metricdata.DataPoint[int64]{
					dp(otelqueue.OutcomeSuccess, success),
					dp(otelqueue.OutcomeError, errs),
					dp(otelqueue.OutcomeRequeue, requeue),
					dp(otelqueue.OutcomeRequeueAfter, requeueAfter),
					dp(otelqueue.OutcomePanic, panics),
				},
			},
		}
	}
	active := func(n int64) metricdata.Metrics {
		return intSum(semconv.MetricActiveWorkers, "{worker}", false, queueAttrs, n)
	}

	rm := e.collect(t)
	assertNames(t, rm, append(slices.Clone(queueGauges), semconv.MetricActiveWorkers, semconv.MetricWorkers, semconv.MetricReconcileResults)...)
	assertMetrics(t, rm, noTime, active(0), results(0, 0, 0, 0, 0), workersGauge(queueAttrs, 1))

	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- r.Run(ctx) }()
	e.q.Add("hold")
	if k := testutil.Receive(t, started, "the first reconcile"); k != "hold" {
		t.Fatalf("reconciled %q first, want hold", k)
	}
	for _, k := range []string{"success", "error", "requeue", "requeue_after", "panic"} {
		e.q.Add(k)
	}
	assertMetrics(t, e.collect(t), noTime, active(1), results(0, 0, 0, 0, 0),
		intSum(semconv.MetricDepth, "{item}", false, withPriority(queueAttrs, "0"), 5))

	close(hold)
	testutil.WaitFor(t, "six reconciles", func() bool {
		s := r.Stats()
		return s.Reconciles() == 6
	})
	testutil.WaitFor(t, "the last Done", func() bool { return e.q.Stats().InFlight == 0 })
	rm = e.collect(t)
	assertMetrics(t, rm, noTime, active(0), results(2, 1, 1, 1, 1),
		// error, requeue and panic wait for their backoff, requeue_after for its delay.
		intSum(semconv.MetricDelayed, "{item}", false, queueAttrs, 4),
		intSum(semconv.MetricRetries, "{item}", true, queueAttrs, 4))
	if s := r.Stats(); s != (otelqueue.RunnerStatsOf(1, outcomeCounts{otelqueue.OutcomeSuccess: 2, otelqueue.OutcomeError: 1, otelqueue.OutcomeRequeue: 1, otelqueue.OutcomeRequeueAfter: 1, otelqueue.OutcomePanic: 1})) {
		t.Errorf("Runner.Stats() = %+v", s)
	}

	cancel()
	if err := testutil.Receive(t, done, "Run to return"); err != nil {
		t.Errorf("Run = %v, want nil", err)
	}
}

// TestInstrumentErrors checks the errors of Instrument: nil and unnamed
// schedulers and invalid bucket boundaries.
func TestInstrumentErrors(t *testing.T) {
	named := func() *scheduler.Scheduler[string] {
		s := scheduler.New(scheduler.Config[string]{Name: queueName})
		t.Cleanup(s.ShutDown)
		return s
	}
	for _, tc := range []struct {
		name  string
		sched *scheduler.Scheduler[string]
		opts  []otelqueue.Option
		want  string
	}{
		{"nil scheduler", nil, nil, "needs a scheduler, got nil"},
		{"unnamed scheduler", scheduler.New(scheduler.Config[string]{}), nil, "set scheduler.Config.Name"},
		{"NaN bucket", named(), []otelqueue.Option{otelqueue.WithExplicitBuckets(1, math.NaN())}, "bucket boundary 1 is NaN"},
		{"infinite bucket", named(), []otelqueue.Option{otelqueue.WithExplicitBuckets(math.Inf(1))}, "bucket boundary 0 is +Inf"},
		{"decreasing buckets", named(), []otelqueue.Option{otelqueue.WithExplicitBuckets(1, 0.5)}, "must increase strictly, but 0.5 follows 1"},
		{"repeated bucket", named(), []otelqueue.Option{otelqueue.WithExplicitBuckets(1, 1)}, "must increase strictly"},
		{"no buckets", named(), []otelqueue.Option{otelqueue.WithExplicitBuckets()}, "at least one boundary"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			inst, err := otelqueue.Instrument(tc.sched, tc.opts...)
			if err == nil || inst != nil {
				t.Fatalf("Instrument = %v, %v; want an error", inst, err)
			}
			if !strings.Contains(err.Error(), tc.want) || !strings.HasPrefix(err.Error(), "otelqueue: ") {
				t.Errorf("error %q does not say %q", err, tc.want)
			}
			if tc.sched != nil && tc.sched.Observer() != nil {
				t.Error("a failed Instrument installed an Observer")
			}
		})
	}
}

// TestInstrumentationStop checks that Stop removes the Observer and the
// observable instruments, and is safe to call twice.
func TestInstrumentationStop(t *testing.T) {
	e := newEnv(t, envConfig{})
	e.q.Add("a")
	e.getKey(t, "a")
	e.q.Done("a")
	if n := len(e.sr.Ended()); n != 3 {
		t.Fatalf("%d spans before Stop, want 3", n)
	}
	if err := e.inst.Stop(); err != nil {
		t.Fatalf("Stop: %v", err)
	}
	if err := e.inst.Stop(); err != nil {
		t.Fatalf("second Stop: %v", err)
	}
	if e.q.Observer() != nil {
		t.Error("Stop left the Observer installed")
	}
	e.q.Add("b")
	e.getKey(t, "b")
	e.q.Done("b")
	if n := len(e.sr.Ended()); n != 3 {
		t.Errorf("%d spans after Stop, want still 3", n)
	}
	rm := e.collect(t)
	// The histograms keep what they recorded before Stop; the observable
	// instruments are gone.
	assertNames(t, rm, semconv.MetricQueueDuration, semconv.MetricWorkDuration)
	if c := histogramPoint(t, findMetric(t, rm, semconv.MetricQueueDuration)).Count; c != 1 {
		t.Errorf("queue duration count after Stop = %d, want 1", c)
	}
}

// depthSum is the expected `workqueue.depth` of the default queue by priority.
func depthSum(byPriority map[string]int64) metricdata.Metrics {
	attrs := attribute.NewSet(semconv.AttrName.String(queueName), semconv.AttrController.String(queueName))
	var points []metricdata.DataPoint[int64]
	for p, v := range byPriority {
		points = append(points, metricdata.DataPoint[int64]{Attributes: withPriority(attrs, p), Value: v})
	}
	return metricdata.Metrics{
		Name: semconv.MetricDepth,
		Unit: "{item}",
		Data: metricdata.Sum[int64]{Temporality: metricdata.CumulativeTemporality, DataPoints: points},
	}
}

// TestMetricsDepthByPriority checks controller-runtime's depth-by-priority
// semantics: a series per priority seen, kept at 0 when drained, delayed
// keys at none, and beyond MaxPriorities the rest summed under
// PriorityOverflow.
func TestMetricsDepthByPriority(t *testing.T) {
	e := newEnv(t, envConfig{})
	q := e.q
	bg := context.Background()

	assertMetrics(t, e.collect(t), noTime, depthSum(map[string]int64{"0": 0}))

	q.AddWithOptions(bg, scheduler.AddOptions{Priority: -100}, "l1", "l2", "l3")
	q.AddWithOptions(bg, scheduler.AddOptions{Priority: 5}, "h")
	q.AddWithOptions(bg, scheduler.AddOptions{Priority: 5, After: time.Second}, "later")
	assertMetrics(t, e.collect(t), noTime, depthSum(map[string]int64{"5": 1, "0": 0, "-100": 3}))

	for q.Len() > 0 {
		it := e.get(t)
		q.Done(it.Key)
	}
	e.step(time.Second) // "later" becomes ready
	assertMetrics(t, e.collect(t), noTime, depthSum(map[string]int64{"5": 1, "0": 0, "-100": 0}))
	q.Done(e.get(t).Key)

	// 0, 5 and -100 are known; 30 more priorities exceed the limit of 25.
	// A collection learns new priorities highest first: 130 down to 109.
	want := map[string]int64{"5": 0, "0": 0, "-100": 0}
	var overflow int64
	lowestKnown := 130 - (otelqueue.MaxPriorities - len(want)) + 1
	for p := 1; p <= 30; p++ {
		q.AddWithOptions(bg, scheduler.AddOptions{Priority: 100 + p}, fmt.Sprint("k", p))
		if 100+p >= lowestKnown {
			want[strconv.Itoa(100+p)] = 1
		} else {
			overflow++
		}
	}
	// A known priority keeps its series even after the limit is reached.
	q.AddWithOptions(bg, scheduler.AddOptions{Priority: -100}, "l1")
	want["-100"] = 1
	want[otelqueue.PriorityOverflow] = overflow
	if overflow != 8 {
		t.Fatalf("test setup: %d keys over the limit, want 8", overflow)
	}
	rm := e.collect(t)
	assertMetrics(t, rm, noTime, depthSum(want))

	var sum int64
	for _, dp := range findMetric(t, rm, semconv.MetricDepth).Data.(metricdata.Sum[int64]).DataPoints {
		sum += dp.Value
	}
	if st := q.Stats(); sum != int64(st.Depth) {
		t.Errorf("depth series sum to %d, Stats().Depth is %d", sum, st.Depth)
	}

	// Drained: every series stays, the overflow one too, at 0.
	for q.Len() > 0 {
		q.Done(e.get(t).Key)
	}
	for p := range want {
		want[p] = 0
	}
	assertMetrics(t, e.collect(t), noTime, depthSum(want))
}
