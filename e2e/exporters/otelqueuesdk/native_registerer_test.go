package otelqueuesdk_test

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/promhttp"
	dto "github.com/prometheus/client_model/go"
	otelprom "go.opentelemetry.io/otel/exporters/prometheus"
	sdkmetric "go.opentelemetry.io/otel/sdk/metric"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/types/known/timestamppb"
	testingclock "k8s.io/utils/clock/testing"

	"github.com/otelqueue/otelqueue/internal/testutil"
	"github.com/otelqueue/otelqueue/otelqueuesdk"
	"github.com/otelqueue/otelqueue/scheduler"
)

// recordingRegisterer records the collectors registered through it.
type recordingRegisterer struct {
	prometheus.Registerer

	mu         sync.Mutex
	registered []prometheus.Collector
}

func (r *recordingRegisterer) Register(c prometheus.Collector) error {
	r.mu.Lock()
	r.registered = append(r.registered, c)
	r.mu.Unlock()
	return r.Registerer.Register(c)
}

func (r *recordingRegisterer) last(t testing.TB) prometheus.Collector {
	t.Helper()
	r.mu.Lock()
	defer r.mu.Unlock()
	if len(r.registered) == 0 {
		t.Fatal("nothing was registered")
	}
	return r.registered[len(r.registered)-1]
}

// registererExporter returns an OpenTelemetry Prometheus exporter that
// registers through NativeHistogramRegisterer(reg), without scope labels and
// target_info unless opts say otherwise, the Registerer it was given, and
// the collector it registered.
func registererExporter(t testing.TB, reg prometheus.Registerer, opts ...otelprom.Option) (*otelprom.Exporter, prometheus.Registerer, prometheus.Collector) {
	t.Helper()
	nr := otelqueuesdk.NativeHistogramRegisterer(reg)
	rec := &recordingRegisterer{Registerer: nr}
	opts = append([]otelprom.Option{otelprom.WithRegisterer(rec), otelprom.WithoutScopeInfo(), otelprom.WithoutTargetInfo()}, opts...)
	exp, err := otelprom.New(opts...)
	if err != nil {
		t.Fatal(err)
	}
	return exp, nr, rec.last(t)
}

// nativeMeterProvider returns a MeterProvider with the NativeHistograms
// views and readers.
func nativeMeterProvider(t testing.TB, readers ...sdkmetric.Reader) *sdkmetric.MeterProvider {
	t.Helper()
	opts := []sdkmetric.Option{sdkmetric.WithView(otelqueuesdk.NativeHistograms(0)...)}
	for _, r := range readers {
		opts = append(opts, sdkmetric.WithReader(r))
	}
	mp := sdkmetric.NewMeterProvider(opts...)
	t.Cleanup(func() { _ = mp.Shutdown(context.Background()) })
	return mp
}

// controllerHistogram returns a client_golang histogram set up as
// controller-runtime's, with classic and native buckets, and some
// observations.
func controllerHistogram() prometheus.Histogram {
	h := prometheus.NewHistogram(prometheus.HistogramOpts{
		Name:                            "controller_runtime_reconcile_time_seconds",
		Help:                            "Length of time per reconciliation per controller",
		ConstLabels:                     prometheus.Labels{"controller": "orders"},
		Buckets:                         []float64{0.005, 0.01, 0.1, 1, 10},
		NativeHistogramBucketFactor:     1.1,
		NativeHistogramMaxBucketNumber:  100,
		NativeHistogramMinResetDuration: time.Hour,
	})
	for _, v := range []float64{0.002, 0.03, 0.4, 0.4, 7} {
		h.Observe(v)
	}
	return h
}

// processSome runs a few keys through q on fc.
func processSome(q *scheduler.Scheduler[string], fc *testingclock.FakeClock) []time.Duration {
	waits := []time.Duration{0, 40 * time.Microsecond, 3 * time.Millisecond, 250 * time.Millisecond, 2 * time.Second, 90 * time.Second}
	for i, d := range waits {
		nativeProcess(q, fc, fmt.Sprint("key-", i), d, d/3+time.Millisecond)
	}
	return waits
}

