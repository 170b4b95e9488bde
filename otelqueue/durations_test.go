package otelqueue_test

import (
	"context"
	"fmt"
	"maps"
	"slices"
	"strings"
	"testing"
	"time"

	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/sdk/metric/metricdata"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	tracenoop "go.opentelemetry.io/otel/trace/noop"

	"github.com/otelqueue/otelqueue/internal/schedhooks"
	"github.com/otelqueue/otelqueue/internal/semconv"
	"github.com/otelqueue/otelqueue/otelqueue"
	"github.com/otelqueue/otelqueue/scheduler"
)

// durationsOnly reports whether the Observer installed on e's queue takes
// the scheduler's durations-only path (schedhooks.DurationObserver).
func durationsOnly(e *env) bool {
	d, ok := e.q.Observer().(schedhooks.DurationObserver)
	return ok && d.DurationsOnly()
}

// TestDurationsOnlyWhen checks which instrumentations take the scheduler's
// durations-only path: those with tracing off that read no time or context
// of a run (no standby, client time or change durations).
func TestDurationsOnlyWhen(t *testing.T) {
	active := make(chan struct{})
	close(active)
	for _, c := range []struct {
		name      string
		noTracing bool
		opts      []otelqueue.Option
		want      bool
	}{
		{"metrics only", true, nil, true},
		{"by priority and lateness", true, []otelqueue.Option{otelqueue.WithWaitByPriority(), otelqueue.WithLateness()}, true},
		{"adaptive pool", true, []otelqueue.Option{otelqueue.AdaptiveWorkers{Min: 1, Max: 4}}, true},
		{"tracing", false, nil, false},
		{"client time", true, []otelqueue.Option{otelqueue.WithClientTime()}, false},
		{"change durations", true, []otelqueue.Option{otelqueue.WithChangeDuration()}, false},
		{"standby", true, []otelqueue.Option{otelqueue.WithStandby(active)}, false},
	} {
		t.Run(c.name, func(t *testing.T) {
			e := newEnv(t, envConfig{noTracing: c.noTracing, opts: c.opts})
			if got := durationsOnly(e); got != c.want {
				t.Errorf("durations only = %v, want %v", got, c.want)
			}
		})
	}
}

// histograms returns, by metric name and attribute set, the count, sum and
// bucket counts of otelqueue's float64 histograms in rm (not their
// exemplars or timestamps).
func histograms(t *testing.T, rm metricdata.ResourceMetrics, names ...string) map[string]string {
	t.Helper()
	got := map[string]string{}
	for _, name := range names {
		h, ok := findMetric(t, rm, name).Data.(metricdata.Histogram[float64])
		if !ok {
			t.Fatalf("metric %q is no float64 histogram", name)
		}
		for _, p := range h.DataPoints {
			got[name+" "+p.Attributes.Encoded(attribute.DefaultEncoder())] = fmt.Sprintf("count %d sum %.3f buckets %v", p.Count, p.Sum, p.BucketCounts)
		}
	}
	return got
}

