package otelqueue_test

import (
	"context"
	"testing"
	"time"

	"github.com/otelqueue/otelqueue/internal/semconv"
	"go.opentelemetry.io/otel/sdk/metric/exemplar"

	"go.opentelemetry.io/otel/sdk/metric/metricdata"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/trace"

	"github.com/otelqueue/otelqueue/internal/testutil"
	"github.com/otelqueue/otelqueue/otelqueue"
)

// exemplarOf is the exemplar a histogram should carry for a measurement made
// inside span sc.
func exemplarOf(sc trace.SpanContext, v float64) metricdata.Exemplar[float64] {
	tid, sid := sc.TraceID(), sc.SpanID()
	return metricdata.Exemplar[float64]{Value: v, TraceID: tid[:], SpanID: sid[:]}
}

// TestExemplarsPointToTheItemsTrace checks, with a sampled TracerProvider and
// the SDK's default (trace-based) exemplar filter, that each histogram bucket's
// exemplar carries the trace of the very item measured: the queue wait the
// "queued" span, the work duration the "reconcile" span, with the values of
// the fake clock.
func TestExemplarsPointToTheItemsTrace(t *testing.T) {
	e := newEnv(t, envConfig{})
	enq, enqSC := e.enqueuer(t, "handler")

	e.q.AddContext(enq, "a") // t=0
	e.step(3 * time.Second)
	itA := e.getKey(t, "a") // waited 3s
	e.q.Add("b")            // t=3s, no enqueuer span
	e.step(250 * time.Millisecond)
	itB := e.getKey(t, "b") // waited 0.25s
	e.step(500 * time.Millisecond)
	e.q.Done("b") // worked 0.5s
	e.step(1250 * time.Millisecond)
	e.q.Done("a") // worked 2s

	rootA, queuedSpanA, reconcileSpanA := attemptSpans(t, e.sr.Ended(), "a", 1)
	_, queuedSpanB, reconcileSpanB := attemptSpans(t, e.sr.Ended(), "b", 1)
	queuedA, reconcileA := queuedSpanA.SpanContext(), reconcileSpanA.SpanContext()
	queuedB, reconcileB := queuedSpanB.SpanContext(), reconcileSpanB.SpanContext()
	if rootA.SpanContext().TraceID() == enqSC.TraceID() {
		t.Fatal("a's attempt is in the enqueuer's trace; want a new root that links to it")
	}
	// The item's context is the reconcile span's.
	if got := trace.SpanContextFromContext(itA.Context()); !got.Equal(reconcileA) {
		t.Errorf("a's Context() span = %v, want the reconcile span %v", got.SpanID(), reconcileA.SpanID())
	}
	if got := trace.SpanContextFromContext(itB.Context()); !got.Equal(reconcileB) {
		t.Errorf("b's Context() span = %v, want the reconcile span %v", got.SpanID(), reconcileB.SpanID())
	}

	rm := e.collect(t)
	bounds := otelqueue.DefaultBuckets()
	assertMetrics(t, rm, noTime,
		histogram(semconv.MetricQueueDuration, queueAttrs, bounds, map[float64]uint64{0.25: 1, 5: 1}, 2, 3.25, 0.25, 3,
			exemplarOf(queuedA, 3), exemplarOf(queuedB, 0.25)),
		histogram(semconv.MetricWorkDuration, queueAttrs, bounds, map[float64]uint64{0.5: 1, 2.5: 1}, 2, 2.5, 0.5, 2,
			exemplarOf(reconcileA, 2), exemplarOf(reconcileB, 0.5)),
	)
}

// TestExemplarsRunner checks the exemplars of an item processed by a Runner:
// the work duration's exemplar is the reconcile span the reconciler's ctx
// carried.
func TestExemplarsRunner(t *testing.T) {
	e := newEnv(t, envConfig{})
	spans := make(chan trace.SpanContext, 1)
	release := make(chan struct{})
	r, err := newRunner(e.q, 1, func(ctx context.Context, _ string) (otelqueue.Result, error) {
		spans <- trace.SpanContextFromContext(ctx)
		<-release
		return otelqueue.Result{}, nil
	})
	if err != nil {
		t.Fatal(err)
	}
	e.q.Add("a")
	e.step(2 * time.Second) // a waits 2s before the Runner starts
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- r.Run(ctx) }()
	reconcileSC := testutil.Receive(t, spans, "the reconcile")
	e.clock.Step(4 * time.Second)
	close(release)
	testutil.WaitFor(t, "the Done", func() bool { return r.Stats().Count(otelqueue.OutcomeSuccess) == 1 && e.q.Stats().InFlight == 0 })
	cancel()
	if err := testutil.Receive(t, done, "Run to return"); err != nil {
		t.Fatal(err)
	}

	queued := testutil.OneSpan(t, e.sr.Ended(), semconv.SpanQueued).SpanContext()
	if got := testutil.OneSpan(t, e.sr.Ended(), semconv.SpanReconcile).SpanContext(); !got.Equal(reconcileSC) {
		t.Fatalf("the reconciler's ctx carried span %v, want the reconcile span %v", reconcileSC.SpanID(), got.SpanID())
	}
	rm := e.collect(t)
	assertMetrics(t, rm, noTime,
		histogram(semconv.MetricQueueDuration, queueAttrs, otelqueue.DefaultBuckets(), map[float64]uint64{2.5: 1}, 1, 2, 2, 2,
			exemplarOf(queued, 2)),
		histogram(semconv.MetricWorkDuration, queueAttrs, otelqueue.DefaultBuckets(), map[float64]uint64{5: 1}, 1, 4, 4, 4,
			exemplarOf(reconcileSC, 4)),
	)
}