// withoutCreated returns a copy of mfs whose histograms have no created
// timestamp: each reader's aggregations start at their own instant.
func withoutCreated(mfs []*dto.MetricFamily) []*dto.MetricFamily {
	out := cloneFamilies(mfs)
	for _, mf := range out {
		for _, m := range mf.Metric {
			if m.Histogram != nil {
				m.Histogram.CreatedTimestamp = nil
			}
		}
	}
	return out
}

// TestNativeHistogramRegisterer registers an exporter through
// NativeHistogramRegisterer into a registry standing for controller-runtime's
// metrics.Registry, which also holds a client_golang histogram, and gathers
// that registry as controller-runtime's metrics server does. A second
// exporter on the same MeterProvider, registered with a registry of its own
// and gathered through MergeNativeHistograms, serves the reference: the two
// must be the same families (save the created timestamps of the native
// streams, which each reader sets at its own instant).
func TestNativeHistogramRegisterer(t *testing.T) {
	for _, tc := range []struct {
		name string
		opts []otelprom.Option // besides WithRegisterer
	}{
		{"without scope labels and target_info", []otelprom.Option{otelprom.WithoutScopeInfo(), otelprom.WithoutTargetInfo()}},
		{"exporter defaults", nil}, // scope labels and target_info
	} {
		t.Run(tc.name, func(t *testing.T) {
			reg := prometheus.NewRegistry()
			cg := controllerHistogram()
			reg.MustRegister(cg)
			exp, err := otelprom.New(append(slices.Clone(tc.opts), otelprom.WithRegisterer(otelqueuesdk.NativeHistogramRegisterer(reg)))...)
			if err != nil {
				t.Fatal(err)
			}
			refReg := prometheus.NewRegistry()
			ref, err := otelprom.New(append(slices.Clone(tc.opts), otelprom.WithRegisterer(refReg))...)
			if err != nil {
				t.Fatal(err)
			}
			mp := nativeMeterProvider(t, exp, ref)
			fc := testingclock.NewFakeClock(time.Unix(1e9, 0))
			processSome(nativeQueue(t, mp, nil, fc, "orders"), fc)
			processSome(nativeQueue(t, mp, nil, fc, "payments"), fc)

			mfs, err := reg.Gather()
			if err != nil {
				t.Fatalf("Gather: %v", err)
			}
			got := map[string]*dto.MetricFamily{}
			var names []string
			for _, mf := range mfs {
				got[mf.GetName()] = mf
				names = append(names, mf.GetName())
				if strings.Contains(mf.GetName(), "_native") {
					t.Errorf("family %s served", mf.GetName())
				}
			}
			for _, name := range []string{queueFamily, workFamily} {
				mf, ok := got[name]
				if !ok {
					t.Fatalf("no family %s among %q", name, names)
				}
				if mf.GetType() != dto.MetricType_HISTOGRAM || len(mf.Metric) != 2 {
					t.Fatalf("%s: want two histograms (one per queue), got %v", name, mf)
				}
				for _, m := range mf.Metric {
					h := m.Histogram
					if h.GetSampleCount() != 6 || len(h.Bucket) == 0 || h.GetSchema() != 3 || len(h.PositiveSpan) == 0 {
						t.Errorf("%s %v: want classic and native buckets of 6 observations: %v", name, labelMap(m), h)
					}
					if zeros := h.GetZeroCount(); zeros != map[string]uint64{queueFamily: 1, workFamily: 0}[name] {
						t.Errorf("%s %v: %d zeros", name, labelMap(m), zeros)
					}
				}
			}

			// The client_golang histogram is served as it is.
			var want dto.Metric
			if err := cg.Write(&want); err != nil {
				t.Fatal(err)
			}
			if mf := got["controller_runtime_reconcile_time_seconds"]; mf == nil || len(mf.Metric) != 1 || !proto.Equal(mf.Metric[0], &want) {
				t.Errorf("client_golang's histogram served as %v, want %v", mf, &want)
			} else if want.Histogram.Schema == nil || len(want.Histogram.Bucket) == 0 {
				t.Errorf("client_golang's histogram has not both kinds of buckets: %v", &want)
			}

			// The same families as MergeNativeHistograms serves.
			wantMfs, err := otelqueuesdk.MergeNativeHistograms(refReg).Gather()
			if err != nil {
				t.Fatal(err)
			}
			if tc.opts == nil && !slices.ContainsFunc(wantMfs, func(mf *dto.MetricFamily) bool { return mf.GetName() == "target_info" }) {
				t.Fatalf("the exporter's defaults serve no target_info")
			}
			wantMfs = withoutCreated(wantMfs)
			gotMfs := withoutCreated(slices.DeleteFunc(slices.Clone(mfs), func(mf *dto.MetricFamily) bool {
				return mf.GetName() == "controller_runtime_reconcile_time_seconds"
			}))
			if len(gotMfs) != len(wantMfs) {
				t.Fatalf("%d families besides client_golang's, MergeNativeHistograms serves %d", len(gotMfs), len(wantMfs))
			}
			for i := range gotMfs {
				if !proto.Equal(gotMfs[i], wantMfs[i]) {
					t.Errorf("family %s:\n%v\nMergeNativeHistograms:\n%v", gotMfs[i].GetName(), gotMfs[i], wantMfs[i])
				}
			}
		})
	}
}

