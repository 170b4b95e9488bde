package e2e

import (
	"context"
	"errors"
	"fmt"
	"net"
	"strconv"
	"testing"
	"time"

	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/exporters/otlp/otlpmetric/otlpmetricgrpc"
	"go.opentelemetry.io/otel/exporters/otlp/otlptrace/otlptracegrpc"
	"go.opentelemetry.io/otel/metric"
	sdkmetric "go.opentelemetry.io/otel/sdk/metric"
	"go.opentelemetry.io/otel/sdk/resource"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
)

// TestStackPipeline proves the pipeline the application tests rely on: a
// trace and a histogram with an exemplar, sent over OTLP gRPC to the
// collector, come out in Jaeger (parent/child intact, no warnings) and in
// Prometheus (classic histogram series, exemplar pointing at the trace).
func TestStackPipeline(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()

	service := fmt.Sprintf("e2e-smoke-%d", time.Now().UnixNano())
	res := resource.NewSchemaless(
		attribute.String("service.name", service),
		attribute.String("host.name", "e2e-host"), // one host: Jaeger computes no skew between spans
	)

	texp, err := otlptracegrpc.New(ctx,
		otlptracegrpc.WithEndpoint(stack.CollectorOTLPGRPC),
		otlptracegrpc.WithInsecure(),
	)
	if err != nil {
		t.Fatal(err)
	}
	tp := sdktrace.NewTracerProvider(sdktrace.WithResource(res), sdktrace.WithBatcher(texp))
	defer tp.Shutdown(context.Background())

	mexp, err := otlpmetricgrpc.New(ctx,
		otlpmetricgrpc.WithEndpoint(stack.CollectorOTLPGRPC),
		otlpmetricgrpc.WithInsecure(),
	)
	if err != nil {
		t.Fatal(err)
	}
	// The SDK's default exemplar filter is trace_based: a measurement made in
	// a sampled span's context carries an exemplar with its trace and span IDs.
	mp := sdkmetric.NewMeterProvider(
		sdkmetric.WithResource(res),
		sdkmetric.WithReader(sdkmetric.NewPeriodicReader(mexp, sdkmetric.WithInterval(time.Hour))),
	)
	defer mp.Shutdown(context.Background())

	hist, err := mp.Meter("github.com/otelqueue/otelqueue/e2e").Float64Histogram("workqueue.queue.duration",
		metric.WithUnit("s"),
		metric.WithDescription("How long an item waits in the queue before processing starts."),
		metric.WithExplicitBucketBoundaries(0.001, 0.01, 0.1, 0.25, 0.5, 1, 2.5, 5, 10),
	)
	if err != nil {
		t.Fatal(err)
	}

	tracer := tp.Tracer("github.com/otelqueue/otelqueue/e2e")
	pctx, parent := tracer.Start(ctx, "parent")
	cctx, child := tracer.Start(pctx, "child")
	hist.Record(cctx, 0.3, metric.WithAttributes(attribute.String("name", "smoke")))
	time.Sleep(time.Millisecond) // a child of non-zero length, inside its parent
	child.End()
	parent.End()

	traceID := parent.SpanContext().TraceID().String()
	parentID := parent.SpanContext().SpanID().String()
	childID := child.SpanContext().SpanID().String()
	if !child.SpanContext().IsSampled() {
		t.Fatal("child span not sampled")
	}
	if err := tp.ForceFlush(ctx); err != nil {
		t.Fatalf("flush traces: %v", err)
	}
	if err := mp.ForceFlush(ctx); err != nil {
		t.Fatalf("flush metrics: %v", err)
	}
	t.Logf("sent trace %s (parent %s, child %s) as service %s", traceID, parentID, childID, service)

	t.Run("jaeger", func(t *testing.T) {
		var tr Trace
		Eventually(t, 30*time.Second, 200*time.Millisecond, func() error {
			var err error
			tr, err = stack.JaegerAPI.GetTrace(ctx, traceID)
			if err != nil {
				return err
			}
			if len(tr.Spans) != 2 {
				return fmt.Errorf("trace %s has %d spans, want 2", traceID, len(tr.Spans))
			}
			return nil
		})
		p, ok := tr.Span(parentID)
		if !ok {
			t.Fatalf("parent span %s missing: %+v", parentID, tr.Spans)
		}
		c, ok := tr.Span(childID)
		if !ok {
			t.Fatalf("child span %s missing: %+v", childID, tr.Spans)
		}
		if p.OperationName != "parent" || c.OperationName != "child" {
			t.Errorf("names: parent %q, child %q", p.OperationName, c.OperationName)
		}
		if got := p.ParentSpanID(); got != "" {
			t.Errorf("parent span has parent %s, want a root", got)
		}
		if got := c.ParentSpanID(); got != parentID {
			t.Errorf("child's parent = %q, want %s", got, parentID)
		}
		if c.Start().Before(p.Start()) || c.End().After(p.End()) {
			t.Errorf("child [%s, %s] not inside parent [%s, %s]", c.Start(), c.End(), p.Start(), p.End())
		}
		if w := tr.AllWarnings(); len(w) > 0 {
			t.Errorf("Jaeger warnings: %q", w)
		}
		proc := tr.Processes[c.ProcessID]
		if proc.ServiceName != service {
			t.Errorf("service = %q, want %q", proc.ServiceName, service)
		}
		if v, _ := proc.Tag("host.name"); v != "e2e-host" {
			t.Errorf("host.name = %v, want e2e-host", v)
		}

		ts, err := stack.JaegerAPI.FindTraces(ctx, TraceQuery{Service: service, Operation: "child"})
		if err != nil {
			t.Fatal(err)
		}
		if len(ts) != 1 || ts[0].TraceID != traceID {
			t.Errorf("FindTraces(%s, child) = %d traces, want just %s", service, len(ts), traceID)
		}
	})

	t.Run("prometheus", func(t *testing.T) {
		// workqueue.queue.duration with unit "s" becomes
		// workqueue_queue_duration_seconds_{bucket,sum,count}; the exporter
		// turns service.name into the job label.
		sel := fmt.Sprintf(`{job=%q,name="smoke"}`, service)
		Eventually(t, 30*time.Second, 250*time.Millisecond, func() error {
			s, err := stack.PrometheusAPI.Query(ctx, "workqueue_queue_duration_seconds_count"+sel)
			if err != nil {
				return err
			}
			if len(s) != 1 || s[0].Value != 1 {
				return fmt.Errorf("workqueue_queue_duration_seconds_count%s = %+v, want one series = 1", sel, s)
			}
			return nil
		})
		buckets, err := stack.PrometheusAPI.Query(ctx, "workqueue_queue_duration_seconds_bucket"+sel)
		if err != nil {
			t.Fatal(err)
		}
		if len(buckets) != 10 { // 9 bounds + le="+Inf"
			t.Errorf("got %d bucket series, want 10", len(buckets))
		}
		for _, b := range buckets {
			// OpenMetrics writes le canonically: "1.0", "10.0", "+Inf".
			le, err := strconv.ParseFloat(b.Metric["le"], 64)
			if err != nil {
				t.Fatalf("bucket le=%q: %v", b.Metric["le"], err)
			}
			want := 0.0
			if le >= 0.3 {
				want = 1
			}
			if b.Value != want {
				t.Errorf("bucket le=%s = %v, want %v", b.Metric["le"], b.Value, want)
			}
		}

		var ex Exemplar
		Eventually(t, 30*time.Second, 250*time.Millisecond, func() error {
			series, err := stack.PrometheusAPI.QueryExemplars(ctx, "workqueue_queue_duration_seconds_bucket"+sel,
				time.Now().Add(-10*time.Minute), time.Now().Add(time.Minute))
			if err != nil {
				return err
			}
			for _, s := range series {
				for _, e := range s.Exemplars {
					if e.TraceID() == traceID {
						ex = e
						t.Logf("exemplar on %v: %+v", s.SeriesLabels, e)
						return nil
					}
				}
			}
			return fmt.Errorf("no exemplar with trace_id %s yet: %+v", traceID, series)
		})
		if ex.SpanID() != childID {
			t.Errorf("exemplar span_id = %q, want the child's %s", ex.SpanID(), childID)
		}
		if ex.Value != 0.3 {
			t.Errorf("exemplar value = %v, want 0.3", ex.Value)
		}

		// The exemplar resolves in Jaeger.
		Eventually(t, 30*time.Second, 200*time.Millisecond, func() error {
			tr, err := stack.JaegerAPI.GetTrace(ctx, ex.TraceID())
			if err != nil {
				return err
			}
			if _, ok := tr.Span(ex.SpanID()); !ok {
				return fmt.Errorf("exemplar's span %s not in trace %s", ex.SpanID(), ex.TraceID())
			}
			return nil
		})
	})

	if err := tp.Shutdown(ctx); err != nil && !errors.Is(err, context.Canceled) {
		t.Errorf("tracer provider shutdown: %v", err)
	}
	if err := mp.Shutdown(ctx); err != nil {
		t.Errorf("meter provider shutdown: %v", err)
	}
}

// TestServersListenOnLoopbackOnly checks that no server of the stack opened a
// port on another interface (Jaeger's and the collector's defaults do).
func TestServersListenOnLoopbackOnly(t *testing.T) {
	for _, p := range []*Process{stack.Jaeger, stack.Collector, stack.Prometheus} {
		pid := p.Pid()
		if pid == 0 {
			t.Fatalf("%s is not running", p.Name)
		}
		addrs, err := Listeners(pid)
		if errors.Is(err, errors.ErrUnsupported) {
			t.Skip("needs /proc")
		}
		if err != nil {
			t.Fatalf("%s: %v", p.Name, err)
		}
		if len(addrs) == 0 {
			t.Errorf("%s: no listening socket found", p.Name)
		}
		for _, a := range addrs {
			var ip net.IP
			switch a := a.(type) {
			case *net.TCPAddr:
				ip = a.IP
			case *net.UDPAddr:
				ip = a.IP
			}
			if !ip.IsLoopback() {
				t.Errorf("%s listens on %s %s, want 127.0.0.1 only", p.Name, a.Network(), a)
			}
		}
		t.Logf("%s (pid %d) listens on %v", p.Name, pid, addrs)
	}
}
