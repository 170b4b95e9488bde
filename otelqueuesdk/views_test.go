package otelqueuesdk_test

import (
	"context"
	"testing"
	"time"

	"github.com/otelqueue/otelqueue/internal/semconv"

	"go.opentelemetry.io/otel/attribute"
	sdkmetric "go.opentelemetry.io/otel/sdk/metric"
	"go.opentelemetry.io/otel/sdk/metric/metricdata"
	tracenoop "go.opentelemetry.io/otel/trace/noop"
	testingclock "k8s.io/utils/clock/testing"

	"github.com/otelqueue/otelqueue/internal/testutil"
	"github.com/otelqueue/otelqueue/otelqueue"
	"github.com/otelqueue/otelqueue/otelqueuesdk"
	"github.com/otelqueue/otelqueue/scheduler"
)

// viewEnv instruments a scheduler on a fake clock with a MeterProvider that
// has the ExponentialHistograms views and reads through reader.
func viewEnv(t *testing.T, maxSize int32, reader sdkmetric.Reader) (*scheduler.Scheduler[string], *testingclock.FakeClock, *sdkmetric.MeterProvider) {
	t.Helper()
	mp := sdkmetric.NewMeterProvider(sdkmetric.WithReader(reader), sdkmetric.WithView(otelqueuesdk.ExponentialHistograms(maxSize)...))
	t.Cleanup(func() { _ = mp.Shutdown(context.Background()) })
	fc := testingclock.NewFakeClock(time.Unix(1e9, 0))
	q := scheduler.New(scheduler.Config[string]{Name: "orders", Clock: fc})
	t.Cleanup(q.ShutDown)
	if _, err := otelqueue.Instrument(q, otelqueue.WithMeterProvider(mp), otelqueue.WithTracerProvider(tracenoop.NewTracerProvider())); err != nil {
		t.Fatal(err)
	}
	return q, fc, mp
}

// process runs key through q: it waits wait, then works work.
func process(q *scheduler.Scheduler[string], fc *testingclock.FakeClock, key string, wait, work time.Duration) {
	q.Add(key)
	fc.Step(wait)
	k, _ := q.Get()
	fc.Step(work)
	q.Done(k)
}

// collect reads every metric from r, by "<scope name> <metric name>".
func collect(t *testing.T, r *sdkmetric.ManualReader) map[string]metricdata.Metrics {
	t.Helper()
	rm := testutil.Collect(t, r)
	out := map[string]metricdata.Metrics{}
	for _, sm := range rm.ScopeMetrics {
		for _, m := range sm.Metrics {
			out[sm.Scope.Name+" "+m.Name] = m
		}
	}
	return out
}

// expPoint returns the single data point of an exponential histogram.
func expPoint(t *testing.T, m metricdata.Metrics) metricdata.ExponentialHistogramDataPoint[float64] {
	t.Helper()
	h, ok := m.Data.(metricdata.ExponentialHistogram[float64])
	if !ok {
		t.Fatalf("%s is a %T, want an exponential histogram", m.Name, m.Data)
	}
	if h.Temporality != metricdata.CumulativeTemporality || len(h.DataPoints) != 1 {
		t.Fatalf("%s: temporality %v, %d data points", m.Name, h.Temporality, len(h.DataPoints))
	}
	return h.DataPoints[0]
}

func total(counts []uint64) (n uint64) {
	for _, c := range counts {
		n += c
	}
	return n
}

// TestExponentialHistograms checks that the views turn otelqueue's two
// histograms, and only them, into base-2 exponential histograms.
func TestExponentialHistograms(t *testing.T) {
	if n := len(otelqueuesdk.ExponentialHistograms(0)); n != 2 {
		t.Fatalf("%d views, want 2", n)
	}
	reader := sdkmetric.NewManualReader()
	q, fc, mp := viewEnv(t, 0, reader)
	// Another scope's histogram of the same name is not matched.
	other, err := mp.Meter("someone/else").Float64Histogram(semconv.MetricQueueDuration)
	if err != nil {
		t.Fatal(err)
	}
	other.Record(context.Background(), 1)

	process(q, fc, "a", 3*time.Second, time.Second)
	process(q, fc, "b", 0, 250*time.Millisecond)
	ms := collect(t, reader)
	attrs := attribute.NewSet(semconv.AttrName.String("orders"), semconv.AttrController.String("orders"))
	for name, want := range map[string]struct {
		count    uint64
		zero     uint64
		sum      float64
		min, max float64
	}{
		semconv.MetricQueueDuration: {2, 1, 3, 0, 3},
		semconv.MetricWorkDuration:  {2, 0, 1.25, 0.25, 1},
	} {
		m := ms[semconv.ScopeOtelqueue+" "+name]
		if m.Unit != "s" {
			t.Errorf("%s unit %q", name, m.Unit)
		}
		dp := expPoint(t, m)
		if !dp.Attributes.Equals(&attrs) {
			t.Errorf("%s attributes %v", name, dp.Attributes.Encoded(attribute.DefaultEncoder()))
		}
		if dp.Count != want.count || dp.ZeroCount != want.zero || dp.Sum != want.sum {
			t.Errorf("%s: count %d zero %d sum %v; want %d %d %v", name, dp.Count, dp.ZeroCount, dp.Sum, want.count, want.zero, want.sum)
		}
		if v, _ := dp.Min.Value(); v != want.min {
			t.Errorf("%s min %v, want %v", name, v, want.min)
		}
		if v, _ := dp.Max.Value(); v != want.max {
			t.Errorf("%s max %v, want %v", name, v, want.max)
		}
		if dp.Scale > 20 {
			t.Errorf("%s scale %d, above the views' MaxScale 20", name, dp.Scale)
		}
		if got := total(dp.PositiveBucket.Counts) + dp.ZeroCount; got != dp.Count {
			t.Errorf("%s buckets hold %d, count %d", name, got, dp.Count)
		}
	}
	if _, ok := ms[semconv.ScopeOtelqueue+" "+semconv.MetricDepth].Data.(metricdata.Sum[int64]); !ok {
		t.Error("the views changed workqueue.depth")
	}
	if _, ok := ms["someone/else "+semconv.MetricQueueDuration].Data.(metricdata.Histogram[float64]); !ok {
		t.Error("the views matched another scope's histogram")
	}
}

// TestExponentialHistogramsMaxSize checks that maxSize bounds the buckets:
// values six decades apart fit in 4 buckets at a coarser scale.
func TestExponentialHistogramsMaxSize(t *testing.T) {
	reader := sdkmetric.NewManualReader()
	q, fc, _ := viewEnv(t, 4, reader)
	for i, wait := range []time.Duration{time.Millisecond, time.Second, 1000 * time.Second} {
		process(q, fc, string(rune('a'+i)), wait, 0)
	}
	dp := expPoint(t, collect(t, reader)[semconv.ScopeOtelqueue+" "+semconv.MetricQueueDuration])
	if n := len(dp.PositiveBucket.Counts); n > 4 {
		t.Errorf("%d buckets, want at most 4", n)
	}
	if dp.Count != 3 || total(dp.PositiveBucket.Counts) != 3 {
		t.Errorf("count %d, buckets %v", dp.Count, dp.PositiveBucket.Counts)
	}
}
