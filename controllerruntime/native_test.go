package controllerruntime_test

import (
	"context"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/promhttp"
	otelprom "go.opentelemetry.io/otel/exporters/prometheus"
	sdkmetric "go.opentelemetry.io/otel/sdk/metric"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"sigs.k8s.io/controller-runtime/pkg/controller/priorityqueue"
	ctrlmetrics "sigs.k8s.io/controller-runtime/pkg/metrics"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"

	"github.com/otelqueue/otelqueue/controllerruntime"
	"github.com/otelqueue/otelqueue/internal/testutil"
	"github.com/otelqueue/otelqueue/otelqueue"
	"github.com/otelqueue/otelqueue/otelqueuesdk"
)

// TestNativeHistogramsAsControllerRuntime: with otelqueuesdk's native
// histograms, a queue moved to otelqueue serves its queue-wait and
// work-duration histograms as controller-runtime's own queue serves its
// own: in the same families of one protobuf scrape of both registries,
// every series with classic buckets and native buckets of schema 3 and the
// same zero threshold, and no second family. Both ways to serve them: the
// exporter's registry through MergeNativeHistograms beside
// controller-runtime's registry, and the exporter registered through
// NativeHistogramRegisterer into a registry served by someone else (a
// manager's metrics.Registry; a fresh registry stands for it here, since
// registering into the global one would outlive the test).
func TestNativeHistogramsAsControllerRuntime(t *testing.T) {
	for _, tc := range []struct {
		name string
		// serve returns the exporter's registerer and what the endpoint
		// gathers besides controller-runtime's registry.
		serve func() (prometheus.Registerer, prometheus.Gatherer)
	}{
		{"MergeNativeHistograms", func() (prometheus.Registerer, prometheus.Gatherer) {
			reg := prometheus.NewRegistry()
			return reg, otelqueuesdk.MergeNativeHistograms(reg)
		}},
		{"NativeHistogramRegisterer", func() (prometheus.Registerer, prometheus.Gatherer) {
			reg := prometheus.NewRegistry()
			return otelqueuesdk.NativeHistogramRegisterer(reg), reg
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			testutil.NoOTelErrors(t)
			registerer, gatherer := tc.serve()
			exporter, err := otelprom.New(otelprom.WithRegisterer(registerer), otelprom.WithoutScopeInfo())
			if err != nil {
				t.Fatal(err)
			}
			mp := sdkmetric.NewMeterProvider(sdkmetric.WithReader(exporter), sdkmetric.WithView(otelqueuesdk.NativeHistograms(0)...))
			tp := sdktrace.NewTracerProvider()
			t.Cleanup(func() {
				_ = tp.Shutdown(context.Background())
				_ = mp.Shutdown(context.Background())
			})
			oursName, theirsName := "native-moved-"+tc.name, "native-kept-"+tc.name
			wq := controllerruntime.NewQueue(otelqueue.WithTracerProvider(tp), otelqueue.WithMeterProvider(mp))(oursName, limiter())
			ours := wq.(*controllerruntime.Queue[reconcile.Request])
			t.Cleanup(ours.ShutDown)
			theirs := priorityqueue.New[reconcile.Request](theirsName)
			t.Cleanup(theirs.ShutDown)
			for _, q := range []priorityqueue.PriorityQueue[reconcile.Request]{ours, theirs} {
				for _, key := range []string{"a", "b", "c"} {
					q.Add(req(key))
					k, _ := q.Get()
					q.Done(k)
				}
			}

			srv := httptest.NewServer(promhttp.HandlerFor(prometheus.Gatherers{ctrlmetrics.Registry, gatherer}, promhttp.HandlerOpts{EnableOpenMetrics: true}))
			defer srv.Close()
			mfs := testutil.ScrapeProtobuf(t, srv.URL)
			for name := range mfs {
				if strings.Contains(name, "_native") {
					t.Errorf("family %s served: the native stream must be folded into its histogram", name)
				}
			}
			for _, fam := range []string{"workqueue_queue_duration_seconds", "workqueue_work_duration_seconds"} {
				mf := mfs[fam]
				if mf == nil {
					t.Fatalf("no %s family", fam)
				}
				var zero [2]float64
				for i, queue := range []string{oursName, theirsName} {
					m := series(mf, map[string]string{"name": queue, "controller": queue})
					if m == nil {
						t.Fatalf("%s has no series of %s", fam, queue)
					}
					h := m.GetHistogram()
					if len(h.GetBucket()) == 0 || h.GetSchema() != 3 || len(h.GetPositiveSpan()) == 0 || h.GetSampleCount() != 3 {
						t.Errorf("%s{name=%q}: %d classic buckets, schema %d, %d native spans, count %d; want classic and schema 3 native buckets of 3 observations, as controller-runtime serves",
							fam, queue, len(h.GetBucket()), h.GetSchema(), len(h.GetPositiveSpan()), h.GetSampleCount())
					}
					var native uint64 = h.GetZeroCount()
					var n int64
					for _, d := range h.GetPositiveDelta() {
						n += d
						native += uint64(n)
					}
					if native != h.GetSampleCount() {
						t.Errorf("%s{name=%q}: native buckets hold %d observations, the count is %d", fam, queue, native, h.GetSampleCount())
					}
					zero[i] = h.GetZeroThreshold()
				}
				if zero[0] != zero[1] {
					t.Errorf("%s: zero threshold %g, controller-runtime's %g", fam, zero[0], zero[1])
				}
			}
		})
	}
}
