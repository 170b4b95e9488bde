package e2e

import (
	"context"
	"fmt"
	"net"
	"testing"
	"time"

	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/exporters/otlp/otlptrace/otlptracegrpc"
	"go.opentelemetry.io/otel/sdk/resource"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
)

// TestStackFaults exercises the harness's fault controls: a collector killed
// and restarted on the same ports takes traffic again, and a trace sent
// while Jaeger is down reaches it once it is back (the collector's OTLP
// exporter queues and retries). The stack is left running.
func TestStackFaults(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	t.Cleanup(func() { // leave a working stack to the other tests
		if !stack.Jaeger.Running() {
			if err := stack.StartJaeger(context.Background()); err != nil {
				t.Error(err)
			}
		}
		if !stack.Collector.Running() {
			if err := stack.StartCollector(context.Background()); err != nil {
				t.Error(err)
			}
		}
	})
	service := fmt.Sprintf("e2e-faults-%d", time.Now().UnixNano())

	t.Run("collector killed and restarted", func(t *testing.T) {
		if err := stack.KillCollector(); err != nil {
			t.Fatal(err)
		}
		if stack.Collector.Running() {
			t.Fatal("collector still running after KillCollector")
		}
		if c, err := net.DialTimeout("tcp", stack.CollectorOTLPGRPC, time.Second); err == nil {
			c.Close()
			t.Fatal("collector's OTLP port still accepts connections after KillCollector")
		}
		if err := stack.RestartCollector(ctx); err != nil {
			t.Fatal(err)
		}
		id := sendTrace(ctx, t, service, "after-restart")
		waitTrace(ctx, t, id, 30*time.Second)
	})

	t.Run("jaeger down", func(t *testing.T) {
		if err := stack.StopJaeger(); err != nil {
			t.Fatal(err)
		}
		id := sendTrace(ctx, t, service, "while-jaeger-down")
		time.Sleep(500 * time.Millisecond) // let the collector try and fail once
		if err := stack.StartJaeger(ctx); err != nil {
			t.Fatal(err)
		}
		waitTrace(ctx, t, id, 90*time.Second)
	})
}

// sendTrace sends one span named name to the collector and returns its
// trace ID.
func sendTrace(ctx context.Context, t *testing.T, service, name string) string {
	t.Helper()
	exp, err := otlptracegrpc.New(ctx,
		otlptracegrpc.WithEndpoint(stack.CollectorOTLPGRPC),
		otlptracegrpc.WithInsecure(),
	)
	if err != nil {
		t.Fatal(err)
	}
	tp := sdktrace.NewTracerProvider(
		sdktrace.WithResource(resource.NewSchemaless(
			attribute.String("service.name", service),
			attribute.String("host.name", "e2e-host"),
		)),
		sdktrace.WithSyncer(exp),
	)
	_, span := tp.Tracer("github.com/otelqueue/otelqueue/e2e").Start(ctx, name)
	span.End()
	if err := tp.Shutdown(ctx); err != nil {
		t.Fatalf("sending %s: %v", name, err)
	}
	return span.SpanContext().TraceID().String()
}

// waitTrace waits until Jaeger has the trace.
func waitTrace(ctx context.Context, t *testing.T, traceID string, timeout time.Duration) Trace {
	t.Helper()
	var tr Trace
	Eventually(t, timeout, 250*time.Millisecond, func() error {
		var err error
		tr, err = stack.JaegerAPI.GetTrace(ctx, traceID)
		return err
	})
	return tr
}
