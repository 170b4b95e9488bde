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
	"time"

	"github.com/go-logr/logr"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/informers"
	"k8s.io/client-go/kubernetes/fake"
	"sigs.k8s.io/controller-runtime/pkg/controller"
	logf "sigs.k8s.io/controller-runtime/pkg/log"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"
	"sigs.k8s.io/controller-runtime/pkg/source"

	"example.com/consumer/check"
	"github.com/otelqueue/otelqueue/controllerruntime"
	"github.com/otelqueue/otelqueue/otelqueue"
)

const objects = 5

func main() { check.Main("controllerruntime", time.Minute, run) }

func run(ctx context.Context, sdk *check.SDK) error {
	logf.SetLogger(logr.Discard())

	mp, tp := sdk.MeterProvider, sdk.TracerProvider

	keys := check.NewKeys(objects)
	otq := controllerruntime.New(otelqueue.WithMeterProvider(mp), otelqueue.WithTracerProvider(tp))
	c, err := controller.NewUnmanaged("configmaps", controller.Options{
		NewQueue: otq.NewQueue,
		Reconciler: otq.Reconciler(reconcile.Func(func(ctx context.Context, req reconcile.Request) (reconcile.Result, error) {
			_, span := tp.Tracer("consumer").Start(ctx, "sync "+req.Name)
			defer span.End()
			keys.Reconciled(req.Name)
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

	names, err := sdk.Run(ctx, keys, c.Start)
	if err != nil {
		return err
	}
	// The reconciler's span is a child of the attempt's "reconcile" span.
	reconcileSpans := map[string]bool{}
	for _, s := range sdk.Spans.Ended() {
		if s.Name() == "reconcile" {
			reconcileSpans[s.SpanContext().SpanID().String()] = true
		}
	}
	children := 0
	for _, s := range sdk.Spans.Ended() {
		if s.Name() != "queued" && s.Name() != "reconcile" && reconcileSpans[s.Parent().SpanID().String()] {
			children++
		}
	}
	if children < objects {
		return fmt.Errorf("%d reconciler spans are children of a reconcile span, want %d", children, objects)
	}
	fmt.Printf("ok: otelqueue %s reconciled %d ConfigMaps with controller-runtime; spans %v\n", otelqueue.Version, objects, names)
	return nil
}
