package controllerruntime_test

import (
	"fmt"

	"sigs.k8s.io/controller-runtime/pkg/controller"
	"sigs.k8s.io/controller-runtime/pkg/manager"

	"github.com/otelqueue/otelqueue/controllerruntime"
)

// Options sets NewQueue and wires the controller's worker count to the
// queue's workqueue_workers gauge, so that utilization is one PromQL
// expression: rate(workqueue_work_duration_seconds_sum[5m]) /
// workqueue_workers. Pass the manager, so that its default
// MaxConcurrentReconciles counts when the Options leave it 0 (see Example
// for the whole controller).
func ExampleController_Options() {
	var mgr manager.Manager // from ctrl.NewManager; nil: no manager default
	otq := controllerruntime.New()
	opts := otq.Options(mgr, controller.Options{MaxConcurrentReconciles: 4})
	fmt.Println(opts.NewQueue != nil, opts.MaxConcurrentReconciles)
	// Output: true 4
}
