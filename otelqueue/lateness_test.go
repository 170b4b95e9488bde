package otelqueue_test

import (
	"testing"
	"time"

	"github.com/otelqueue/otelqueue/internal/semconv"

	"go.opentelemetry.io/otel/sdk/metric/metricdata"

	"github.com/otelqueue/otelqueue/internal/testutil"
	"github.com/otelqueue/otelqueue/otelqueue"
)

// TestLateness: WithLateness records how late a delayed key and a retried
// one ran after they were due, by wait reason; a key ready at once is not
// late, whatever it waited.
func TestLateness(t *testing.T) {
	e := newEnv(t, envConfig{opts: []otelqueue.Option{otelqueue.WithLateness()}})
	e.q.AddAfter("polled", 10*time.Second)
	e.q.AddRateLimited("retried") // due after 1 s
	e.q.Add("ready")
	e.step(12 * time.Second) // polled 2 s late, retried 11 s, ready waited 12 s
	for range 3 {
		e.q.Done(e.get(t).Key)
	}
	h := testutil.FindMetric(t, e.collect(t), semconv.ScopeOtelqueue, semconv.MetricLateness).Data.(metricdata.Histogram[float64])
	got := map[string]float64{}
	for _, dp := range h.DataPoints {
		r, _ := dp.Attributes.Value(semconv.AttrWaitReason)
		got[r.AsString()] += dp.Sum
		if dp.Count != 1 {
			t.Errorf("%s: %d records, want 1", r.AsString(), dp.Count)
		}
	}
	if len(got) != 2 || got["delayed"] != 2 || got["rate_limited"] != 11 {
		t.Errorf("lateness %v, want delayed 2 s and rate_limited 11 s, nothing for the key ready at once", got)
	}
}

// TestLatenessOff: without the option, no such instrument.
func TestLatenessOff(t *testing.T) {
	e := newEnv(t, envConfig{})
	e.q.AddAfter("a", time.Second)
	e.step(2 * time.Second)
	e.q.Done(e.getKey(t, "a").Key)
	for _, name := range testutil.MetricNames(e.collect(t), semconv.ScopeOtelqueue) {
		if name == semconv.MetricLateness {
			t.Errorf("%s reported without WithLateness", name)
		}
	}
}
