package controllerruntime_test

import (
	"context"

	"go.opentelemetry.io/otel"
	corev1 "k8s.io/api/core/v1"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/builder"
	"sigs.k8s.io/controller-runtime/pkg/controller"
	"sigs.k8s.io/controller-runtime/pkg/handler"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"

	"github.com/otelqueue/otelqueue/controllerruntime"
)

// A controller-runtime controller on otelqueue's scheduler: Options.NewQueue
// builds the instrumented queue when the controller starts, the wrapped
// reconciler runs inside each attempt's "reconcile" span, and
// EnqueueRequestForObject in Watches links each attempt, when the event is
// enqueued, to the writer found in the object's otelqueue.github.io/traceparent
// annotation. A controller built with For() keeps For() and gets its links
// from ObjectLinkSource instead (see ExampleObjectLinkSource).
func Example() {
	mgr, err := ctrl.NewManager(ctrl.GetConfigOrDie(), ctrl.Options{})
	if err != nil {
		panic(err)
	}

	otq := controllerruntime.New() // the global OTel providers; pass otelqueue options to change them

	reconciler := reconcile.Func(func(ctx context.Context, req reconcile.Request) (reconcile.Result, error) {
		// ctx is controller-runtime's (logger, reconcileID, cancellation)
		// and carries the "reconcile" span: this span is its child.
		ctx, span := otel.Tracer("example.com/configmaps").Start(ctx, "sync configmap")
		defer span.End()
		_ = ctx
		return reconcile.Result{}, nil
	})

	err = builder.ControllerManagedBy(mgr).
		Named("configmaps").
		Watches(&corev1.ConfigMap{}, controllerruntime.EnqueueRequestForObject()).
		WithOptions(otq.Options(mgr, controller.Options{MaxConcurrentReconciles: 4})). // sets NewQueue, reports the 4 workers
		Complete(otq.Reconciler(reconciler))
	if err != nil {
		panic(err)
	}
	if err := mgr.Start(ctrl.SetupSignalHandler()); err != nil {
		panic(err)
	}
}

// Metrics and queue spans only, with the reconciler unwrapped.
func ExampleNewQueue() {
	_ = controller.Options{NewQueue: controllerruntime.NewQueue()}
}

// Owned objects: a change to a Secret reconciles the ConfigMap that
// controls it, in a trace linked to the Secret's writer, with
// controller-runtime's owner handler and its priorities unchanged.
func ExampleWithTraceContext() {
	mgr, err := ctrl.NewManager(ctrl.GetConfigOrDie(), ctrl.Options{})
	if err != nil {
		panic(err)
	}
	otq := controllerruntime.New()
	err = builder.ControllerManagedBy(mgr).
		Named("configmaps").
		Watches(&corev1.ConfigMap{}, controllerruntime.EnqueueRequestForObject()).
		Watches(&corev1.Secret{}, controllerruntime.WithTraceContext(
			handler.EnqueueRequestForOwner(mgr.GetScheme(), mgr.GetRESTMapper(), &corev1.ConfigMap{}, handler.OnlyControllerOwner()))).
		WithOptions(controller.Options{NewQueue: otq.NewQueue}).
		Complete(otq.Reconciler(reconcile.Func(func(context.Context, reconcile.Request) (reconcile.Result, error) {
			return reconcile.Result{}, nil
		})))
	if err != nil {
		panic(err)
	}
}
