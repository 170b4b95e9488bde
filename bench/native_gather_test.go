package bench

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	otelprom "go.opentelemetry.io/otel/exporters/prometheus"
	"go.opentelemetry.io/otel/metric"
	sdkmetric "go.opentelemetry.io/otel/sdk/metric"
	tracenoop "go.opentelemetry.io/otel/trace/noop"
	"k8s.io/utils/clock"
	testingclock "k8s.io/utils/clock/testing"

	"github.com/otelqueue/otelqueue/otelqueue"
	"github.com/otelqueue/otelqueue/otelqueuesdk"
	"github.com/otelqueue/otelqueue/scheduler"
)

// BenchmarkNativeRecord measures one key through an instrumented scheduler
// (Add, Get, Done on the real clock, tracing off with a no-op
// TracerProvider): with the SDK's default streams (classic), and with the
// NativeHistograms views (classic+native), which record every queue wait
// and work duration a second time.
func BenchmarkNativeRecord(b *testing.B) {
	for _, bc := range []struct {
		name  string
		views []sdkmetric.View
	}{
		{"classic", nil},
		{"classic+native", otelqueuesdk.NativeHistograms(0)},
	} {
		b.Run(bc.name, func(b *testing.B) {
			mp := sdkmetric.NewMeterProvider(sdkmetric.WithReader(sdkmetric.NewManualReader()), sdkmetric.WithView(bc.views...))
			b.Cleanup(func() { _ = mp.Shutdown(context.Background()) })
			q := nativeQueue(b, mp, nil, "orders")
			b.ReportAllocs()
			for b.Loop() {
				q.Add("a")
				k, _ := q.Get()
				q.Done(k)
			}
		})
	}
}

// BenchmarkNativeGather measures one gather of the registry a scrape reads,
// after keys with waits and work durations from 100µs to 100s went through
// each of 1 or 20 queues, to tell what turning native histograms on costs
// per scrape:
//
//   - classic: no NativeHistograms views; the exporter's registry as it is
//     (the baseline: what a scrape costs without the option);
//   - twins: the views; the registry as it is (each histogram and its
//     twin, unmerged);
//   - merged: the views; the registry through MergeNativeHistograms;
//   - registerer: the views; the exporter registered through
//     NativeHistogramRegisterer, and the registry gathered as it is.
func BenchmarkNativeGather(b *testing.B) {
	type variant struct {
		name     string
		views    bool
		register func(*prometheus.Registry) prometheus.Registerer // what the exporter registers with
		gatherer func(*prometheus.Registry) prometheus.Gatherer   // what a scrape gathers
	}
	plainReg := func(reg *prometheus.Registry) prometheus.Registerer { return reg }
	plainGather := func(reg *prometheus.Registry) prometheus.Gatherer { return reg }
	variants := []variant{
		{"classic", false, plainReg, plainGather},
		{"twins", true, plainReg, plainGather},
		{"merged", true, plainReg, func(reg *prometheus.Registry) prometheus.Gatherer {
			return otelqueuesdk.MergeNativeHistograms(reg)
		}},
		{"registerer", true, func(reg *prometheus.Registry) prometheus.Registerer {
			return otelqueuesdk.NativeHistogramRegisterer(reg)
		}, plainGather},
	}
	for _, queues := range []int{1, 20} {
		for _, v := range variants {
			b.Run(fmt.Sprintf("%s/queues=%d", v.name, queues), func(b *testing.B) {
				reg := prometheus.NewRegistry()
				nativeGatherSetup(b, queues, v.views, v.register(reg))
				g := v.gatherer(reg)
				// The families a scrape serves: the classic histograms
				// with native buckets when the views are on, and no
				// twin unless unmerged.
				mfs, err := g.Gather()
				if err != nil {
					b.Fatal(err)
				}
				var twins, native int
				for _, mf := range mfs {
					if strings.Contains(mf.GetName(), "_native") {
						twins++
					}
					if mf.GetName() == "workqueue_queue_duration_seconds" {
						if len(mf.Metric) != queues {
							b.Fatalf("%d queue-wait histograms, want %d", len(mf.Metric), queues)
						}
						if mf.Metric[0].Histogram.Schema != nil {
							native++
						}
					}
				}
				if wantTwins := map[string]int{"twins": 2}[v.name]; twins != wantTwins {
					b.Fatalf("%d twin families served, want %d", twins, wantTwins)
				}
				if wantNative := map[bool]int{true: 1}[v.views && v.name != "twins"]; native != wantNative {
					b.Fatalf("queue-wait histogram with native buckets: %d, want %d", native, wantNative)
				}
				b.ReportAllocs()
				for b.Loop() {
					mfs, err := g.Gather()
					if err != nil || len(mfs) == 0 {
						b.Fatal(len(mfs), err)
					}
				}
			})
		}
	}
}

// nativeGatherSetup registers with reg an exporter reading a MeterProvider,
// with the NativeHistograms views when views is set, and runs 50 keys
// through each of queues queues, with waits and work durations from 100µs
// to 100s.
func nativeGatherSetup(b *testing.B, queues int, views bool, reg prometheus.Registerer) {
	exp, err := otelprom.New(otelprom.WithRegisterer(reg), otelprom.WithoutScopeInfo(), otelprom.WithoutTargetInfo())
	if err != nil {
		b.Fatal(err)
	}
	opts := []sdkmetric.Option{sdkmetric.WithReader(exp)}
	if views {
		opts = append(opts, sdkmetric.WithView(otelqueuesdk.NativeHistograms(0)...))
	}
	mp := sdkmetric.NewMeterProvider(opts...)
	b.Cleanup(func() { _ = mp.Shutdown(context.Background()) })
	fc := testingclock.NewFakeClock(time.Unix(1e9, 0))
	durations := []time.Duration{0, 100 * time.Microsecond, 700 * time.Microsecond, 3 * time.Millisecond,
		20 * time.Millisecond, 150 * time.Millisecond, 600 * time.Millisecond, 2 * time.Second, 9 * time.Second, 100 * time.Second}
	for n := range queues {
		q := nativeQueue(b, mp, fc, fmt.Sprint("queue-", n))
		for i, d := range durations {
			for j := range 5 {
				nativeProcess(q, fc, fmt.Sprint(i, "-", j), d+time.Duration(j)*d/7, durations[len(durations)-1-i])
			}
		}
	}
}

// nativeQueue returns a scheduler on clk (the real clock when nil),
// instrumented with mp, tracing off.
func nativeQueue(b *testing.B, mp metric.MeterProvider, clk clock.WithTicker, name string) *scheduler.Scheduler[string] {
	b.Helper()
	q := scheduler.New(scheduler.Config[string]{Name: name, Clock: clk})
	b.Cleanup(q.ShutDown)
	if _, err := otelqueue.Instrument(q, otelqueue.WithMeterProvider(mp), otelqueue.WithTracerProvider(tracenoop.NewTracerProvider())); err != nil {
		b.Fatal(err)
	}
	return q
}

// nativeProcess runs key through q on the fake clock fc: the key waits
// wait, then its processing takes work.
func nativeProcess(q *scheduler.Scheduler[string], fc *testingclock.FakeClock, key string, wait, work time.Duration) {
	q.Add(key)
	fc.Step(wait)
	k, _ := q.Get()
	fc.Step(work)
	q.Done(k)
}
