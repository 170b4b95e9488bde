package otelqueue_test

import (
	"context"
	"testing"
	"time"

	"github.com/otelqueue/otelqueue/internal/semconv"

	"go.opentelemetry.io/otel/sdk/metric/metricdata"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"

	"github.com/otelqueue/otelqueue/internal/testutil"
	"github.com/otelqueue/otelqueue/otelqueue"
	"github.com/otelqueue/otelqueue/scheduler"
)

// TestChangeDuration: WithChangeDuration records, per change, the time from
// its event's add to the end of the attempt that succeeded, the failed
// attempt and the backoff included, with that attempt's trace as the
// exemplar; a requeue's attempt records none.
func TestChangeDuration(t *testing.T) {
	e := newEnv(t, envConfig{opts: []otelqueue.Option{otelqueue.WithChangeDuration()}})
	e.q.AddWithOptions(context.Background(), scheduler.AddOptions{Trigger: scheduler.TriggerUpdate}, "a")
	e.step(time.Second)
	e.getKey(t, "a")
	e.step(time.Second)
	e.q.AddRateLimited("a") // fails: retried after 1 s
	e.q.Done("a")
	e.step(time.Second)
	e.getKey(t, "a")
	e.step(time.Second)
	e.q.AddAfter("a", time.Minute) // succeeds, and polls
	e.q.Done("a")
	e.step(time.Minute)
	e.getKey(t, "a")
	e.q.Done("a") // the poll's attempt: no change

	h, ok := testutil.FindMetric(t, e.collect(t), semconv.ScopeOtelqueue, semconv.MetricChangeDuration).Data.(metricdata.Histogram[float64])
	if !ok || len(h.DataPoints) != 1 {
		t.Fatalf("change duration: %+v", h)
	}
	dp := h.DataPoints[0]
	if dp.Count != 1 || dp.Sum != 4 {
		t.Errorf("change duration: %d changes, %v s; want 1 of 4 s (1 s waiting, 1 s failing, 1 s of backoff, 1 s succeeding)", dp.Count, dp.Sum)
	}
	var root sdktrace.ReadOnlySpan
	for _, s := range testutil.SpansNamed(e.sr.Ended(), "process "+queueName) {
		if s.EndTime().Equal(t0.Add(4 * time.Second)) {
			root = s
		}
	}
	if root == nil {
		t.Fatal("no attempt ended at t0+4s")
	}
	var linked bool
	for _, ex := range dp.Exemplars {
		id := root.SpanContext().TraceID()
		linked = linked || string(ex.TraceID) == string(id[:])
	}
	if !linked {
		t.Errorf("exemplars %+v, none in the trace of the attempt that closed the change", dp.Exemplars)
	}
}

// TestChangeDurationOff: without the option, no instrument, and the
// scheduler keeps no changes.
func TestChangeDurationOff(t *testing.T) {
	e := newEnv(t, envConfig{})
	e.q.Add("a")
	e.getKey(t, "a")
	e.q.Done("a")
	for _, name := range testutil.MetricNames(e.collect(t), semconv.ScopeOtelqueue) {
		if name == semconv.MetricChangeDuration {
			t.Errorf("%s reported without WithChangeDuration", name)
		}
	}
}

// TestChangeDurationStandby: a change a standby queue saw counts from when
// the queue became active: its leader acted on it before.
func TestChangeDurationStandby(t *testing.T) {
	active := make(chan struct{})
	e := newEnv(t, envConfig{opts: []otelqueue.Option{otelqueue.WithChangeDuration(), otelqueue.WithStandby(active)}})
	e.q.AddWithOptions(context.Background(), scheduler.AddOptions{Trigger: scheduler.TriggerUpdate}, "a")
	e.step(time.Minute) // standby
	close(active)
	testutil.WaitFor(t, "the queue to become active", func() bool { return !e.inst.Standby() })
	e.step(time.Second)
	e.getKey(t, "a")
	e.step(time.Second)
	e.q.Done("a")
	dp := testutil.FindMetric(t, e.collect(t), semconv.ScopeOtelqueue, semconv.MetricChangeDuration).Data.(metricdata.Histogram[float64]).DataPoints
	if len(dp) != 1 || dp[0].Count != 1 || dp[0].Sum != 2 {
		t.Errorf("change duration %+v, want one change of 2 s (from the activation, not the minute standby)", dp)
	}
}