// TestNativeHistogramRegistererExposition serves the registry through
// promhttp as controller-runtime's metrics server does: over the protobuf
// exposition one family has both kinds of buckets, beside client_golang's
// native histogram; the text has no twin.
func TestNativeHistogramRegistererExposition(t *testing.T) {
	reg := prometheus.NewRegistry()
	reg.MustRegister(controllerHistogram())
	exp, _, _ := registererExporter(t, reg)
	mp := nativeMeterProvider(t, exp)
	fc := testingclock.NewFakeClock(time.Unix(1e9, 0))
	processSome(nativeQueue(t, mp, nil, fc, "orders"), fc)

	srv := httptest.NewServer(promhttp.HandlerFor(reg, promhttp.HandlerOpts{ErrorHandling: promhttp.HTTPErrorOnError, EnableOpenMetrics: true}))
	t.Cleanup(srv.Close)
	get := func(t *testing.T, accept string) *http.Response { return testutil.Scrape(t, srv.URL, accept) }

	t.Run("protobuf", func(t *testing.T) {
		mfs := testutil.ScrapeProtobuf(t, srv.URL)
		for name := range mfs {
			if strings.Contains(name, "_native") {
				t.Errorf("family %s served", name)
			}
		}
		for _, name := range []string{queueFamily, workFamily, "controller_runtime_reconcile_time_seconds"} {
			_, h := oneHistogram(t, mfs, name)
			if len(h.Bucket) == 0 || h.GetSchema() != 3 || len(h.PositiveSpan) == 0 {
				t.Errorf("%s: not both kinds of buckets: %d classic, schema %v, spans %v", name, len(h.Bucket), h.Schema, h.PositiveSpan)
			}
		}
	})

	t.Run("OpenMetrics", func(t *testing.T) {
		body, err := io.ReadAll(get(t, "application/openmetrics-text;version=1.0.0").Body)
		if err != nil {
			t.Fatal(err)
		}
		text := string(body)
		if strings.Contains(text, "_native") {
			t.Errorf("a twin is served:\n%s", text)
		}
		for _, want := range []string{
			`workqueue_queue_duration_seconds_bucket{controller="orders",name="orders",le="0.25"} 4`,
			`workqueue_queue_duration_seconds_count{controller="orders",name="orders"} 6`,
			`controller_runtime_reconcile_time_seconds_count{controller="orders"} 5`,
		} {
			if !strings.Contains(text, want+"\n") {
				t.Errorf("no line %q in\n%s", want, text)
			}
		}
	})
}

