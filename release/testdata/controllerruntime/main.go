// Command controllerruntime is the controller-runtime controller of the
// consumer test: built in a fresh module against otelqueue and its
// controllerruntime module fetched with go get, it runs a controller-runtime
// controller on otelqueue's queue over the ConfigMaps of a fake cluster and
// checks the metrics and traces it got. It exits 0 and prints "ok" when
// everything was there.
package main

import (
	"context"
	"fmt"
	"os"
	"sync"
	"time"

	"github.com/go-logr/logr"
	sdkmetric "go.opentelemetry.io/otel/sdk/metric"
	"go.opentelemetry.io/otel/sdk/metric/metricdata"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/sdk/trace/tracetest"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/informers"
	"k8s.io/client-go/kubernetes/fake"
	"sigs.k8s.io/controller-runtime/pkg/controller"
	logf "sigs.k8s.io/controller-runtime/pkg/log"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"
	"sigs.k8s.io/controller-runtime/pkg/source"

	"github.com/otelqueue/otelqueue/controllerruntime"
	"github.com/otelqueue/otelqueue/otelqueue"
)

const objects = 5

func main() {
	if err := run(); err != nil {
		fmt.Fprintln(os.Stderr, "controllerruntime:", err)
		os.Exit(1)
	}
}

func run() error {
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	logf.SetLogger(logr.Discard())

	reader := sdkmetric.NewManualReader()
	mp := sdkmetric.NewMeterProvider(sdkmetric.WithReader(reader))
	defer mp.Shutdown(context.Background())
	spans := tracetest.NewSpanRecorder()
	tp := sdktrace.NewTracerProvider(sdktrace.WithSpanProcessor(spans))
	defer tp.Shutdown(context.Background())

	var (
		mu   sync.Mutex
		seen = map[string]bool{}
		all  = make(chan struct{})
	)
	otq := controllerruntime.New(otelqueue.WithMeterProvider(mp), otelqueue.WithTracerProvider(tp))
	c, err := controller.NewUnmanaged("configmaps", controller.Options{
		NewQueue: otq.NewQueue,
		Reconciler: otq.Reconciler(reconcile.Func(func(ctx context.Context, req reconcile.Request) (reconcile.Result, error) {
			_, span := tp.Tracer("consumer").Start(ctx, "sync "+req.Name)
			defer span.End()
			mu.Lock()
			defer mu.Unlock()
			if !seen[req.Name] {
				seen[req.Name] = true
				if len(seen) == objects {
					close(all)
				}
			}
			return reconcile.Result{}, nil
		})),
	})
	if err != nil {
		return err
	}

	cs := fake.NewClientset()
	for i := range objects {
		cm := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: "default", Name: fmt.Sprintf("cm-%d", i), ResourceVersion: "1"}}
		if _, err := cs.CoreV1().ConfigMaps("default").Create(ctx, cm, metav1.CreateOptions{}); err != nil {
			return err
		}
	}
	factory := informers.NewSharedInformerFactory(cs, 0)
	if err := c.Watch(&source.Informer{
		Informer: factory.Core().V1().ConfigMaps().Informer(),
		Handler:  controllerruntime.EnqueueRequestForObject(),
	}); err != nil {
		return err
	}
	factory.Start(ctx.Done())
	defer factory.Shutdown()

	runCtx, stop := context.WithCancel(ctx)
	stopped := make(chan error, 1)
	go func() { stopped <- c.Start(runCtx) }()
	select {
	case <-all:
	case err := <-stopped:
		stop()
		return fmt.Errorf("the controller stopped early: %v", err)
	case <-ctx.Done():
		stop()
		return fmt.Errorf("reconciled %d of %d ConfigMaps before the deadline", len(seen), objects)
	}
	stop()
	if err := <-stopped; err != nil {
		return err
	}

	var rm metricdata.ResourceMetrics
	if err := reader.Collect(context.Background(), &rm); err != nil {
		return err
	}
	metrics := map[string]bool{}
	for _, sm := range rm.ScopeMetrics {
		for _, m := range sm.Metrics {
			metrics[m.Name] = true
		}
	}
	for _, want := range []string{otelqueue.MetricQueueDuration, otelqueue.MetricWorkDuration, otelqueue.MetricDepth, otelqueue.MetricAdds} {
		if !metrics[want] {
			return fmt.Errorf("metric %s missing; got %v", want, metrics)
		}
	}
	// The reconciler's span is a child of the attempt's "reconcile" span.
	names := map[string]int{}
	reconcileSpans := map[string]bool{}
	for _, s := range spans.Ended() {
		names[s.Name()]++
		if s.Name() == "reconcile" {
			reconcileSpans[s.SpanContext().SpanID().String()] = true
		}
	}
	children := 0
	for _, s := range spans.Ended() {
		if s.Name() != "queued" && s.Name() != "reconcile" && reconcileSpans[s.Parent().SpanID().String()] {
			children++
		}
	}
	if names["queued"] < objects || names["reconcile"] < objects || children < objects {
		return fmt.Errorf("want %d queued and reconcile spans and as many reconciler spans under reconcile, got %v and %d", objects, names, children)
	}
	fmt.Printf("ok: otelqueue %s reconciled %d ConfigMaps with controller-runtime; spans %v\n", otelqueue.Version(), objects, names)
	return nil
}
