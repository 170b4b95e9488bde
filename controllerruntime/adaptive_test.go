package controllerruntime_test

import (
	"context"
	"fmt"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/controller"
	"sigs.k8s.io/controller-runtime/pkg/manager"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"

	"github.com/otelqueue/otelqueue/controllerruntime"
	"github.com/otelqueue/otelqueue/internal/testutil"
	"github.com/otelqueue/otelqueue/otelqueue"
)

// TestManagerAdaptiveWorkers runs a real manager whose Controller has
// otelqueue.AdaptiveWorkers: controller-runtime's MaxConcurrentReconciles
// goroutines stay as they are, the pool gates them (no more reconciles at
// once than its limit), its ceiling is MaxConcurrentReconciles, and
// workqueue_workers reports the limit. The pool's interval is long, so that
// it makes no decision during the test: its rule is tested in package
// otelqueue; this is the wiring.
func TestManagerAdaptiveWorkers(t *testing.T) {
	testutil.NoOTelErrors(t)
	tel, reg := newPromTelemetry(t)
	c := fakeCluster(t)
	name := c.controllerName("adaptive")
	const (
		maxConcurrent = 8
		start         = 2
		keys          = 12
	)
	var (
		running, peak atomic.Int64
		release       = make(chan struct{})
		releaseOnce   sync.Once
		done          atomic.Int64
	)
	t.Cleanup(func() { releaseOnce.Do(func() { close(release) }) })
	run := startController(t, tel, name, reconcile.Func(func(ctx context.Context, _ reconcile.Request) (reconcile.Result, error) {
		n := running.Add(1)
		for p := peak.Load(); n > p && !peak.CompareAndSwap(p, n); p = peak.Load() {
		}
		select {
		case <-release:
		case <-ctx.Done():
		}
		running.Add(-1)
		done.Add(1)
		return reconcile.Result{}, nil
	}), func(sc *startConfig) {
		sc.queueOptions = []otelqueue.Option{otelqueue.AdaptiveWorkers{Min: 1, Max: 16, Start: start, Interval: time.Hour}}
		sc.options = func(mgr manager.Manager, otq *controllerruntime.Controller[reconcile.Request]) controller.Options {
			return otq.Options(mgr, controller.Options{MaxConcurrentReconciles: maxConcurrent, SkipNameValidation: ptr.To(true)})
		}
	})
	t.Cleanup(func() { // after the manager stopped
		if q := run.otq.Queue(); q != nil && q.Instrumentation() != nil {
			_ = q.Instrumentation().Stop()
		}
	})
	for i := range keys {
		run.send(t, &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: "default", Name: fmt.Sprintf("cm-%d", i)}})
	}
	q := run.otq.Queue()
	testutil.WaitFor(t, "the limit's reconciles running, the other keys waiting", func() bool {
		return running.Load() == start && q.Len() == keys-start
	})
	st, ok := q.Instrumentation().AdaptiveStats()
	if !ok {
		t.Fatal("AdaptiveStats: no pool on the queue")
	}
	if st.Limit != start || st.Min != 1 || st.Max != maxConcurrent {
		t.Errorf("AdaptiveStats = limit %d in [%d, %d]; want %d in [1, %d] (MaxConcurrentReconciles is the ceiling)", st.Limit, st.Min, st.Max, start, maxConcurrent)
	}
	if got := q.MaxInFlight(); got != start {
		t.Errorf("MaxInFlight = %d, want %d", got, start)
	}
	var ours float64
	testutil.WaitFor(t, "workqueue_workers", func() bool {
		m := series(gather(t, reg)["workqueue_workers"], map[string]string{"name": name, "controller": name})
		if m == nil {
			return false
		}
		ours = m.GetGauge().GetValue()
		return true
	})
	if ours != start {
		t.Errorf("workqueue_workers = %v, want the limit %d", ours, start)
	}
	releaseOnce.Do(func() { close(release) })
	testutil.WaitFor(t, "every key reconciled", func() bool { return done.Load() == keys })
	if p := peak.Load(); p > start {
		t.Errorf("%d reconciles ran at once, above the limit %d", p, start)
	}
}