// TestNativeHistogramRegistererExemplars checks that the exemplars reach the
// registry: on the classic buckets, and in the native histogram, each one
// pointing to a recorded span.
func TestNativeHistogramRegistererExemplars(t *testing.T) {
	reg := prometheus.NewRegistry()
	exp, _, _ := registererExporter(t, reg)
	mp := nativeMeterProvider(t, exp)
	tp, sr := sampledTracing(t)
	fc := testingclock.NewFakeClock(time.Unix(1e9, 0))
	q := nativeQueue(t, mp, tp, fc, "orders")
	waits := []time.Duration{time.Millisecond, 300 * time.Millisecond, 2 * time.Second, 20 * time.Second}
	for i, d := range waits {
		nativeProcess(q, fc, fmt.Sprint(i), d, 2*d)
	}
	spans := map[string]sdktrace.ReadOnlySpan{}
	for _, s := range sr.Ended() {
		spans[s.SpanContext().SpanID().String()] = s
	}
	mfs := gatherFamilies(t, reg)
	for _, name := range []string{queueFamily, workFamily} {
		_, h := oneHistogram(t, mfs, name)
		exemplars := slices.Clone(h.Exemplars)
		if len(exemplars) != len(waits) {
			t.Errorf("%s: %d native exemplars, want %d", name, len(exemplars), len(waits))
		}
		var bucketExemplars int
		for _, b := range h.Bucket {
			if b.Exemplar != nil {
				bucketExemplars++
				exemplars = append(exemplars, b.Exemplar)
			}
		}
		if bucketExemplars != len(waits) {
			t.Errorf("%s: %d classic bucket exemplars, want %d", name, bucketExemplars, len(waits))
		}
		for _, e := range exemplars {
			ls := map[string]string{}
			for _, lp := range e.Label {
				ls[lp.GetName()] = lp.GetValue()
			}
			if s, ok := spans[ls["span_id"]]; !ok || s.SpanContext().TraceID().String() != ls["trace_id"] || e.Timestamp == nil {
				t.Errorf("%s: exemplar %v is no recorded span, or has no timestamp", name, e)
			}
		}
	}
}

// TestNativeHistogramRegistererUnregister unregisters the exporter's
// collector through the Registerer (a prometheus.Registry cannot unregister
// an unchecked collector), registers it again, and checks that checked
// collectors pass through to the registry.
func TestNativeHistogramRegistererUnregister(t *testing.T) {
	reg := prometheus.NewRegistry()
	cg := controllerHistogram()
	reg.MustRegister(cg)
	exp, nr, c := registererExporter(t, reg)
	mp := nativeMeterProvider(t, exp)
	fc := testingclock.NewFakeClock(time.Unix(1e9, 0))
	processSome(nativeQueue(t, mp, nil, fc, "orders"), fc)

	if plain := prometheus.NewRegistry(); plain.Register(c) != nil || plain.Unregister(c) {
		t.Fatal("a prometheus.Registry unregisters the exporter's collector: is it still unchecked?")
	}
	served := func(t *testing.T) []string {
		t.Helper()
		var names []string
		for name := range gatherFamilies(t, reg) {
			names = append(names, name)
		}
		slices.Sort(names)
		return names
	}
	withExporter := served(t)
	for _, name := range []string{queueFamily, workFamily} {
		if !slices.Contains(withExporter, name) {
			t.Fatalf("no family %s among %q", name, withExporter)
		}
	}
	withoutExporter := []string{"controller_runtime_reconcile_time_seconds"}

	if !nr.Unregister(c) {
		t.Fatal("Unregister of the exporter's collector: false")
	}
	if got := served(t); !slices.Equal(got, withoutExporter) {
		t.Errorf("after Unregister: families %q, want %q", got, withoutExporter)
	}
	if nr.Unregister(c) {
		t.Error("a second Unregister: true")
	}
	if nr.Unregister(prometheus.NewCounter(prometheus.CounterOpts{Name: "never_registered"})) {
		t.Error("Unregister of a collector never registered: true")
	}

	// Registered again: served once (Gather fails on duplicates).
	if err := nr.Register(c); err != nil {
		t.Fatal(err)
	}
	mfs := gatherFamilies(t, reg)
	if got := served(t); !slices.Equal(got, withExporter) {
		t.Errorf("registered again: families %q, want %q", got, withExporter)
	}
	if _, h := oneHistogram(t, mfs, queueFamily); h.GetSampleCount() != 6 || h.Schema == nil {
		t.Errorf("registered again: %v", h)
	}

	// A checked collector goes to reg as it is.
	other := prometheus.NewCounter(prometheus.CounterOpts{Name: "other_total", Help: "other"})
	if err := nr.Register(other); err != nil {
		t.Fatal(err)
	}
	var are prometheus.AlreadyRegisteredError
	if err := reg.Register(other); !errors.As(err, &are) || are.ExistingCollector != other {
		t.Errorf("reg.Register of a counter registered through the Registerer: %v, want AlreadyRegisteredError", err)
	}
	if !nr.Unregister(other) {
		t.Error("Unregister of a checked collector: false")
	}
	if err := reg.Register(other); err != nil {
		t.Errorf("the checked collector is still in reg: %v", err)
	}
}

