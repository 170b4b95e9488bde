package controllerruntime_test

import (
	"context"
	"testing"

	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/controller"
	"sigs.k8s.io/controller-runtime/pkg/manager"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"

	"github.com/otelqueue/otelqueue/controllerruntime"
	"github.com/otelqueue/otelqueue/internal/testutil"
)

// TestOptionsStandby: through Options, the queue of a controller that
// needs leader election is standby until the manager's Elected() is closed
// (at once here, a manager without leader election), and one that needs
// none is never standby, with no workqueue_standby series.
func TestOptionsStandby(t *testing.T) {
	for _, tc := range []struct {
		name string
		need *bool
		// series says whether workqueue_standby is reported.
		series bool
	}{
		{"leader election (the default)", nil, true},
		{"no leader election", ptr.To(false), false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			testutil.NoOTelErrors(t)
			tel, reg := newPromTelemetry(t)
			name := "standby-" + map[bool]string{true: "le", false: "none"}[tc.series]
			run := startController(t, tel, name, reconcile.Func(func(context.Context, reconcile.Request) (reconcile.Result, error) {
				return reconcile.Result{}, nil
			}), func(sc *startConfig) {
				sc.options = func(mgr manager.Manager, otq *controllerruntime.Controller[reconcile.Request]) controller.Options {
					return otq.Options(mgr, controller.Options{NeedLeaderElection: tc.need, SkipNameValidation: ptr.To(true)})
				}
			})
			t.Cleanup(func() {
				if q := run.otq.Queue(); q != nil && q.Instrumentation() != nil {
					_ = q.Instrumentation().Stop()
				}
			})
			testutil.WaitFor(t, "the queue, active", func() bool {
				q := run.otq.Queue()
				return q != nil && q.Instrumentation() != nil && !q.Instrumentation().Standby()
			})
			got := series(gather(t, reg)["workqueue_standby"], map[string]string{"name": name})
			switch {
			case tc.series && (got == nil || got.GetGauge().GetValue() != 0):
				t.Errorf("workqueue_standby %v, want 0 once the manager leads", got)
			case !tc.series && got != nil:
				t.Errorf("workqueue_standby %v for a controller that needs no leader election, want none", got)
			}
		})
	}
}
