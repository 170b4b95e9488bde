package otelqueue_test

import (
	"context"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/otelqueue/otelqueue/internal/semconv"

	"go.opentelemetry.io/otel/attribute"
	sdkmetric "go.opentelemetry.io/otel/sdk/metric"
	"go.opentelemetry.io/otel/sdk/metric/metricdata"
	"k8s.io/client-go/util/workqueue"
	testingclock "k8s.io/utils/clock/testing"

	"github.com/otelqueue/otelqueue/internal/testutil"
	"github.com/otelqueue/otelqueue/otelqueue"
)

// providerEnv is a MetricsProvider on the real SDK, with a ManualReader.
type providerEnv struct {
	clock  *testingclock.FakeClock
	reader *sdkmetric.ManualReader
	p      *otelqueue.MetricsProvider
}

func newProviderEnv(t testing.TB, opts ...otelqueue.MetricsOption) *providerEnv {
	t.Helper()
	testutil.NoOTelErrors(t)
	e := &providerEnv{clock: testingclock.NewFakeClock(t0), reader: sdkmetric.NewManualReader()}
	mp := sdkmetric.NewMeterProvider(sdkmetric.WithReader(e.reader))
	t.Cleanup(func() { _ = mp.Shutdown(context.Background()) })
	e.p = otelqueue.NewMetricsProvider(append([]otelqueue.MetricsOption{otelqueue.WithMeterProvider(mp)}, opts...)...)
	return e
}

// queue returns a real client-go rate-limiting queue called name that
// reports through the provider, on the fake clock; the test shuts it down.
func (e *providerEnv) queue(t testing.TB, name string) workqueue.TypedRateLimitingInterface[string] {
	t.Helper()
	w := e.clock.Waiters()
	q := workqueue.NewTypedRateLimitingQueueWithConfig(testutil.ExpLimiter(time.Second, time.Minute),
		workqueue.TypedRateLimitingQueueConfig[string]{Name: name, MetricsProvider: e.p, Clock: e.clock})
	t.Cleanup(q.ShutDown)
	// The delaying queue's heartbeat ticker and the updateUnfinishedWork
	// loop's ticker, which a goroutine creates: a step before it exists
	// would not move the loop.
	testutil.WaitFor(t, "client-go's tickers", func() bool { return e.clock.Waiters() >= w+2 })
	return q
}

func (e *providerEnv) collect(t testing.TB) metricdata.ResourceMetrics {
	t.Helper()
	return testutil.Collect(t, e.reader)
}

// gaugeValue returns the value of a float64 gauge's data point with attrs.
func gaugeValue(t testing.TB, rm metricdata.ResourceMetrics, name string, attrs attribute.Set) float64 {
	t.Helper()
	return pointValue(t, name, metricData[metricdata.Gauge[float64]](t, rm, name).DataPoints, attrs)
}

// intValue returns the value of an int64 sum's data point with attrs.
func intValue(t testing.TB, rm metricdata.ResourceMetrics, name string, attrs attribute.Set) int64 {
	t.Helper()
	return pointValue(t, name, metricData[metricdata.Sum[int64]](t, rm, name).DataPoints, attrs)
}

// metricData returns the data of the otelqueue metric called name, failing
// the test unless it is a D.
func metricData[D metricdata.Aggregation](t testing.TB, rm metricdata.ResourceMetrics, name string) D {
	t.Helper()
	m := findMetric(t, rm, name)
	d, ok := m.Data.(D)
	if !ok {
		t.Fatalf("%s is a %T, want a %T", name, m.Data, d)
	}
	return d
}

// pointValue returns the value of the data point with attrs among points of
// the metric called name.
func pointValue[N int64 | float64](t testing.TB, name string, points []metricdata.DataPoint[N], attrs attribute.Set) N {
	t.Helper()
	for _, dp := range points {
		if dp.Attributes.Equals(&attrs) {
			return dp.Value
		}
	}
	t.Fatalf("%s has no data point %v", name, attrs.Encoded(attribute.DefaultEncoder()))
	return 0
}