// TestNativeHistogramRegistererTwice registers the exporter's collector a
// second time: a prometheus.Registry would accept it and then fail every
// Gather; the Registerer returns an AlreadyRegisteredError, and keeps
// serving it once.
func TestNativeHistogramRegistererTwice(t *testing.T) {
	reg := prometheus.NewRegistry()
	exp, nr, c := registererExporter(t, reg)
	mp := nativeMeterProvider(t, exp)
	fc := testingclock.NewFakeClock(time.Unix(1e9, 0))
	processSome(nativeQueue(t, mp, nil, fc, "orders"), fc)

	plain := prometheus.NewRegistry()
	for range 2 {
		if err := plain.Register(c); err != nil {
			t.Fatalf("a prometheus.Registry refuses the exporter's collector twice (%v): is it still unchecked?", err)
		}
	}
	if _, err := plain.Gather(); err == nil || !strings.Contains(err.Error(), "collected before") {
		t.Fatalf("a Registry with the collector twice gathers with error %v", err)
	}

	var are prometheus.AlreadyRegisteredError
	if err := nr.Register(c); !errors.As(err, &are) || are.ExistingCollector != c || are.NewCollector != c {
		t.Errorf("second Register: %v, want an AlreadyRegisteredError naming the collector", err)
	}
	func() {
		defer func() {
			if err, _ := recover().(error); !errors.As(err, &are) {
				t.Errorf("MustRegister a second time panicked with %v, want an AlreadyRegisteredError", err)
			}
		}()
		nr.MustRegister(c)
	}()
	if _, h := oneHistogram(t, gatherFamilies(t, reg), queueFamily); h.GetSampleCount() != 6 || h.Schema == nil {
		t.Errorf("served %v", h)
	}

	// Another exporter through the same Registerer is another collector.
	exp2, err := otelprom.New(otelprom.WithRegisterer(nr), otelprom.WithoutScopeInfo(), otelprom.WithoutTargetInfo())
	if err != nil {
		t.Fatal(err)
	}
	mp2 := sdkmetric.NewMeterProvider(sdkmetric.WithReader(exp2))
	t.Cleanup(func() { _ = mp2.Shutdown(context.Background()) })
	counter, err := mp2.Meter("other").Int64Counter("things")
	if err != nil {
		t.Fatal(err)
	}
	counter.Add(context.Background(), 3)
	mfs := gatherFamilies(t, reg)
	if mf := mfs["things_total"]; mf == nil || mf.Metric[0].Counter.GetValue() != 3 {
		t.Errorf("the second exporter's counter: %v", mf)
	}
	if _, ok := mfs[queueFamily]; !ok {
		t.Errorf("the first exporter's families are gone")
	}

	// A checked collector twice: reg's own error.
	cg := controllerHistogram()
	if err := nr.Register(cg); err != nil {
		t.Fatal(err)
	}
	if err := nr.Register(cg); !errors.As(err, &are) || are.ExistingCollector != cg {
		t.Errorf("a checked collector twice: %v, want reg's AlreadyRegisteredError", err)
	}
}

