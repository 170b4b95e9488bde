package otelqueue_test

import (
	"context"
	"testing"

	"github.com/otelqueue/otelqueue/internal/semconv"

	"go.opentelemetry.io/otel"
	sdkmetric "go.opentelemetry.io/otel/sdk/metric"
	"go.opentelemetry.io/otel/sdk/metric/metricdata"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/sdk/trace/tracetest"

	"github.com/otelqueue/otelqueue/internal/testutil"
	"github.com/otelqueue/otelqueue/otelqueue"
	"github.com/otelqueue/otelqueue/scheduler"
)

// TestNilProviders checks WithMeterProvider(nil) and WithTracerProvider(nil):
// an untyped nil means the global provider, as documented; a typed nil
// pointer is an error from Instrument, and is harmless to
// NewMetricsProvider (reported to otel.Handle, the global one used).
func TestNilProviders(t *testing.T) {
	t.Run("untyped nil: the globals", func(t *testing.T) {
		testutil.NoOTelErrors(t)
		reader := sdkmetric.NewManualReader()
		mp := meterProvider(t, reader)
		sr := tracetest.NewSpanRecorder()
		tp := sdktrace.NewTracerProvider(sdktrace.WithSpanProcessor(sr))
		t.Cleanup(func() { _ = tp.Shutdown(context.Background()) })
		oldMP, oldTP := otel.GetMeterProvider(), otel.GetTracerProvider()
		otel.SetMeterProvider(mp)
		otel.SetTracerProvider(tp)
		t.Cleanup(func() {
			otel.SetMeterProvider(oldMP)
			otel.SetTracerProvider(oldTP)
		})

		q := scheduler.New(scheduler.Config[string]{Name: queueName})
		t.Cleanup(q.ShutDown)
		inst, err := otelqueue.Instrument(q, otelqueue.WithMeterProvider(nil), otelqueue.WithTracerProvider(nil))
		if err != nil {
			t.Fatalf("Instrument with nil providers: %v", err)
		}
		t.Cleanup(func() { _ = inst.Stop() })
		q.Add("a")
		it, err := q.GetContext(context.Background())
		if err != nil {
			t.Fatal(err)
		}
		q.Done(it.Key)
		if n := len(sr.Ended()); n != 3 {
			t.Errorf("%d spans from the global TracerProvider, want 3", n)
		}
		var rm metricdata.ResourceMetrics
		if err := reader.Collect(context.Background(), &rm); err != nil {
			t.Fatal(err)
		}
		assertMetrics(t, rm, noTime, intSum(semconv.MetricAdds, "{item}", true, queueAttrs, 1))
	})

	t.Run("typed nil: an error", func(t *testing.T) {
		for _, tc := range []struct {
			opt  otelqueue.Option
			want string
		}{
			{otelqueue.WithMeterProvider((*sdkmetric.MeterProvider)(nil)), "WithMeterProvider got a nil *metric.MeterProvider"},
			{otelqueue.WithTracerProvider((*sdktrace.TracerProvider)(nil)), "WithTracerProvider got a nil *trace.TracerProvider"},
		} {
			q := scheduler.New(scheduler.Config[string]{Name: queueName})
			inst, err := otelqueue.Instrument(q, tc.opt)
			if inst != nil {
				t.Error("Instrument with a typed nil provider returned an Instrumentation")
				_ = inst.Stop()
			}
			wantErr(t, "Instrument", err, tc.want)
			if q.Observer() != nil {
				t.Error("a failed Instrument installed an Observer")
			}
			q.ShutDown()
		}
	})

	t.Run("typed nil: NewMetricsProvider", func(t *testing.T) {
		testutil.NoOTelErrors(t)
		p := otelqueue.NewMetricsProvider(otelqueue.WithMeterProvider((*sdkmetric.MeterProvider)(nil)))
		p.NewAddsMetric("a").Inc()
		errs := testutil.TakeOTelErrors()
		if len(errs) != 1 {
			t.Fatalf("otel.Handle got %v, want the typed nil reported once", errs)
		}
		wantErr(t, "the reported error", errs[0], "WithMeterProvider got a nil")
	})
}
