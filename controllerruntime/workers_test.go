package controllerruntime_test

import (
	"context"
	"fmt"
	"testing"

	"github.com/prometheus/client_golang/prometheus"
	dto "github.com/prometheus/client_model/go"
	otelprom "go.opentelemetry.io/otel/exporters/prometheus"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/config"
	"sigs.k8s.io/controller-runtime/pkg/controller"
	"sigs.k8s.io/controller-runtime/pkg/manager"
	ctrlmetrics "sigs.k8s.io/controller-runtime/pkg/metrics"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"

	"github.com/otelqueue/otelqueue/controllerruntime"
	"github.com/otelqueue/otelqueue/internal/testutil"
)

// TestManagerWorkers runs real managers and checks that the queue's
// workqueue_workers (through the OTel Prometheus exporter) equals
// controller-runtime's own controller_runtime_max_concurrent_reconciles,
// whether the count is the controller's option, the manager's default, or
// controller-runtime's default of 1.
func TestManagerWorkers(t *testing.T) { testManagerWorkers(t, fakeCluster) }

// TestAPIServerManagerWorkers is TestManagerWorkers with the managers on a
// real API server.
func TestAPIServerManagerWorkers(t *testing.T) {
	apiServerConfig(t) // skips here, rather than in each case
	testManagerWorkers(t, apiServerCluster)
}

// testManagerWorkers runs each case on a cluster of its own, from
// newCluster.
func testManagerWorkers(t *testing.T, newCluster func(testing.TB) *cluster) {
	for _, tc := range []struct {
		name       string
		controller int // controller.Options.MaxConcurrentReconciles
		manager    int // the manager's config.Controller.MaxConcurrentReconciles
		want       int
	}{
		{"option", 4, 2, 4},
		{"manager default", 0, 3, 3},
		{"controller-runtime default", 0, 0, 1},
	} {
		t.Run(tc.name, func(t *testing.T) {
			testutil.NoOTelErrors(t)
			tel, reg := newPromTelemetry(t)
			c := newCluster(t)
			name := c.controllerName(fmt.Sprintf("workers-%d-%d", tc.controller, tc.manager))
			var opts controller.Options
			run := startController(t, tel, name, reconcile.Func(func(context.Context, reconcile.Request) (reconcile.Result, error) {
				return reconcile.Result{}, nil
			}), startOnCluster(c), func(sc *startConfig) {
				sc.controller = config.Controller{MaxConcurrentReconciles: tc.manager}
				sc.options = func(mgr manager.Manager, otq *controllerruntime.Controller[reconcile.Request]) controller.Options {
					opts = otq.Options(mgr, controller.Options{MaxConcurrentReconciles: tc.controller, SkipNameValidation: ptr.To(true)})
					return opts
				}
			})
			t.Cleanup(func() { // after the manager stopped
				if q := run.otq.Queue(); q != nil && q.Instrumentation() != nil {
					_ = q.Instrumentation().Stop()
				}
			})
			if opts.MaxConcurrentReconciles != tc.controller {
				t.Errorf("Options changed MaxConcurrentReconciles from %d to %d", tc.controller, opts.MaxConcurrentReconciles)
			}

			var theirs, ours *dto.Metric
			testutil.WaitFor(t, "both worker gauges", func() bool {
				theirs = series(gather(t, ctrlmetrics.Registry)["controller_runtime_max_concurrent_reconciles"], map[string]string{"controller": name})
				ours = series(gather(t, reg)["workqueue_workers"], map[string]string{"name": name, "controller": name})
				return theirs != nil && ours != nil
			})
			if o, c := ours.GetGauge().GetValue(), theirs.GetGauge().GetValue(); o != c || o != float64(tc.want) {
				t.Errorf("workqueue_workers = %v, controller_runtime_max_concurrent_reconciles = %v; want both %d", o, c, tc.want)
			}
		})
	}
}

// newPromTelemetry is newTelemetry with the OTel Prometheus exporter as a
// second reader, registered in the returned registry.
func newPromTelemetry(t testing.TB) (*telemetry, *prometheus.Registry) {
	t.Helper()
	reg := prometheus.NewRegistry()
	exporter, err := otelprom.New(otelprom.WithRegisterer(reg))
	if err != nil {
		t.Fatal(err)
	}
	return newTelemetry(t, exporter), reg
}