// TestNativeHistogramRegistererNil checks NativeHistogramRegisterer(nil) and
// Register(nil): errors, no panic, and no registration with the default
// registry.
func TestNativeHistogramRegistererNil(t *testing.T) {
	nr := otelqueuesdk.NativeHistogramRegisterer(nil)
	if nr == nil {
		t.Fatal("nil Registerer")
	}
	counter := prometheus.NewCounter(prometheus.CounterOpts{Name: "a_total", Help: "a"})
	if err := nr.Register(counter); err == nil || !strings.Contains(err.Error(), "nil prometheus.Registerer") {
		t.Errorf("Register: %v, want an error about the nil Registerer", err)
	}
	_, err := otelprom.New(otelprom.WithRegisterer(nr))
	if err == nil || !strings.Contains(err.Error(), "NativeHistogramRegisterer") {
		t.Errorf("otelprom.New: %v, want the Registerer's error", err)
	}
	if nr.Unregister(counter) {
		t.Error("Unregister: true")
	}
	nr.MustRegister() // nothing to register: no panic
	func() {
		defer func() {
			if r := recover(); r == nil {
				t.Error("MustRegister did not panic")
			}
		}()
		nr.MustRegister(counter)
	}()
	if prometheus.DefaultRegisterer.Unregister(counter) {
		t.Error("the counter went to the default registry")
	}

	if err := otelqueuesdk.NativeHistogramRegisterer(prometheus.NewRegistry()).Register(nil); err == nil {
		t.Error("Register(nil): no error")
	}
}

// fullMetric is a prometheus.Metric whose Write gives every field of a
// dto.Metric, whatever the combination.
type fullMetric struct {
	desc *prometheus.Desc
	m    *dto.Metric
}

func (f fullMetric) Desc() *prometheus.Desc { return f.desc }
func (f fullMetric) Write(out *dto.Metric) error {
	proto.Merge(out, f.m)
	return nil
}

// collectorFunc is an unchecked collector.
type collectorFunc func(chan<- prometheus.Metric)

func (collectorFunc) Describe(chan<- *prometheus.Desc)      {}
func (f collectorFunc) Collect(ch chan<- prometheus.Metric) { f(ch) }