// TestMetricsProviderClientGoQueue drives a real client-go rate-limiting
// queue on a fake clock through the MetricsProvider and checks that the same
// instruments as Instrument's move: depth, adds, retries, both histograms,
// and the unfinished-work and longest-running gauges that client-go's
// updateUnfinishedWork loop sets every 500ms of its clock.
//
// The histograms carry no exemplars, whatever the TracerProvider: client-go's
// metrics interface (Observe(float64)) passes no context, so there is no span
// for the SDK's trace-based exemplar filter to pick up. Use a
// scheduler.Scheduler with Instrument for exemplars and spans.
func TestMetricsProviderClientGoQueue(t *testing.T) {
	e := newProviderEnv(t)
	q := e.queue(t, "x")
	x := attribute.NewSet(semconv.AttrName.String("x"), semconv.AttrController.String("x"))
	bounds := otelqueue.DefaultBuckets()
	// unfinished waits until client-go's loop has set both gauges to the
	// given values, after a fake clock step.
	unfinished := func(total, longest float64) {
		t.Helper()
		testutil.WaitFor(t, "client-go's updateUnfinishedWork", func() bool {
			rm := e.collect(t)
			return gaugeValue(t, rm, semconv.MetricUnfinishedWork, x) == total &&
				gaugeValue(t, rm, semconv.MetricLongestRunning, x) == longest
		})
	}

	q.Add("a")
	q.Add("b")
	q.Add("a") // deduplicated by client-go: not an add
	e.clock.Step(2 * time.Second)
	if k, _ := q.Get(); k != "a" {
		t.Fatalf("Get = %q", k)
	} // waited 2s
	e.clock.Step(time.Second) // t=3s
	unfinished(1, 1)
	rm := e.collect(t)
	assertNames(t, rm, semconv.MetricDepth, semconv.MetricAdds, semconv.MetricRetries,
		semconv.MetricUnfinishedWork, semconv.MetricLongestRunning, semconv.MetricQueueDuration)
	assertMetrics(t, rm, noTime,
		intSum(semconv.MetricDepth, "{item}", false, x, 1),
		intSum(semconv.MetricAdds, "{item}", true, x, 2),
		intSum(semconv.MetricRetries, "{item}", true, x, 0),
		seconds(semconv.MetricUnfinishedWork, x, 1),
		seconds(semconv.MetricLongestRunning, x, 1),
		histogram(semconv.MetricQueueDuration, x, bounds, map[float64]uint64{2.5: 1}, 1, 2, 2, 2))

	waiters := e.clock.Waiters()
	q.AddRateLimited("a") // retry: 1s backoff, ready at t=4s
	q.Done("a")           // worked 1s
	// client-go's waiting loop sets a timer for a's backoff; step only then.
	testutil.WaitFor(t, "client-go's delay timer", func() bool { return e.clock.Waiters() == waiters+1 })
	e.clock.Step(time.Second) // t=4s: a comes back
	testutil.WaitFor(t, "a's return", func() bool { return q.Len() == 2 })
	e.clock.Step(500 * time.Millisecond) // t=4.5s
	if k, _ := q.Get(); k != "b" {
		t.Fatalf("Get = %q", k)
	} // waited 4.5s
	if k, _ := q.Get(); k != "a" {
		t.Fatalf("Get = %q", k)
	} // waited 0.5s since it came back
	// client-go's fake ticker fires on steps that reach its next 500ms tick.
	e.clock.Step(500 * time.Millisecond) // t=5s
	unfinished(1, 0.5)
	q.Done("b")
	q.Done("a")
	e.clock.Step(500 * time.Millisecond)
	unfinished(0, 0)

	rm = e.collect(t)
	assertNames(t, rm, semconv.MetricDepth, semconv.MetricAdds, semconv.MetricRetries,
		semconv.MetricUnfinishedWork, semconv.MetricLongestRunning,
		semconv.MetricQueueDuration, semconv.MetricWorkDuration)
	assertMetrics(t, rm, noTime, // exemplars compared: there are none
		intSum(semconv.MetricDepth, "{item}", false, x, 0),
		intSum(semconv.MetricAdds, "{item}", true, x, 3),
		intSum(semconv.MetricRetries, "{item}", true, x, 1),
		seconds(semconv.MetricUnfinishedWork, x, 0),
		seconds(semconv.MetricLongestRunning, x, 0),
		histogram(semconv.MetricQueueDuration, x, bounds, map[float64]uint64{0.5: 1, 2.5: 1, 5: 1}, 3, 7, 0.5, 4.5),
		histogram(semconv.MetricWorkDuration, x, bounds, map[float64]uint64{0.5: 2, 1: 1}, 3, 2, 0.5, 1))
}

// TestMetricsProviderQueues checks that each queue of one provider reports
// under its own name, with the controller override applied to all.
func TestMetricsProviderQueues(t *testing.T) {
	e := newProviderEnv(t, otelqueue.WithControllerName("ctl"))
	x, y := e.queue(t, "x"), e.queue(t, "y")
	x.Add("a")
	y.Add("a")
	y.Add("b")
	rm := e.collect(t)
	for name, depth := range map[string]int64{"x": 1, "y": 2} {
		attrs := attribute.NewSet(semconv.AttrName.String(name), semconv.AttrController.String("ctl"))
		if got := intValue(t, rm, semconv.MetricDepth, attrs); got != depth {
			t.Errorf("depth of %s = %d, want %d", name, got, depth)
		}
		if got := intValue(t, rm, semconv.MetricAdds, attrs); got != depth {
			t.Errorf("adds of %s = %d, want %d", name, got, depth)
		}
	}
}

// TestMetricsProviderBadBuckets checks that bucket boundaries the provider
// cannot use are reported to otel.Handle and replaced by DefaultBuckets.
func TestMetricsProviderBadBuckets(t *testing.T) {
	e := newProviderEnv(t, otelqueue.WithExplicitBuckets(2, 1))
	errs := testutil.TakeOTelErrors()
	if len(errs) != 1 || !strings.Contains(errs[0].Error(), "must increase strictly") {
		t.Errorf("otel.Handle got %v, want the bucket error", errs)
	}
	q := e.queue(t, "x")
	q.Add("a")
	k, _ := q.Get()
	q.Done(k)
	rm := e.collect(t)
	if b := histogramPoint(t, findMetric(t, rm, semconv.MetricQueueDuration)).Bounds; !slices.Equal(b, otelqueue.DefaultBuckets()) {
		t.Errorf("bounds %v, want DefaultBuckets", b)
	}
}
