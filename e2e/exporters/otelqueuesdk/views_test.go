package otelqueuesdk_test

import (
	"context"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	otelprom "go.opentelemetry.io/otel/exporters/prometheus"
	sdkmetric "go.opentelemetry.io/otel/sdk/metric"
	tracenoop "go.opentelemetry.io/otel/trace/noop"
	testingclock "k8s.io/utils/clock/testing"

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

// TestExponentialHistogramsPrometheus checks that through the Prometheus
// exporter the exponential histograms become Prometheus native histograms
// (a schema and spans instead of classic buckets). Prometheus receives them
// only over the protobuf exposition format (scrape_protocols with
// PrometheusProto, or --enable-feature=native-histograms); the text formats
// cannot carry them.
func TestExponentialHistogramsPrometheus(t *testing.T) {
	reg := prometheus.NewRegistry()
	exp, err := otelprom.New(otelprom.WithRegisterer(reg), otelprom.WithoutScopeInfo(), otelprom.WithoutTargetInfo())
	if err != nil {
		t.Fatal(err)
	}
	q, fc, _ := viewEnv(t, 0, exp)
	process(q, fc, "a", 3*time.Second, time.Second)

	mfs, err := reg.Gather()
	if err != nil {
		t.Fatal(err)
	}
	found := 0
	for _, mf := range mfs {
		switch mf.GetName() {
		case "workqueue_queue_duration_seconds", "workqueue_work_duration_seconds":
			found++
			h := mf.GetMetric()[0].GetHistogram()
			if h == nil || h.Schema == nil || len(h.GetPositiveSpan()) == 0 || len(h.GetBucket()) != 0 {
				t.Errorf("%s is not a native histogram: %v", mf.GetName(), h)
			}
			if h.GetSampleCount() != 1 {
				t.Errorf("%s count %d", mf.GetName(), h.GetSampleCount())
			}
		}
	}
	if found != 2 {
		t.Errorf("found %d of the 2 histograms", found)
	}
}
