package controllerruntime_test

import (
	"testing"

	"github.com/prometheus/client_golang/prometheus"
	dto "github.com/prometheus/client_model/go"
	otelprom "go.opentelemetry.io/otel/exporters/prometheus"
	"sigs.k8s.io/controller-runtime/pkg/controller/priorityqueue"
	ctrlmetrics "sigs.k8s.io/controller-runtime/pkg/metrics"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"

	"github.com/otelqueue/otelqueue/internal/testutil"
)

// TestServedWithControllerRuntimesQueues: an application that moves one
// controller to otelqueue keeps its other controllers on
// controller-runtime's own queue, and serves controller-runtime's registry
// and the OpenTelemetry exporter's from one endpoint. Prometheus refuses a
// metric family with two help texts, so the scrape works only because the
// shared families match controller-runtime's; each then holds both queues.
func TestServedWithControllerRuntimesQueues(t *testing.T) {
	shared := []string{
		"workqueue_depth", "workqueue_adds_total", "workqueue_retries_total",
		"workqueue_queue_duration_seconds", "workqueue_work_duration_seconds",
		"workqueue_unfinished_work_seconds", "workqueue_longest_running_processor_seconds",
	}
	for _, tc := range []struct {
		name string
		opts []otelprom.Option
	}{
		{"default", nil},
		{"WithoutScopeInfo", []otelprom.Option{otelprom.WithoutScopeInfo()}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			testutil.NoOTelErrors(t)
			reg := prometheus.NewRegistry()
			exporter, err := otelprom.New(append(tc.opts, otelprom.WithRegisterer(reg))...)
			if err != nil {
				t.Fatal(err)
			}
			tel := newTelemetry(t, exporter)
			ours := newQueue(t, tel, "moved-"+tc.name)
			theirs := priorityqueue.New[reconcile.Request]("kept-" + tc.name)
			defer theirs.ShutDown()
			for _, q := range []priorityqueue.PriorityQueue[reconcile.Request]{ours, theirs} {
				q.AddWithOpts(priorityqueue.AddOpts{RateLimited: true}, req("retried"))
				q.Add(req("a"))
				k, _ := q.Get()
				q.Done(k)
				q.Add(req("b"))
			}

			mfs, err := prometheus.Gatherers{ctrlmetrics.Registry, reg}.Gather()
			if err != nil {
				t.Fatalf("one scrape of both registries fails: %v", err)
			}
			byName := map[string]*dto.MetricFamily{}
			for _, mf := range mfs {
				byName[mf.GetName()] = mf
			}
			for _, fam := range shared {
				mf := byName[fam]
				if mf == nil {
					t.Errorf("no %s", fam)
					continue
				}
				for _, queue := range []string{ours.Name(), "kept-" + tc.name} {
					if !hasLabels(mf, map[string]string{"name": queue, "controller": queue}) {
						t.Errorf("%s has no series of queue %q", fam, queue)
					}
				}
			}
			// Both depths by priority, each with its one ready key.
			for _, queue := range []string{ours.Name(), "kept-" + tc.name} {
				if !hasLabels(byName["workqueue_depth"], map[string]string{"name": queue, "priority": "0"}) {
					t.Errorf("workqueue_depth has no priority 0 series of %q", queue)
				}
			}
		})
	}
}
