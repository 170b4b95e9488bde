package main

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/otelqueue/otelqueue/internal/semconv"

	"go.opentelemetry.io/otel"
	"go.opentelemetry.io/otel/codes"
	"go.opentelemetry.io/otel/propagation"
	sdkmetric "go.opentelemetry.io/otel/sdk/metric"
	"go.opentelemetry.io/otel/sdk/metric/metricdata"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/sdk/trace/tracetest"
	"go.uber.org/goleak"

	"github.com/otelqueue/otelqueue/example/internal/exampletelemetry"
	"github.com/otelqueue/otelqueue/otelqueue"
)

func TestMain(m *testing.M) {
	goleak.VerifyTestMain(m)
}

func TestParseFlagsRejectsBadValues(t *testing.T) {
	for _, tc := range []struct {
		args []string
		want string
	}{
		{[]string{"-workers", "0"}, "-workers is 0"},
		{[]string{"-error-rate", "1.5"}, "-error-rate is 1.5"},
		{[]string{"-duration", "-1s"}, "-duration is -1s"},
		{[]string{"-metrics-addr", "nope"}, "-metrics-addr \"nope\""},
		{[]string{"-churn", "-3"}, "-churn is -3"},
		{[]string{"-churn", "2e9"}, "-churn is 2e+09"}, // panicked in NewTicker (more: examplecluster)
		{[]string{"-error-rate", "NaN"}, "-error-rate is NaN"},
		{[]string{"-latency-spread", "Inf"}, "-latency-spread is +Inf"},
		{[]string{"-latency-spread", "NaN"}, "-latency-spread is NaN"},
		{[]string{"-burst-size", "-1"}, "-burst-size is -1"},
		{[]string{"-objects", "0"}, "-objects is 0"},
		{[]string{"-bogus"}, "flag provided but not defined: -bogus"},
		{[]string{"stray"}, "unexpected argument \"stray\""},
		// -workers (2 by default) is the adaptive pool's start.
		{[]string{"-adaptive-workers", "4:32"}, "-workers is 2, outside -adaptive-workers 4:32"},
		{[]string{"-adaptive-workers", "many"}, "use MIN:MAX"},
		{[]string{"-churn-schedule", "10s:400", "-generate=false"}, "no workload runs"},
	} {
		_, err := parseFlags(tc.args)
		if err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("parseFlags(%q) = %v, want an error containing %q", tc.args, err, tc.want)
		}
	}
	c, err := parseFlags(nil)
	if err != nil {
		t.Fatalf("defaults: %v", err)
	}
	if c.MetricsAddr != "127.0.0.1:9464" || !c.Generate || c.Workers != 2 || c.KubeQPS != 100 || c.KubeBurst != 200 {
		t.Errorf("defaults: %+v", c)
	}
	c, err = parseFlags([]string{"-adaptive-workers", "1:32", "-churn-schedule", "20s:300,50s:20"})
	if err != nil || !c.Adaptive.On() || c.Adaptive.Min != 1 || c.Adaptive.Max != 32 || len(c.ChurnSchedule) != 2 {
		t.Errorf("-adaptive-workers 1:32 -churn-schedule 20s:300,50s:20: %+v, %v", c, err)
	}
	c, err = parseFlags([]string{"-kubeconfig", "/nonexistent"})
	if err != nil || c.Generate {
		t.Errorf("-kubeconfig must turn the workload off unless -generate is given: %+v, %v", c, err)
	}
}