// TestExemplarsNeverSample checks that unsampled attempts record spans to no
// processor and leave no exemplar, while both histograms still count.
func TestExemplarsNeverSample(t *testing.T) {
	e := newEnv(t, envConfig{sampler: sdktrace.NeverSample()})
	enq, _ := remoteCtx(1, true) // even a sampled enqueuer: the root's sampler decides
	e.q.AddContext(enq, "a")
	e.step(time.Second)
	it := e.getKey(t, "a")
	if sc := trace.SpanContextFromContext(it.Context()); sc.IsSampled() {
		t.Errorf("item context is sampled: %v", sc)
	}
	e.step(time.Second)
	e.q.Done("a")
	if s := e.sr.Started(); len(s) != 0 {
		t.Errorf("spans started: %v", len(s))
	}
	rm := e.collect(t)
	assertMetrics(t, rm, noTime, // exemplars compared: none
		histogram(semconv.MetricQueueDuration, queueAttrs, otelqueue.DefaultBuckets(), map[float64]uint64{1: 1}, 1, 1, 1, 1),
		histogram(semconv.MetricWorkDuration, queueAttrs, otelqueue.DefaultBuckets(), map[float64]uint64{1: 1}, 1, 1, 1, 1),
	)
}

// TestExemplarsDroppedAttemptNoTraceID checks that the exemplars of an
// attempt the sampler dropped carry no trace or span id, even with the
// AlwaysOn exemplar filter: the trace is never exported.
func TestExemplarsDroppedAttemptNoTraceID(t *testing.T) {
	e := newEnv(t, envConfig{sampler: sdktrace.NeverSample(), exemplarFilter: exemplar.AlwaysOnFilter})
	enq, _ := remoteCtx(1, true)
	e.q.AddContext(enq, "a")
	e.step(time.Second)
	it := e.getKey(t, "a")
	if sc := trace.SpanContextFromContext(it.Context()); !sc.IsValid() || sc.IsSampled() {
		t.Fatalf("item context %v, want the dropped root's (valid, unsampled)", sc)
	}
	e.step(2 * time.Second)
	e.q.Done("a")
	rm := e.collect(t)
	noTrace := func(v float64) metricdata.Exemplar[float64] { return metricdata.Exemplar[float64]{Value: v} }
	assertMetrics(t, rm, noTime,
		histogram(semconv.MetricQueueDuration, queueAttrs, otelqueue.DefaultBuckets(), map[float64]uint64{1: 1}, 1, 1, 1, 1, noTrace(1)),
		histogram(semconv.MetricWorkDuration, queueAttrs, otelqueue.DefaultBuckets(), map[float64]uint64{2.5: 1}, 1, 2, 2, 2, noTrace(2)),
	)
}

// TestExemplarsTracingOff checks that a no-op TracerProvider turns tracing
// off: no span context in the item's context, histograms still recorded,
// without exemplars, even when the worker's context carries a sampled span.
func TestExemplarsTracingOff(t *testing.T) {
	e := newEnv(t, envConfig{noTracing: true})
	enq, _ := remoteCtx(1, true)
	worker, workerSC := remoteCtx(2, true)
	e.q.AddContext(enq, "a")
	e.q.AddContext(enq, "b")
	e.step(time.Second)
	it := e.getKey(t, "a")
	if sc := trace.SpanContextFromContext(it.Context()); sc.IsValid() {
		t.Errorf("item context carries a span context with tracing off: %v", sc)
	}
	e.step(2 * time.Second)
	e.q.Done("a")
	// A worker whose context carries a span (GetContext passes it on as the
	// item's context): still no exemplar.
	it, err := e.q.GetContext(worker)
	if err != nil {
		t.Fatal(err)
	}
	if sc := trace.SpanContextFromContext(it.Context()); !sc.Equal(workerSC) {
		t.Errorf("item context %v, want the worker's", sc)
	}
	e.q.Done("b")
	rm := e.collect(t)
	assertMetrics(t, rm, noTime, // exemplars compared: none
		histogram(semconv.MetricQueueDuration, queueAttrs, otelqueue.DefaultBuckets(), map[float64]uint64{1: 1, 5: 1}, 2, 4, 1, 3),
		histogram(semconv.MetricWorkDuration, queueAttrs, otelqueue.DefaultBuckets(), map[float64]uint64{0.0001: 1, 2.5: 1}, 2, 2, 0, 2),
	)
}