// TestNativeHistogramRegistererMetrics checks the metrics the Registerer's
// collector sends: a metric with every field of dto.Metric set comes out of
// reg's Gather as it went in (the native fields, exemplars and created
// timestamp of the histogram among them), the Desc of each metric carries
// its family's name, help and unit and its label names, and an invalid
// metric of the wrapped collector is reported by reg's Gather as it would be
// without the Registerer.
func TestNativeHistogramRegistererMetrics(t *testing.T) {
	ts := timestamppb.New(time.Unix(1e9, 5))
	exemplar := &dto.Exemplar{Label: labels("trace_id", "0a0b"), Value: new(0.3), Timestamp: ts}
	full := &dto.Metric{
		Label:   labels("a", "1", "b", "2"),
		Gauge:   &dto.Gauge{Value: new(1.5)},
		Counter: &dto.Counter{Value: new(2.0), Exemplar: exemplar, CreatedTimestamp: ts},
		Summary: &dto.Summary{SampleCount: new(uint64(1)), SampleSum: new(0.5), CreatedTimestamp: ts,
			Quantile: []*dto.Quantile{{Quantile: new(0.5), Value: new(0.5)}}},
		Untyped: &dto.Untyped{Value: new(3.0)},
		Histogram: &dto.Histogram{
			SampleCount: new(uint64(3)), SampleSum: new(1.5), CreatedTimestamp: ts,
			Bucket:        []*dto.Bucket{{UpperBound: new(1.0), CumulativeCount: new(uint64(3)), Exemplar: exemplar}},
			Schema:        new(int32(3)),
			ZeroThreshold: new(prometheus.DefNativeHistogramZeroThreshold), ZeroCount: new(uint64(1)),
			PositiveSpan:  []*dto.BucketSpan{{Offset: new(int32(-2)), Length: new(uint32(2))}},
			PositiveDelta: []int64{1, 0},
			Exemplars:     []*dto.Exemplar{exemplar},
		},
		TimestampMs: new(int64(1234)),
	}
	fields := full.ProtoReflect().Descriptor().Fields()
	for i := range fields.Len() {
		if !full.ProtoReflect().Has(fields.Get(i)) {
			t.Fatalf("the test metric does not set dto.Metric.%s", fields.Get(i).Name())
		}
	}
	invalid := errors.New("an invalid metric")
	collector := collectorFunc(func(ch chan<- prometheus.Metric) {
		ch <- fullMetric{prometheus.V2.NewDesc("full_seconds", "every field", prometheus.UnconstrainedLabels{"a", "b"}, nil, prometheus.WithUnit("seconds")), full}
		ch <- prometheus.MustNewConstMetric(prometheus.NewDesc("plain", "plain help", []string{"x"}, nil), prometheus.GaugeValue, 1, "y")
		ch <- prometheus.MustNewConstMetric(prometheus.NewDesc("plain", "plain help", nil, nil), prometheus.GaugeValue, 2)
		ch <- prometheus.NewInvalidMetric(prometheus.NewInvalidDesc(invalid), invalid)
	})

	// What the Registerer registers into reg, and what it collects.
	inner := &recordingRegisterer{Registerer: prometheus.NewRegistry()}
	nr := otelqueuesdk.NativeHistogramRegisterer(inner)
	if err := nr.Register(collector); err != nil {
		t.Fatal(err)
	}
	ch := make(chan prometheus.Metric, 16)
	inner.last(t).Collect(ch)
	close(ch)
	var collected []prometheus.Metric
	for m := range ch {
		collected = append(collected, m)
	}
	if len(collected) != 4 {
		t.Fatalf("collected %d metrics, want 4", len(collected))
	}
	if err := collected[0].Write(&dto.Metric{}); !errors.Is(err, invalid) {
		t.Errorf("first metric: Write gives %v, want the invalid metric's error", err)
	}
	var descs []string
	for _, m := range collected[1:] {
		descs = append(descs, m.Desc().String())
	}
	wantDescs := []string{
		prometheus.V2.NewDesc("full_seconds", "every field", prometheus.UnconstrainedLabels{"a", "b"}, nil, prometheus.WithUnit("seconds")).String(),
		prometheus.NewDesc("plain", "plain help", nil, nil).String(),
		prometheus.NewDesc("plain", "plain help", []string{"x"}, nil).String(),
	}
	if !slices.Equal(descs, wantDescs) {
		t.Errorf("descriptors\n%q\nwant\n%q", descs, wantDescs)
	}

	// What reg's Gather makes of it, against a registry holding the
	// collector itself.
	reg := inner.Registerer.(*prometheus.Registry)
	gotMfs, gotErr := reg.Gather()
	direct := prometheus.NewRegistry()
	direct.MustRegister(collector)
	wantMfs, wantErr := direct.Gather()
	if gotErr == nil || !errors.Is(gotErr, invalid) || wantErr == nil || !errors.Is(wantErr, invalid) {
		t.Errorf("Gather errors %v, directly %v; want the invalid metric's", gotErr, wantErr)
	}
	if len(gotMfs) != 2 || len(wantMfs) != 2 {
		t.Fatalf("families %v, directly %v", gotMfs, wantMfs)
	}
	for i := range gotMfs {
		if !proto.Equal(gotMfs[i], wantMfs[i]) {
			t.Errorf("family %d:\n%v\ndirectly:\n%v", i, gotMfs[i], wantMfs[i])
		}
	}
	if mf := gotMfs[0]; mf.GetName() != "full_seconds" || mf.GetUnit() != "seconds" || len(mf.Metric) != 1 || !proto.Equal(mf.Metric[0], full) {
		t.Errorf("full_seconds served as %v, want %v", mf, full)
	}
}

