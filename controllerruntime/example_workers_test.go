package controllerruntime_test

import (
	"fmt"

	"sigs.k8s.io/controller-runtime/pkg/controller"
	"sigs.k8s.io/controller-runtime/pkg/manager"

	"github.com/otelqueue/otelqueue/controllerruntime"
	"github.com/otelqueue/otelqueue/otelqueue"
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

// An adaptive worker pool (otelqueue.AdaptiveWorkers) gates
// controller-runtime's MaxConcurrentReconciles goroutines: they are the
// ceiling, and the pool hands out keys to between Min and that many at once,
// starting at Start, following the load and backing off from a downstream
// limit (docs/tuning.md, "Adaptive workers").
func ExampleController_Options_adaptiveWorkers() {
	var mgr manager.Manager // from ctrl.NewManager
	otq := controllerruntime.New(otelqueue.AdaptiveWorkers{Min: 1, Max: 32, Start: 4})
	opts := otq.Options(mgr, controller.Options{MaxConcurrentReconciles: 32})
	fmt.Println(opts.MaxConcurrentReconciles)
	// Output: 32
}
