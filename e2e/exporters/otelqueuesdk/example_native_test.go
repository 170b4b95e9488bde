package otelqueuesdk_test

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log"
	"net/http"
	"net/http/httptest"
	"strings"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/promhttp"
	dto "github.com/prometheus/client_model/go"
	"github.com/prometheus/common/expfmt"
	otelprom "go.opentelemetry.io/otel/exporters/prometheus"
	sdkmetric "go.opentelemetry.io/otel/sdk/metric"
	tracenoop "go.opentelemetry.io/otel/trace/noop"
	testingclock "k8s.io/utils/clock/testing"

	"github.com/otelqueue/otelqueue/otelqueue"
	"github.com/otelqueue/otelqueue/otelqueuesdk"
	"github.com/otelqueue/otelqueue/scheduler"
)

// Serve the queue histograms to Prometheus as controller-runtime does: each
// with classic buckets and native buckets. The views add a native twin of
// each histogram; MergeNativeHistograms folds the twins into the classic
// histograms of the exporter's registry. Prometheus keeps both kinds of
// buckets when it scrapes the protobuf format (scrape_protocols with
// PrometheusProto first). When the program does not serve the registry
// itself (a controller-runtime manager), see NativeHistogramRegisterer.
func ExampleNativeHistograms() {
	ctx := context.Background()
	registry := prometheus.NewRegistry()
	exporter, err := otelprom.New(otelprom.WithRegisterer(registry), otelprom.WithoutScopeInfo(), otelprom.WithoutTargetInfo())
	if err != nil {
		log.Fatal(err)
	}
	mp := sdkmetric.NewMeterProvider(
		sdkmetric.WithReader(exporter),
		sdkmetric.WithView(otelqueuesdk.NativeHistograms(0)...))
	defer mp.Shutdown(ctx)

	// In a program:
	//   http.Handle("/metrics", promhttp.HandlerFor(otelqueuesdk.MergeNativeHistograms(registry), promhttp.HandlerOpts{EnableOpenMetrics: true}))
	mux := http.NewServeMux()
	mux.Handle("/metrics", promhttp.HandlerFor(otelqueuesdk.MergeNativeHistograms(registry), promhttp.HandlerOpts{EnableOpenMetrics: true}))

	// A queue on a fake clock, so that the durations are known.
	clock := testingclock.NewFakeClock(time.Unix(1e9, 0))
	queue := scheduler.New(scheduler.Config[string]{Name: "deployments", Clock: clock})
	defer queue.ShutDown()
	if _, err := otelqueue.Instrument(queue, otelqueue.WithMeterProvider(mp), otelqueue.WithTracerProvider(tracenoop.NewTracerProvider())); err != nil {
		log.Fatal(err)
	}
	for i, wait := range []time.Duration{0, 20 * time.Millisecond, 3 * time.Second} {
		queue.Add(fmt.Sprint("default/web-", i))
		clock.Step(wait)
		key, _ := queue.Get()
		clock.Step(250 * time.Millisecond)
		queue.Done(key)
	}

	// Scrape as Prometheus does with native histograms on.
	srv := httptest.NewServer(mux)
	defer srv.Close()
	req, err := http.NewRequest(http.MethodGet, srv.URL+"/metrics", nil)
	if err != nil {
		log.Fatal(err)
	}
	req.Header.Set("Accept", "application/vnd.google.protobuf;proto=io.prometheus.client.MetricFamily;encoding=delimited")
	resp, err := srv.Client().Do(req)
	if err != nil {
		log.Fatal(err)
	}
	defer resp.Body.Close()
	dec := expfmt.NewDecoder(resp.Body, expfmt.ResponseFormat(resp.Header))
	for {
		var mf dto.MetricFamily
		if err := dec.Decode(&mf); errors.Is(err, io.EOF) {
			break
		} else if err != nil {
			log.Fatal(err)
		}
		if !strings.HasSuffix(mf.GetName(), "_duration_seconds") && !strings.Contains(mf.GetName(), "native") {
			continue
		}
		h := mf.GetMetric()[0].GetHistogram()
		fmt.Printf("%s: %d observations, %d classic buckets, schema %d, %d zeros, %d native spans\n",
			mf.GetName(), h.GetSampleCount(), len(h.GetBucket()), h.GetSchema(), h.GetZeroCount(), len(h.GetPositiveSpan()))
	}
	// Output:
	// workqueue_queue_duration_seconds: 3 observations, 22 classic buckets, schema 3, 1 zeros, 2 native spans
	// workqueue_work_duration_seconds: 3 observations, 22 classic buckets, schema 3, 0 zeros, 1 native spans
}

// Serve the queue histograms with classic and native buckets from a
// registry that something else serves, as a controller-runtime manager's
// metrics server serves sigs.k8s.io/controller-runtime/pkg/metrics.Registry.
// The exporter registers through NativeHistogramRegisterer, which folds the
// native twins of the NativeHistograms views into the classic histograms
// whenever the registry is gathered, beside whatever else it holds.
func ExampleNativeHistogramRegisterer() {
	ctx := context.Background()
	// In a controller-runtime program, registry is metrics.Registry
	// (import "sigs.k8s.io/controller-runtime/pkg/metrics"), and nothing
	// else is needed: the manager serves it.
	registry := prometheus.NewRegistry()
	exporter, err := otelprom.New(
		otelprom.WithRegisterer(otelqueuesdk.NativeHistogramRegisterer(registry)),
		otelprom.WithoutScopeInfo(), otelprom.WithoutTargetInfo())
	if err != nil {
		log.Fatal(err)
	}
	mp := sdkmetric.NewMeterProvider(
		sdkmetric.WithReader(exporter),
		sdkmetric.WithView(otelqueuesdk.NativeHistograms(0)...))
	defer mp.Shutdown(ctx)

	// A queue on a fake clock, so that the durations are known.
	clock := testingclock.NewFakeClock(time.Unix(1e9, 0))
	queue := scheduler.New(scheduler.Config[string]{Name: "deployments", Clock: clock})
	defer queue.ShutDown()
	if _, err := otelqueue.Instrument(queue, otelqueue.WithMeterProvider(mp), otelqueue.WithTracerProvider(tracenoop.NewTracerProvider())); err != nil {
		log.Fatal(err)
	}
	for i, wait := range []time.Duration{0, 20 * time.Millisecond, 3 * time.Second} {
		queue.Add(fmt.Sprint("default/web-", i))
		clock.Step(wait)
		key, _ := queue.Get()
		clock.Step(250 * time.Millisecond)
		queue.Done(key)
	}

	// What the manager's metrics server gathers for a scrape.
	families, err := registry.Gather()
	if err != nil {
		log.Fatal(err)
	}
	for _, mf := range families {
		if !strings.HasSuffix(mf.GetName(), "_duration_seconds") && !strings.Contains(mf.GetName(), "native") {
			continue
		}
		h := mf.GetMetric()[0].GetHistogram()
		fmt.Printf("%s: %d observations, %d classic buckets, schema %d, %d zeros, %d native spans\n",
			mf.GetName(), h.GetSampleCount(), len(h.GetBucket()), h.GetSchema(), h.GetZeroCount(), len(h.GetPositiveSpan()))
	}
	// Output:
	// workqueue_queue_duration_seconds: 3 observations, 22 classic buckets, schema 3, 1 zeros, 2 native spans
	// workqueue_work_duration_seconds: 3 observations, 22 classic buckets, schema 3, 0 zeros, 1 native spans
}