// TestControllerOnFakeCluster runs the whole controller against the embedded
// fake cluster with the real SDK and checks what a user would look for: each
// attempt's trace (root, queued, reconcile, the reconciler's span), its link
// to the workload write that caused it (through the traceparent annotation),
// retry links and error status, and the queue metrics with exemplars.
func TestControllerOnFakeCluster(t *testing.T) {
	rec := tracetest.NewSpanRecorder()
	tp := sdktrace.NewTracerProvider(sdktrace.WithSpanProcessor(rec))
	reader := sdkmetric.NewManualReader()
	mp := sdkmetric.NewMeterProvider(sdkmetric.WithReader(reader))
	otel.SetTracerProvider(tp)
	otel.SetMeterProvider(mp)
	otel.SetTextMapPropagator(propagation.TraceContext{})

	cfg, err := parseFlags([]string{"-objects", "5", "-churn", "50", "-burst-every", "0", "-latency", "1ms",
		"-latency-spread", "0", "-error-rate", "0.3", "-workers", "2", "-summary-interval", "0", "-metrics-addr", ""})
	if err != nil {
		t.Fatal(err)
	}
	// Run until enough attempts were traced, retries among them; the
	// deadline only guards against a hang (sync can be slow on a loaded
	// machine, so no fixed run time).
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	go func() {
		tick := time.NewTicker(50 * time.Millisecond)
		defer tick.Stop()
		for {
			select {
			case <-ctx.Done():
				return
			case <-tick.C:
			}
			roots, retried := 0, false
			for _, s := range rec.Ended() {
				if s.Name() == "process "+queueName {
					roots++
					retried = retried || len(s.Links()) > 1
				}
			}
			if roots >= 30 && retried {
				cancel()
				return
			}
		}
	}()
	tel := &exampletelemetry.Telemetry{TracerProvider: tp, MeterProvider: mp}
	if err := runController(ctx, cfg, tel, &otelqueue.Sizer{}); err != nil {
		t.Fatal(err)
	}
	if errors.Is(context.Cause(ctx), context.DeadlineExceeded) {
		t.Fatal("the controller did not trace 30 attempts with a retry within 2 minutes")
	}
	var rm metricdata.ResourceMetrics
	if err := reader.Collect(context.Background(), &rm); err != nil {
		t.Fatal(err)
	}
	if err := tel.Shutdown(context.Background()); err != nil {
		t.Fatal(err)
	}

	spans := rec.Ended()
	byID := map[string]sdktrace.ReadOnlySpan{}
	writes := map[string]bool{} // span ids of workload writes
	for _, s := range spans {
		byID[s.SpanContext().SpanID().String()] = s
		if s.Name() == "workload update" {
			writes[s.SpanContext().SpanID().String()] = true
		}
	}
	var roots, linkedToWrite, retries, failed, workUnderReconcile int
	for _, s := range spans {
		switch s.Name() {
		case "process " + queueName:
			roots++
			for _, l := range s.Links() {
				if writes[l.SpanContext.SpanID().String()] {
					linkedToWrite++
				}
				for _, a := range l.Attributes {
					if a.Key == semconv.AttrLinkKind && a.Value.AsString() == "previous_attempt" {
						retries++
					}
				}
			}
		case semconv.SpanReconcile:
			if s.Status().Code == codes.Error {
				failed++
			}
		case "simulated work":
			if p, ok := byID[s.Parent().SpanID().String()]; ok && p.Name() == semconv.SpanReconcile {
				workUnderReconcile++
			}
		}
	}
	if len(writes) == 0 || roots == 0 {
		t.Fatalf("%d workload writes and %d attempts traced: the controller did not run", len(writes), roots)
	}
	if linkedToWrite == 0 {
		t.Errorf("no attempt links to the workload write that caused it (%d attempts, %d writes)", roots, len(writes))
	}
	if retries == 0 || failed == 0 {
		t.Errorf("with -error-rate 0.3: %d failed reconcile spans, %d retry links; want both", failed, retries)
	}
	if workUnderReconcile == 0 {
		t.Errorf("the reconciler's span is never a child of %q", semconv.SpanReconcile)
	}

	var exemplars, adds int64
	for _, sm := range rm.ScopeMetrics {
		for _, m := range sm.Metrics {
			switch d := m.Data.(type) {
			case metricdata.Histogram[float64]:
				if m.Name == semconv.MetricQueueDuration {
					for _, dp := range d.DataPoints {
						exemplars += int64(len(dp.Exemplars))
					}
				}
			case metricdata.Sum[int64]:
				if m.Name == semconv.MetricAdds {
					for _, dp := range d.DataPoints {
						adds += dp.Value
					}
				}
			}
		}
	}
	if adds == 0 || exemplars == 0 {
		t.Errorf("workqueue.adds = %d, queue-wait exemplars = %d; want both positive", adds, exemplars)
	}
}