// TestDurationsOnlyRecordsAsObserved runs one script on a queue with
// tracing off (the durations-only path) and on one with tracing on (the
// Observer's Dequeued and Done): both record the same histograms, waits
// counted from the ready time, by priority and as lateness included.
func TestDurationsOnlyRecordsAsObserved(t *testing.T) {
	names := []string{semconv.MetricQueueDuration, semconv.MetricWorkDuration, semconv.MetricQueueDurationByPriority, semconv.MetricLateness}
	run := func(t *testing.T, noTracing bool) map[string]string {
		e := newEnv(t, envConfig{noTracing: noTracing, sampler: sdktrace.NeverSample(),
			opts: []otelqueue.Option{otelqueue.WithWaitByPriority(), otelqueue.WithLateness()}})
		if got := durationsOnly(e); got != noTracing {
			t.Fatalf("durations only = %v with tracing off %v", got, noTracing)
		}
		e.q.Add("a")
		e.q.AddAfter("b", 5*time.Second)
		e.q.AddWithOptions(context.Background(), scheduler.AddOptions{Priority: 10}, "c")
		e.step(3 * time.Second)
		e.getKey(t, "c") // waited 3s
		e.step(time.Second)
		e.q.Done("c") // worked 1s
		// Get: no Item is filled for the worker.
		if k, _ := e.q.Get(); k != "a" {
			t.Fatalf("Get = %q, want a", k)
		}
		e.step(2 * time.Second)
		e.q.Done("a") // waited 4s, worked 2s
		ctx := context.WithValue(context.Background(), ctxKey{}, "worker")
		it, err := e.q.GetContext(ctx)
		if err != nil || it.Key != "b" {
			t.Fatalf("GetContext = %q, %v; want b", it.Key, err)
		}
		// b was ready at 5s, taken at 6s.
		if w := it.DequeuedAt.Sub(it.ReadyAt); w != time.Second {
			t.Errorf("b's Item waited %v, want 1s", w)
		}
		if it.Context().Value(ctxKey{}) != "worker" {
			t.Error("b's Item.Context is not the worker's context")
		}
		if pc, ok := e.q.ProcessingContext("b"); !ok || pc.Value(ctxKey{}) != "worker" {
			t.Errorf("ProcessingContext(b) = %v, %v; want the worker's context", pc, ok)
		}
		e.step(4 * time.Second)
		e.q.Done("b") // waited 1s, worked 4s
		return histograms(t, e.collect(t), names...)
	}
	fast, full := run(t, true), run(t, false)
	if !maps.Equal(fast, full) {
		for _, k := range slices.Sorted(maps.Keys(full)) {
			t.Logf("observed:  %s: %s", k, full[k])
			t.Logf("durations: %s: %s", k, fast[k])
		}
		t.Fatal("the durations-only path recorded other histograms than the Observer's")
	}
	for name, want := range map[string]string{semconv.MetricQueueDuration: "count 3 sum 8.000", semconv.MetricWorkDuration: "count 3 sum 7.000"} {
		n := 0
		for k, v := range fast {
			if strings.HasPrefix(k, name+" ") {
				n++
				if !strings.HasPrefix(v, want) {
					t.Errorf("%s: %s, want %s", k, v, want)
				}
			}
		}
		if n != 1 {
			t.Errorf("%d series of %s, want 1", n, name)
		}
	}
}

// TestDurationsOnlyStopWithKeyInFlight: a key taken on the durations-only
// path and done after Stop reaches the Observer Stop left (which uninstalls
// itself once nothing is in flight), and one done after a second
// Instrument, on the Observer's path, is measured by that one, once.
func TestDurationsOnlyStopWithKeyInFlight(t *testing.T) {
	t.Run("stop", func(t *testing.T) {
		e := newEnv(t, envConfig{noTracing: true})
		e.q.Add("a")
		e.getKey(t, "a")
		if err := e.inst.Stop(); err != nil {
			t.Fatal(err)
		}
		if e.q.Observer() == nil {
			t.Fatal("the Observer was uninstalled while a is in flight")
		}
		e.q.Done("a")
		if e.q.Observer() != nil {
			t.Error("the Observer is still installed with nothing in flight")
		}
	})
	t.Run("instrumented again", func(t *testing.T) {
		e := newEnv(t, envConfig{noTracing: true})
		e.q.Add("a")
		e.getKey(t, "a")
		if err := e.inst.Stop(); err != nil {
			t.Fatal(err)
		}
		second, err := otelqueue.Instrument(e.q, otelqueue.WithMeterProvider(e.mp), otelqueue.WithTracerProvider(tracenoop.NewTracerProvider()), otelqueue.WithChangeDuration())
		if err != nil {
			t.Fatal(err)
		}
		defer second.Stop()
		if durationsOnly(e) {
			t.Fatal("the second instrumentation (change durations) takes the durations-only path")
		}
		e.step(3 * time.Second)
		e.q.Done("a")
		if p := histogramPoint(t, findMetric(t, e.collect(t), semconv.MetricWorkDuration)); p.Count != 1 || p.Sum != 3 {
			t.Errorf("work: count %d sum %v, want 1 and 3 (a's, measured once)", p.Count, p.Sum)
		}
	})
}
