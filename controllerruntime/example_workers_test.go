package controllerruntime_test

import (
	"context"

	corev1 "k8s.io/api/core/v1"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/builder"
	"sigs.k8s.io/controller-runtime/pkg/controller"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"

	"github.com/otelqueue/otelqueue/controllerruntime"
)

// Options sets NewQueue and wires the controller's worker count to the
// queue's workqueue_workers gauge, so that utilization is one PromQL
// expression: rate(workqueue_work_duration_seconds_sum[5m]) / workqueue_workers.
func ExampleController_Options() {
	mgr, err := ctrl.NewManager(ctrl.GetConfigOrDie(), ctrl.Options{})
	if err != nil {
		panic(err)
	}
	otq := controllerruntime.New()
	err = builder.ControllerManagedBy(mgr).
		Named("configmaps").
		Watches(&corev1.ConfigMap{}, controllerruntime.EnqueueRequestForObject()).
		WithOptions(otq.Options(mgr, controller.Options{MaxConcurrentReconciles: 4})).
		Complete(otq.Reconciler(reconcile.Func(func(context.Context, reconcile.Request) (reconcile.Result, error) {
			return reconcile.Result{}, nil
		})))
	if err != nil {
		panic(err)
	}
}
