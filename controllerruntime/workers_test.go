package controllerruntime_test

import (
	"context"
	"fmt"
	"testing"

	"github.com/go-logr/logr"
	"github.com/prometheus/client_golang/prometheus"
	otelprom "go.opentelemetry.io/otel/exporters/prometheus"
	"k8s.io/client-go/rest"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/builder"
	"sigs.k8s.io/controller-runtime/pkg/config"
	"sigs.k8s.io/controller-runtime/pkg/controller"
	"sigs.k8s.io/controller-runtime/pkg/event"
	"sigs.k8s.io/controller-runtime/pkg/manager"
	ctrlmetrics "sigs.k8s.io/controller-runtime/pkg/metrics"
	metricsserver "sigs.k8s.io/controller-runtime/pkg/metrics/server"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"
	"sigs.k8s.io/controller-runtime/pkg/source"

	"github.com/otelqueue/otelqueue/controllerruntime"
	"github.com/otelqueue/otelqueue/otelqueue"
)

// TestManagerWorkers runs real managers and checks that the queue's
// workqueue_workers (through the OTel Prometheus exporter) equals
// controller-runtime's own controller_runtime_max_concurrent_reconciles,
// whether the count is the controller's option, the manager's default, or
// controller-runtime's default of 1.
func TestManagerWorkers(t *testing.T) {
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
			noErrors(t)
			reg := prometheus.NewRegistry()
			exporter, err := otelprom.New(otelprom.WithRegisterer(reg))
			if err != nil {
				t.Fatal(err)
			}
			tel := newTelemetry(t, exporter)
			name := fmt.Sprintf("workers-%d-%d", tc.controller, tc.manager)
			mgr, err := manager.New(&rest.Config{Host: "http://127.0.0.1:1"}, manager.Options{
				Metrics:                metricsserver.Options{BindAddress: "0"},
				HealthProbeBindAddress: "0",
				Logger:                 logr.Discard(),
				Controller:             config.Controller{MaxConcurrentReconciles: tc.manager},
			})
			if err != nil {
				t.Fatalf("manager.New: %v", err)
			}
			otq := controllerruntime.New(otelqueue.WithTracerProvider(tel.tp), otelqueue.WithMeterProvider(tel.mp))
			opts := otq.Options(mgr, controller.Options{MaxConcurrentReconciles: tc.controller, SkipNameValidation: ptr.To(true)})
			if opts.MaxConcurrentReconciles != tc.controller {
				t.Errorf("Options changed MaxConcurrentReconciles from %d to %d", tc.controller, opts.MaxConcurrentReconciles)
			}
			err = builder.ControllerManagedBy(mgr).
				Named(name).
				WithOptions(opts).
				WatchesRawSource(source.Channel(make(chan event.GenericEvent), controllerruntime.EnqueueRequestForObject())).
				Complete(otq.Reconciler(reconcile.Func(func(context.Context, reconcile.Request) (reconcile.Result, error) {
					return reconcile.Result{}, nil
				})))
			if err != nil {
				t.Fatalf("builder: %v", err)
			}
			ctx, cancel := context.WithCancel(context.Background())
			errc := make(chan error, 1)
			go func() { errc <- mgr.Start(ctx) }()
			t.Cleanup(func() {
				cancel()
				if err := receive(t, errc, "the manager to stop"); err != nil {
					t.Errorf("manager.Start: %v", err)
				}
				if q := otq.Queue(); q != nil && q.Instrumentation() != nil {
					_ = q.Instrumentation().Stop()
				}
			})

			// gauge returns the value of the series of family with the
			// labels given, and whether there is one.
			gauge := func(g prometheus.Gatherer, family string, labels map[string]string) (float64, bool) {
				mf := gather(t, g)[family]
				for _, m := range mf.GetMetric() {
					got := map[string]string{}
					for _, lp := range m.GetLabel() {
						got[lp.GetName()] = lp.GetValue()
					}
					match := true
					for k, v := range labels {
						match = match && got[k] == v
					}
					if match {
						return m.GetGauge().GetValue(), true
					}
				}
				return 0, false
			}
			var theirs, ours float64
			waitFor(t, "both worker gauges", func() bool {
				var ok1, ok2 bool
				theirs, ok1 = gauge(ctrlmetrics.Registry, "controller_runtime_max_concurrent_reconciles", map[string]string{"controller": name})
				ours, ok2 = gauge(reg, "workqueue_workers", map[string]string{"name": name, "controller": name})
				return ok1 && ok2
			})
			if ours != theirs || ours != float64(tc.want) {
				t.Errorf("workqueue_workers = %v, controller_runtime_max_concurrent_reconciles = %v; want both %d", ours, theirs, tc.want)
			}
		})
	}
}
