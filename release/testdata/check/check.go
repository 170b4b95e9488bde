// Package check holds what both programs of the consumer test do alike:
// count the reconciled keys, run a controller until all were reconciled,
// and check the queue's metrics and spans.
package check

import (
	"context"
	"fmt"
	"os"
	"sync"
	"time"

	sdkmetric "go.opentelemetry.io/otel/sdk/metric"
	"go.opentelemetry.io/otel/sdk/metric/metricdata"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/sdk/trace/tracetest"
)

// Main runs run with a context that ends after timeout and exits 1 with
// its error, prefixed by the program's name.
func Main(program string, timeout time.Duration, run func(context.Context, *SDK) error) {
	ctx, cancel := context.WithTimeout(context.Background(), timeout)
	sdk := newSDK()
	err := run(ctx, sdk)
	sdk.shutdown()
	cancel()
	if err != nil {
		fmt.Fprintf(os.Stderr, "%s: %v\n", program, err)
		os.Exit(1)
	}
}

// SDK is the OpenTelemetry SDK a program's queue reports to.
type SDK struct {
	Reader         *sdkmetric.ManualReader
	MeterProvider  *sdkmetric.MeterProvider
	Spans          *tracetest.SpanRecorder
	TracerProvider *sdktrace.TracerProvider
}

func newSDK() *SDK {
	s := &SDK{Reader: sdkmetric.NewManualReader(), Spans: tracetest.NewSpanRecorder()}
	s.MeterProvider = sdkmetric.NewMeterProvider(sdkmetric.WithReader(s.Reader))
	s.TracerProvider = sdktrace.NewTracerProvider(sdktrace.WithSpanProcessor(s.Spans))
	return s
}

func (s *SDK) shutdown() {
	_ = s.MeterProvider.Shutdown(context.Background())
	_ = s.TracerProvider.Shutdown(context.Background())
}

// Keys counts the distinct keys reconciled.
type Keys struct {
	mu   sync.Mutex
	seen map[string]bool
	want int
	all  chan struct{}
}

// NewKeys returns Keys that are complete after want distinct keys.
func NewKeys(want int) *Keys {
	return &Keys{seen: map[string]bool{}, want: want, all: make(chan struct{})}
}

// Reconciled records that key was reconciled.
func (k *Keys) Reconciled(key string) {
	k.mu.Lock()
	defer k.mu.Unlock()
	if !k.seen[key] {
		k.seen[key] = true
		if len(k.seen) == k.want {
			close(k.all)
		}
	}
}

func (k *Keys) count() int {
	k.mu.Lock()
	defer k.mu.Unlock()
	return len(k.seen)
}

// Run runs start in a goroutine until every key was reconciled, then
// cancels its context, and checks what start returned, the metrics and the
// spans. It returns the number of spans by name.
func (s *SDK) Run(ctx context.Context, keys *Keys, start func(context.Context) error) (map[string]int, error) {
	if err := run(ctx, keys, start); err != nil {
		return nil, err
	}
	if err := Metrics(s.Reader); err != nil {
		return nil, err
	}
	return Attempts(s.Spans.Ended(), keys.want)
}

func run(ctx context.Context, keys *Keys, start func(context.Context) error) error {
	runCtx, stop := context.WithCancel(ctx)
	defer stop()
	stopped := make(chan error, 1)
	go func() { stopped <- start(runCtx) }()
	select {
	case <-keys.all:
	case err := <-stopped:
		return fmt.Errorf("the controller stopped after %d of %d keys: %v", keys.count(), keys.want, err)
	case <-ctx.Done():
		stop()
		<-stopped
		return fmt.Errorf("reconciled %d of %d keys before the deadline", keys.count(), keys.want)
	}
	stop()
	return <-stopped
}

// Metrics checks that reader has the queue's main instruments.
func Metrics(reader *sdkmetric.ManualReader) error {
	var rm metricdata.ResourceMetrics
	if err := reader.Collect(context.Background(), &rm); err != nil {
		return err
	}
	got := map[string]bool{}
	for _, sm := range rm.ScopeMetrics {
		for _, m := range sm.Metrics {
			got[m.Name] = true
		}
	}
	for _, want := range []string{"workqueue.queue.duration", "workqueue.work.duration", "workqueue.depth", "workqueue.adds"} {
		if !got[want] {
			return fmt.Errorf("metric %s missing; got %v", want, got)
		}
	}
	return nil
}

// Attempts counts the spans by name and checks that there are at least n
// attempts, each with its "queued" and "reconcile" span.
func Attempts(spans []sdktrace.ReadOnlySpan, n int) (map[string]int, error) {
	names := map[string]int{}
	for _, s := range spans {
		names[s.Name()]++
	}
	if names["queued"] < n || names["reconcile"] < n {
		return names, fmt.Errorf("want %d queued and reconcile spans, got %v", n, names)
	}
	return names, nil
}