// TestNativeHistogramRegistererConcurrent gathers the registry from several
// goroutines while keys are processed and the exporter's collector is
// unregistered and registered again: no gather fails, none serves a twin or
// a histogram twice, and native buckets always add up to the count.
func TestNativeHistogramRegistererConcurrent(t *testing.T) {
	reg := prometheus.NewRegistry()
	reg.MustRegister(controllerHistogram())
	exp, nr, c := registererExporter(t, reg)
	mp := nativeMeterProvider(t, exp)
	queues := []*scheduler.Scheduler[string]{
		nativeQueue(t, mp, nil, nil, "q1"), nativeQueue(t, mp, nil, nil, "q2"),
	}
	var (
		stop      atomic.Bool
		processed atomic.Int64
		wg        sync.WaitGroup
	)
	// One key through each queue first: a gather that caught a queue's
	// first measurement between the SDK's collection of the classic
	// stream and of its twin would serve a native-only histogram (the
	// merge's rule for a twin metric without a classic one), which
	// checkMerged rightly does not expect of the steady state.
	for _, q := range queues {
		q.Add("warm-up")
		k, _ := q.Get()
		q.Done(k)
		processed.Add(1)
	}
	for w := range 4 {
		wg.Go(func() {
			q := queues[w%len(queues)]
			for i := 0; !stop.Load(); i++ {
				q.Add(fmt.Sprintf("%d-%d", w, i))
				k, _ := q.Get()
				q.Done(k)
				processed.Add(1)
			}
		})
	}
	type gathered struct {
		mfs []*dto.MetricFamily
		err error
	}
	results := make(chan gathered, 64)
	var (
		gatherers sync.WaitGroup
		toggled   atomic.Bool
	)
	for range 4 {
		gatherers.Go(func() {
			// Through the toggling, then 20 more.
			for after := 0; after < 20; {
				done := toggled.Load()
				mfs, err := reg.Gather()
				results <- gathered{mfs, err}
				if done {
					after++
				}
			}
		})
	}
	gatherers.Go(func() {
		defer toggled.Store(true)
		for range 10 {
			if !nr.Unregister(c) {
				t.Error("Unregister: false")
			}
			time.Sleep(time.Millisecond)
			if err := nr.Register(c); err != nil {
				t.Error(err)
			}
			time.Sleep(time.Millisecond)
		}
	})
	go func() {
		gatherers.Wait()
		close(results)
	}()
	var withQueues, native, classicOnly int
	for r := range results {
		if r.err != nil {
			t.Errorf("Gather: %v", r.err)
			continue
		}
		if slices.ContainsFunc(r.mfs, func(mf *dto.MetricFamily) bool { return mf.GetName() == queueFamily }) {
			withQueues++
		}
		n, co := checkMerged(t, r.mfs)
		native += n
		classicOnly += co
	}
	stop.Store(true)
	wg.Wait()
	t.Logf("%d keys processed; %d gathers with the queues' families; %d histograms with native buckets, %d classic only",
		processed.Load(), withQueues, native, classicOnly)
	if withQueues < 4*20 {
		t.Errorf("%d gathers served the queues' histograms, want at least the %d after the toggling", withQueues, 4*20)
	}

	// At rest: registered, merged, every key counted once.
	mfs := gatherFamilies(t, reg)
	mf := mfs[queueFamily]
	if mf == nil || len(mf.Metric) != len(queues) {
		t.Fatalf("at rest: %v", mf)
	}
	var total uint64
	for _, m := range mf.Metric {
		if m.Histogram.Schema == nil {
			t.Errorf("%v at rest: classic only", labelMap(m))
		}
		total += m.Histogram.GetSampleCount()
	}
	if total != uint64(processed.Load()) {
		t.Errorf("queue waits counted %d, keys processed %d", total, processed.Load())
	}
}
