package otelqueuesdk_test

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"io"
	"math"
	"net/http"
	"net/http/httptest"
	"regexp"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/otelqueue/otelqueue/internal/semconv"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/promhttp"
	dto "github.com/prometheus/client_model/go"
	otelprom "go.opentelemetry.io/otel/exporters/prometheus"
	"go.opentelemetry.io/otel/metric"
	"go.opentelemetry.io/otel/sdk/instrumentation"
	sdkmetric "go.opentelemetry.io/otel/sdk/metric"
	"go.opentelemetry.io/otel/sdk/metric/metricdata"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/sdk/trace/tracetest"
	"go.opentelemetry.io/otel/trace"
	tracenoop "go.opentelemetry.io/otel/trace/noop"
	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/types/known/timestamppb"
	"k8s.io/utils/clock"
	testingclock "k8s.io/utils/clock/testing"

	"github.com/otelqueue/otelqueue/internal/testutil"
	"github.com/otelqueue/otelqueue/otelqueue"
	"github.com/otelqueue/otelqueue/otelqueuesdk"
	"github.com/otelqueue/otelqueue/scheduler"
)

const (
	queueFamily = "workqueue_queue_duration_seconds"
	workFamily  = "workqueue_work_duration_seconds"
)

// nativeProm returns a MeterProvider with the NativeHistograms views whose
// reader is an OpenTelemetry Prometheus exporter registered with a registry
// of its own, without scope labels and target_info, as an application that
// serves controller-runtime's series sets it up.
func nativeProm(t testing.TB, opts ...otelprom.Option) (*sdkmetric.MeterProvider, *prometheus.Registry) {
	t.Helper()
	return nativePromSize(t, 0, opts...)
}

// nativePromSize is nativeProm with NativeHistograms(maxSize).
func nativePromSize(t testing.TB, maxSize int32, opts ...otelprom.Option) (*sdkmetric.MeterProvider, *prometheus.Registry) {
	t.Helper()
	reg := prometheus.NewRegistry()
	opts = append([]otelprom.Option{otelprom.WithRegisterer(reg), otelprom.WithoutScopeInfo(), otelprom.WithoutTargetInfo()}, opts...)
	exp, err := otelprom.New(opts...)
	if err != nil {
		t.Fatal(err)
	}
	mp := sdkmetric.NewMeterProvider(sdkmetric.WithReader(exp), sdkmetric.WithView(otelqueuesdk.NativeHistograms(maxSize)...))
	t.Cleanup(func() { _ = mp.Shutdown(context.Background()) })
	return mp, reg
}

// nativeQueue returns a scheduler called name on clk (the real clock when
// nil), instrumented with mp and tp (a no-op TracerProvider when nil).
func nativeQueue(t testing.TB, mp metric.MeterProvider, tp trace.TracerProvider, clk clock.WithTicker, name string, opts ...otelqueue.Option) *scheduler.Scheduler[string] {
	t.Helper()
	if tp == nil {
		tp = tracenoop.NewTracerProvider()
	}
	q := scheduler.New(scheduler.Config[string]{Name: name, Clock: clk})
	t.Cleanup(q.ShutDown)
	opts = append([]otelqueue.Option{otelqueue.WithMeterProvider(mp), otelqueue.WithTracerProvider(tp)}, opts...)
	if _, err := otelqueue.Instrument(q, opts...); err != nil {
		t.Fatal(err)
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

// sampledTracing returns a TracerProvider that samples every span and keeps
// the ended ones in the returned recorder.
func sampledTracing(t testing.TB) (*sdktrace.TracerProvider, *tracetest.SpanRecorder) {
	sr := tracetest.NewSpanRecorder()
	tp := sdktrace.NewTracerProvider(sdktrace.WithSampler(sdktrace.AlwaysSample()), sdktrace.WithSpanProcessor(sr))
	t.Cleanup(func() { _ = tp.Shutdown(context.Background()) })
	return tp, sr
}

// gatherFamilies gathers g, failing the test on an error, by family name.
func gatherFamilies(t testing.TB, g prometheus.Gatherer) map[string]*dto.MetricFamily {
	t.Helper()
	mfs, err := g.Gather()
	if err != nil {
		t.Fatalf("Gather: %v", err)
	}
	out := make(map[string]*dto.MetricFamily, len(mfs))
	for _, mf := range mfs {
		out[mf.GetName()] = mf
	}
	return out
}

// oneHistogram returns the histogram of the single metric of family name.
func oneHistogram(t testing.TB, mfs map[string]*dto.MetricFamily, name string) (*dto.Metric, *dto.Histogram) {
	t.Helper()
	mf, ok := mfs[name]
	if !ok {
		t.Fatalf("no family %s among %v", name, slices.Sorted(func(yield func(string) bool) {
			for n := range mfs {
				if !yield(n) {
					return
				}
			}
		}))
	}
	if mf.GetType() != dto.MetricType_HISTOGRAM || len(mf.Metric) != 1 || mf.Metric[0].Histogram == nil {
		t.Fatalf("%s: want one histogram metric, got %v", name, mf)
	}
	return mf.Metric[0], mf.Metric[0].Histogram
}

// nativeBuckets decodes the positive native buckets of h: Prometheus bucket
// index to count, populated buckets only.
func nativeBuckets(t testing.TB, spans []*dto.BucketSpan, deltas []int64) map[int32]int64 {
	t.Helper()
	out := map[int32]int64{}
	var idx int32
	var count int64
	k := 0
	for n, s := range spans {
		if n == 0 {
			idx = s.GetOffset()
		} else {
			idx += s.GetOffset()
		}
		for range s.GetLength() {
			if k == len(deltas) {
				t.Fatalf("spans %v hold more buckets than the %d deltas", spans, len(deltas))
			}
			count += deltas[k]
			k++
			if count < 0 {
				t.Fatalf("negative bucket count at index %d", idx)
			}
			if count > 0 {
				out[idx] = count
			}
			idx++
		}
	}
	if k != len(deltas) {
		t.Fatalf("spans %v hold %d buckets, %d deltas", spans, k, len(deltas))
	}
	return out
}

func spanPairs(spans []*dto.BucketSpan) [][2]int64 {
	out := make([][2]int64, len(spans))
	for i, s := range spans {
		out[i] = [2]int64{int64(s.GetOffset()), int64(s.GetLength())}
	}
	return out
}

// labelMap returns the labels of m by name.
func labelMap(m *dto.Metric) map[string]string {
	out := map[string]string{}
	for _, lp := range m.Label {
		out[lp.GetName()] = lp.GetValue()
	}
	return out
}

// TestNativeHistogramsMatchClientGolang records the same waits and work
// durations through an otelqueue-instrumented scheduler (NativeHistograms
// views, the OpenTelemetry Prometheus exporter, MergeNativeHistograms) and
// through a client_golang histogram set up as controller-runtime's (classic
// DefaultBuckets, NativeHistogramBucketFactor 1.1), and checks that both
// serve the same histograms: count, sum, classic buckets, schema, zero
// bucket, and the native buckets span for span.
//
// With the default maxSize (320, a factor of 2^40 at scale 3) observations
// from tens of µs to 100s stay at scale 3 and the output is client_golang's
// exactly. With maxSize 160 (a factor of 2^20) they do not fit:
// OpenTelemetry's MaxSize bounds the span of bucket indexes, so the SDK
// lowers the scale to 2, while client_golang's NativeHistogramMaxBucketNumber
// counts populated buckets and stays at schema 3. The buckets are then
// client_golang's merged pairwise, which is what Prometheus makes of them
// when it adds up histograms of both schemas.
func TestNativeHistogramsMatchClientGolang(t *testing.T) {
	const us, ms, s = time.Microsecond, time.Millisecond, time.Second
	// An exact zero; values on classic boundaries (0.1, 0.25, 1, 2.5,
	// 100); exact powers of two (0.5, 1, 2, 64), which are native bucket
	// boundaries.
	waits := []time.Duration{0, 150 * us, 400 * us, ms, 3700 * us, 10 * ms, 100 * ms, 250 * ms, 250 * ms,
		500 * ms, s, s, 2 * s, 2500 * ms, 7 * s, 30 * s, 64 * s, 100 * s}
	works := slices.Clone(waits)
	slices.Reverse(works)
	works[len(works)-1] = 160 * us // the work of the last item: not zero
	// From 20µs to 100s: a factor of 5·10^6, about 2^22.3, 179 bucket
	// indexes at scale 3.
	wideWaits := append(slices.Clone(waits), 20*us, 50*us, 75*us)
	wideWorks := append(slices.Clone(works), 30*us, 90*us, 250*ms)

	for _, tc := range []struct {
		name         string
		maxSize      int32 // NativeHistograms' argument
		waits, works []time.Duration
		schema       int32 // of the merged histograms
	}{
		{"within 2^20 at schema 3", 0, waits, works, 3},
		{"20µs to 100s at schema 3", 0, wideWaits, wideWorks, 3},
		{"20µs to 100s with maxSize 160 at schema 2", 160, wideWaits, wideWorks, 2},
		{"within 2^20 with maxSize 160 at schema 3", 160, waits, works, 3},
		// Without MaxScale 3 the SDK would use a finer scale here (the
		// exporter clamps to 8), and so differ from client_golang.
		{"a narrow range", 0, []time.Duration{900 * ms, s, s, 1100 * ms, 1200 * ms},
			[]time.Duration{250 * ms, 260 * ms, 270 * ms, 300 * ms, 310 * ms}, 3},
	} {
		t.Run(tc.name, func(t *testing.T) {
			mp, reg := nativePromSize(t, tc.maxSize)
			fc := testingclock.NewFakeClock(time.Unix(1e9, 0))
			q := nativeQueue(t, mp, nil, fc, "orders")
			for i := range tc.waits {
				nativeProcess(q, fc, fmt.Sprint(i), tc.waits[i], tc.works[i])
			}
			got := gatherFamilies(t, otelqueuesdk.MergeNativeHistograms(reg))
			for name := range got {
				if strings.Contains(name, "native") {
					t.Errorf("family %s served", name)
				}
			}

			// client_golang with the labels otelqueue's metrics carry.
			m, _ := oneHistogram(t, got, queueFamily)
			var labelNames, labelValues []string
			for _, lp := range m.Label {
				labelNames = append(labelNames, lp.GetName())
				labelValues = append(labelValues, lp.GetValue())
			}
			if want := []string{"controller", "name"}; !slices.Equal(labelNames, want) {
				t.Fatalf("labels %q, want %q (controller-runtime's)", labelNames, want)
			}
			if want := []string{"orders", "orders"}; !slices.Equal(labelValues, want) {
				t.Fatalf("label values %q, want %q", labelValues, want)
			}
			cgReg := prometheus.NewRegistry()
			cg := map[string]*prometheus.HistogramVec{}
			for _, name := range []string{queueFamily, workFamily} {
				cg[name] = prometheus.NewHistogramVec(prometheus.HistogramOpts{
					Name:                            name,
					Help:                            "client_golang's",
					Buckets:                         otelqueue.DefaultBuckets(),
					NativeHistogramBucketFactor:     1.1,
					NativeHistogramMaxBucketNumber:  160,
					NativeHistogramMinResetDuration: time.Hour,
				}, labelNames)
				cgReg.MustRegister(cg[name])
			}
			for i := range tc.waits {
				cg[queueFamily].WithLabelValues(labelValues...).Observe(tc.waits[i].Seconds())
				cg[workFamily].WithLabelValues(labelValues...).Observe(tc.works[i].Seconds())
			}
			want := gatherFamilies(t, cgReg)

			for _, name := range []string{queueFamily, workFamily} {
				gm, g := oneHistogram(t, got, name)
				wm, w := oneHistogram(t, want, name)
				if !proto.Equal(&dto.Metric{Label: gm.Label}, &dto.Metric{Label: wm.Label}) {
					t.Errorf("%s: labels %v, client_golang %v", name, gm.Label, wm.Label)
				}
				if g.GetSampleCount() != uint64(len(tc.waits)) || g.GetSampleCount() != w.GetSampleCount() {
					t.Errorf("%s: count %d, client_golang %d, recorded %d", name, g.GetSampleCount(), w.GetSampleCount(), len(tc.waits))
				}
				if d := math.Abs(g.GetSampleSum() - w.GetSampleSum()); d > 1e-9*w.GetSampleSum() {
					t.Errorf("%s: sum %v, client_golang %v", name, g.GetSampleSum(), w.GetSampleSum())
				}
				if len(g.Bucket) != len(w.Bucket) {
					t.Errorf("%s: %d classic buckets, client_golang %d", name, len(g.Bucket), len(w.Bucket))
				} else {
					for i := range g.Bucket {
						if g.Bucket[i].GetUpperBound() != w.Bucket[i].GetUpperBound() || g.Bucket[i].GetCumulativeCount() != w.Bucket[i].GetCumulativeCount() {
							t.Errorf("%s: classic bucket %d: le %v count %d, client_golang le %v count %d", name, i,
								g.Bucket[i].GetUpperBound(), g.Bucket[i].GetCumulativeCount(), w.Bucket[i].GetUpperBound(), w.Bucket[i].GetCumulativeCount())
						}
					}
				}
				if w.GetSchema() != 3 {
					t.Fatalf("%s: client_golang picked schema %d for factor 1.1, want 3", name, w.GetSchema())
				}
				if g.Schema == nil || g.GetSchema() != tc.schema {
					t.Errorf("%s: schema %d (set: %t), want %d", name, g.GetSchema(), g.Schema != nil, tc.schema)
				}
				if g.ZeroThreshold == nil || g.GetZeroThreshold() != w.GetZeroThreshold() {
					t.Errorf("%s: zero threshold %v (set: %t), client_golang %v", name, g.GetZeroThreshold(), g.ZeroThreshold != nil, w.GetZeroThreshold())
				}
				if g.GetZeroCount() != w.GetZeroCount() {
					t.Errorf("%s: zero count %d, client_golang %d", name, g.GetZeroCount(), w.GetZeroCount())
				}
				if len(g.NegativeSpan)+len(g.NegativeDelta)+len(w.NegativeSpan)+len(w.NegativeDelta) != 0 {
					t.Errorf("%s: negative buckets %v %v, client_golang %v %v", name, g.NegativeSpan, g.NegativeDelta, w.NegativeSpan, w.NegativeDelta)
				}
				gb := nativeBuckets(t, g.PositiveSpan, g.PositiveDelta)
				wb := nativeBuckets(t, w.PositiveSpan, w.PositiveDelta)
				if tc.schema == w.GetSchema() {
					if gs, ws := spanPairs(g.PositiveSpan), spanPairs(w.PositiveSpan); !slices.Equal(gs, ws) {
						t.Errorf("%s: positive spans %v, client_golang %v", name, gs, ws)
					}
					if !slices.Equal(g.PositiveDelta, w.PositiveDelta) {
						t.Errorf("%s: positive deltas %v, client_golang %v", name, g.PositiveDelta, w.PositiveDelta)
					}
				} else {
					// Bucket i of schema s is bucket ceil(i/2) of schema s-1.
					down := map[int32]int64{}
					for i, n := range wb {
						down[(i+1)>>1] += n
					}
					wb = down
				}
				if fmt.Sprint(gb) != fmt.Sprint(wb) {
					t.Errorf("%s: native buckets %v,\nclient_golang's at schema %d %v", name, gb, tc.schema, wb)
				}
				var total int64
				for _, n := range gb {
					total += n
				}
				if uint64(total)+g.GetZeroCount() != g.GetSampleCount() {
					t.Errorf("%s: native buckets hold %d + %d zeros, count %d", name, total, g.GetZeroCount(), g.GetSampleCount())
				}
			}
		})
	}
}

// TestNativeHistogramsExposition scrapes MergeNativeHistograms through
// promhttp as Prometheus does: over the protobuf exposition one family has
// both kinds of buckets, and the OpenMetrics text carries the classic
// buckets with their exemplars, undisturbed by the native fields.
func TestNativeHistogramsExposition(t *testing.T) {
	mp, reg := nativeProm(t)
	tp, _ := sampledTracing(t)
	fc := testingclock.NewFakeClock(time.Unix(1e9, 0))
	q := nativeQueue(t, mp, tp, fc, "orders")
	for i, d := range []time.Duration{0, 3 * time.Millisecond, 250 * time.Millisecond, 2 * time.Second, 40 * time.Second} {
		nativeProcess(q, fc, fmt.Sprint(i), d, d/2)
	}
	srv := httptest.NewServer(promhttp.HandlerFor(otelqueuesdk.MergeNativeHistograms(reg), promhttp.HandlerOpts{EnableOpenMetrics: true}))
	t.Cleanup(srv.Close)
	get := func(t *testing.T, accept string) *http.Response { return testutil.Scrape(t, srv.URL, accept) }

	t.Run("protobuf", func(t *testing.T) {
		mfs := testutil.ScrapeProtobuf(t, srv.URL) // a family served twice fails it
		for name := range mfs {
			if strings.Contains(name, "_native") {
				t.Errorf("family %s served", name)
			}
		}
		for _, name := range []string{queueFamily, workFamily} {
			_, h := oneHistogram(t, mfs, name)
			if h.GetSampleCount() != 5 || len(h.Bucket) != len(otelqueue.DefaultBuckets()) {
				t.Errorf("%s: count %d, %d classic buckets", name, h.GetSampleCount(), len(h.Bucket))
			}
			if h.Schema == nil || h.GetSchema() != 3 || len(h.PositiveSpan) == 0 || h.GetZeroCount() != 1 {
				t.Errorf("%s: no native buckets: schema %v, spans %v, zero count %d", name, h.Schema, h.PositiveSpan, h.GetZeroCount())
			}
			if len(h.Exemplars) == 0 {
				t.Errorf("%s: no native exemplars", name)
			}
		}
	})

	t.Run("OpenMetrics", func(t *testing.T) {
		resp := get(t, "application/openmetrics-text;version=1.0.0")
		if ct := resp.Header.Get("Content-Type"); !strings.HasPrefix(ct, "application/openmetrics-text") {
			t.Fatalf("served %s", ct)
		}
		body, err := io.ReadAll(resp.Body)
		if err != nil {
			t.Fatal(err)
		}
		text := string(body)
		if strings.Contains(text, "_native") {
			t.Errorf("a twin is served:\n%s", text)
		}
		if !strings.HasSuffix(text, "# EOF\n") {
			t.Errorf("no # EOF at the end")
		}
		exemplarRE := regexp.MustCompile(` # \{[^}]*trace_id="[0-9a-f]{32}"[^}]*\} \S+ \S+$`)
		for _, name := range []string{queueFamily, workFamily} {
			var buckets, exemplars int
			var count string
			sc := bufio.NewScanner(strings.NewReader(text))
			for sc.Scan() {
				line := sc.Text()
				if !strings.HasPrefix(line, name) {
					continue
				}
				rest := strings.TrimPrefix(line, name)
				switch {
				case strings.HasPrefix(rest, `_bucket{controller="orders",name="orders",le="`):
					buckets++
					if exemplarRE.MatchString(line) {
						exemplars++
					}
					if strings.Contains(rest, `le="+Inf"`) {
						count = strings.Fields(rest)[1]
					}
				case strings.HasPrefix(rest, `_sum{controller="orders",name="orders"} `),
					strings.HasPrefix(rest, `_count{controller="orders",name="orders"} 5`):
				default:
					t.Errorf("unexpected line %q", line)
				}
			}
			if buckets != len(otelqueue.DefaultBuckets())+1 || count != "5" {
				t.Errorf("%s: %d bucket lines, +Inf %q; want %d and 5", name, buckets, count, len(otelqueue.DefaultBuckets())+1)
			}
			if exemplars == 0 {
				t.Errorf("%s: no bucket exemplar:\n%s", name, text)
			}
		}
	})
}

// TestNativeHistogramsExemplars checks where the exporter puts exemplars
// (classic histograms: on the buckets; native histograms: in
// Histogram.Exemplars, as client_golang's NewMetricWithExemplars does when it
// sees native fields), and that the merge keeps both: the classic histogram's
// bucket exemplars and the twin's native exemplars, each pointing to the span
// the item's duration was measured in.
func TestNativeHistogramsExemplars(t *testing.T) {
	mp, reg := nativeProm(t)
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

	var raw []*dto.MetricFamily
	g := prometheus.GathererFunc(func() ([]*dto.MetricFamily, error) {
		mfs, err := reg.Gather()
		for _, mf := range mfs {
			raw = append(raw, proto.Clone(mf).(*dto.MetricFamily))
		}
		return mfs, err
	})
	merged := gatherFamilies(t, otelqueuesdk.MergeNativeHistograms(g))
	rawFams := map[string]*dto.MetricFamily{}
	for _, mf := range raw {
		rawFams[mf.GetName()] = mf
	}

	checkExemplar := func(t *testing.T, what string, e *dto.Exemplar, spanName string, scale float64) {
		t.Helper()
		ls := map[string]string{}
		for _, lp := range e.Label {
			ls[lp.GetName()] = lp.GetValue()
		}
		s, ok := spans[ls["span_id"]]
		if !ok || s.SpanContext().TraceID().String() != ls["trace_id"] {
			t.Errorf("%s: exemplar %v is no recorded span", what, ls)
			return
		}
		if s.Name() != spanName {
			t.Errorf("%s: exemplar points to a %q span, want %q", what, s.Name(), spanName)
		}
		if e.Timestamp == nil {
			t.Errorf("%s: exemplar without a timestamp", what)
		}
		if !slices.ContainsFunc(waits, func(d time.Duration) bool { return d.Seconds()*scale == e.GetValue() }) {
			t.Errorf("%s: exemplar value %v was not recorded", what, e.GetValue())
		}
	}
	for _, tc := range []struct {
		name, twin, spanName string
		scale                float64
	}{
		{queueFamily, "workqueue_queue_duration_native_seconds", semconv.SpanQueued, 1},
		{workFamily, "workqueue_work_duration_native_seconds", semconv.SpanReconcile, 2},
	} {
		t.Run(tc.name, func(t *testing.T) {
			// What the exporter serves.
			_, rc := oneHistogram(t, rawFams, tc.name)
			_, rt := oneHistogram(t, rawFams, tc.twin)
			if len(rc.Exemplars) != 0 {
				t.Errorf("classic histogram with native exemplars %v", rc.Exemplars)
			}
			var bucketExemplars []*dto.Exemplar
			for _, b := range rc.Bucket {
				if b.Exemplar != nil {
					bucketExemplars = append(bucketExemplars, b.Exemplar)
				}
			}
			if len(bucketExemplars) != len(waits) {
				t.Errorf("%d classic bucket exemplars, want %d", len(bucketExemplars), len(waits))
			}
			if len(rt.Bucket) != 0 || len(rt.Exemplars) != len(waits) {
				t.Errorf("twin: %d buckets, %d native exemplars; want 0 and %d", len(rt.Bucket), len(rt.Exemplars), len(waits))
			}

			// What the merge serves.
			_, h := oneHistogram(t, merged, tc.name)
			if len(h.Bucket) != len(rc.Bucket) {
				t.Fatalf("%d classic buckets, the exporter's %d", len(h.Bucket), len(rc.Bucket))
			}
			for i, b := range h.Bucket {
				if !proto.Equal(b, rc.Bucket[i]) {
					t.Errorf("bucket %d: %v, the exporter's %v", i, b, rc.Bucket[i])
				}
				if b.Exemplar != nil {
					checkExemplar(t, fmt.Sprintf("bucket le=%v", b.GetUpperBound()), b.Exemplar, tc.spanName, tc.scale)
				}
			}
			if len(h.Exemplars) != len(rt.Exemplars) {
				t.Fatalf("%d native exemplars, the twin's %d", len(h.Exemplars), len(rt.Exemplars))
			}
			for i, e := range h.Exemplars {
				if !proto.Equal(e, rt.Exemplars[i]) {
					t.Errorf("native exemplar %d: %v, the twin's %v", i, e, rt.Exemplars[i])
				}
				checkExemplar(t, "native", e, tc.spanName, tc.scale)
			}
		})
	}
}

// Crafted families for the merge rules.

func labels(kv ...string) []*dto.LabelPair {
	var out []*dto.LabelPair
	for i := 0; i < len(kv); i += 2 {
		out = append(out, &dto.LabelPair{Name: new(kv[i]), Value: new(kv[i+1])})
	}
	return out
}

func classicMetric(ls []*dto.LabelPair, count uint64, sum float64) *dto.Metric {
	return &dto.Metric{Label: ls, Histogram: &dto.Histogram{
		SampleCount: new(count),
		SampleSum:   new(sum),
		Bucket: []*dto.Bucket{
			{UpperBound: new(0.1), CumulativeCount: new(uint64(0))},
			{UpperBound: new(1.0), CumulativeCount: new(count), Exemplar: &dto.Exemplar{
				Label: labels("trace_id", "0102"), Value: new(0.5),
			}},
		},
	}}
}

// nativeMetric is a twin metric as the exporter makes it: count, and the
// positive buckets from index offset on, densely (zero counts included), at
// schema 3 with zero threshold 0.
func nativeMetric(ls []*dto.LabelPair, zeros uint64, offset int32, counts ...int64) *dto.Metric {
	count := zeros
	deltas := make([]int64, len(counts))
	var prev int64
	for i, c := range counts {
		count += uint64(c)
		deltas[i] = c - prev
		prev = c
	}
	return &dto.Metric{Label: ls, Histogram: &dto.Histogram{
		SampleCount:   new(count),
		SampleSum:     new(float64(count)),
		Schema:        new(int32(3)),
		ZeroThreshold: new(0.0),
		ZeroCount:     new(zeros),
		PositiveSpan:  []*dto.BucketSpan{{Offset: new(offset), Length: new(uint32(len(counts)))}},
		PositiveDelta: deltas,
		Exemplars:     []*dto.Exemplar{{Label: labels("trace_id", "0a0b"), Value: new(0.7)}},
	}}
}

func histFamily(name, help string, ms ...*dto.Metric) *dto.MetricFamily {
	return &dto.MetricFamily{Name: new(name), Help: new(help), Type: dto.MetricType_HISTOGRAM.Enum(), Metric: ms}
}

func gaugeFamily(name string) *dto.MetricFamily {
	return &dto.MetricFamily{Name: new(name), Help: new("a gauge"), Type: dto.MetricType_GAUGE.Enum(),
		Metric: []*dto.Metric{{Label: labels("name", "a"), Gauge: &dto.Gauge{Value: new(1.0)}}}}
}

func cloneFamilies(mfs []*dto.MetricFamily) []*dto.MetricFamily {
	out := make([]*dto.MetricFamily, len(mfs))
	for i, mf := range mfs {
		out[i] = proto.Clone(mf).(*dto.MetricFamily)
	}
	return out
}

// mergeCrafted gathers mfs (and err) through MergeNativeHistograms, checks
// the Gatherer contract and that mfs were not modified, and returns the
// result by name.
func mergeCrafted(t *testing.T, mfs []*dto.MetricFamily, innerErr error) (map[string]*dto.MetricFamily, []string, error) {
	t.Helper()
	before := cloneFamilies(mfs)
	out, err := otelqueuesdk.MergeNativeHistograms(prometheus.GathererFunc(func() ([]*dto.MetricFamily, error) {
		return mfs, innerErr
	})).Gather()
	for i := range mfs {
		if !proto.Equal(mfs[i], before[i]) {
			t.Errorf("the merge modified the gathered family %s", mfs[i].GetName())
		}
	}
	var names []string
	byName := map[string]*dto.MetricFamily{}
	for _, mf := range out {
		names = append(names, mf.GetName())
		byName[mf.GetName()] = mf
		if !slices.IsSortedFunc(mf.Metric, func(a, b *dto.Metric) int {
			for i := range min(len(a.Label), len(b.Label)) {
				if c := strings.Compare(a.Label[i].GetValue(), b.Label[i].GetValue()); c != 0 {
					return c
				}
			}
			return len(a.Label) - len(b.Label)
		}) {
			t.Errorf("%s: metrics not sorted by labels", mf.GetName())
		}
	}
	if !slices.IsSorted(names) || len(slices.Compact(slices.Clone(names))) != len(names) {
		t.Errorf("families %q: not sorted, or a name twice", names)
	}
	return byName, names, err
}

// TestMergeNativeHistogramsRules checks the merge on crafted families.
func TestMergeNativeHistogramsRules(t *testing.T) {
	const base, twin = "workqueue_queue_duration_seconds", "workqueue_queue_duration_native_seconds"

	t.Run("merged", func(t *testing.T) {
		bm := classicMetric(labels("controller", "c", "name", "a"), 3, 3)
		bm.Histogram.CreatedTimestamp = nil
		tm := nativeMetric(labels("controller", "c", "name", "a"), 1, -2, 1, 0, 0, 0, 1)
		tm.Histogram.CreatedTimestamp = &timestampOne
		got, names, err := mergeCrafted(t, []*dto.MetricFamily{histFamily(base, "h", bm), histFamily(twin, "h", tm)}, nil)
		if err != nil {
			t.Fatal(err)
		}
		if !slices.Equal(names, []string{base}) {
			t.Fatalf("families %q", names)
		}
		h := got[base].Metric[0].Histogram
		if h.GetSampleCount() != 3 || h.GetSampleSum() != 3 || !proto.Equal(h.Bucket[1], bm.Histogram.Bucket[1]) || len(h.Bucket) != 2 {
			t.Errorf("classic part changed: %v", h)
		}
		// The dense buckets [-2..2] = 1 0 0 0 1 become two spans (a gap of
		// three), as client_golang encodes them.
		if s := spanPairs(h.PositiveSpan); !slices.Equal(s, [][2]int64{{-2, 1}, {3, 1}}) || !slices.Equal(h.PositiveDelta, []int64{1, 0}) {
			t.Errorf("native buckets %v %v", s, h.PositiveDelta)
		}
		if h.GetSchema() != 3 || h.GetZeroCount() != 1 || h.GetZeroThreshold() != prometheus.DefNativeHistogramZeroThreshold {
			t.Errorf("schema %d, zero count %d threshold %v", h.GetSchema(), h.GetZeroCount(), h.GetZeroThreshold())
		}
		if len(h.Exemplars) != 1 || !proto.Equal(h.Exemplars[0], tm.Histogram.Exemplars[0]) {
			t.Errorf("native exemplars %v", h.Exemplars)
		}
		if !proto.Equal(h.CreatedTimestamp, &timestampOne) {
			t.Errorf("created %v: want the twin's when the classic histogram has none", h.CreatedTimestamp)
		}
		// A created timestamp of the classic histogram stays.
		bm.Histogram.CreatedTimestamp = &timestampTwo
		got, _, _ = mergeCrafted(t, []*dto.MetricFamily{histFamily(base, "h", bm), histFamily(twin, "h", tm)}, nil)
		if c := got[base].Metric[0].Histogram.CreatedTimestamp; !proto.Equal(c, &timestampTwo) {
			t.Errorf("created %v, want the classic histogram's", c)
		}
	})

	t.Run("count mismatch serves classic only", func(t *testing.T) {
		bm := classicMetric(labels("controller", "c", "name", "a"), 3, 3)
		tm := nativeMetric(labels("controller", "c", "name", "a"), 0, 0, 4) // a fourth measurement
		got, names, err := mergeCrafted(t, []*dto.MetricFamily{histFamily(base, "h", bm), histFamily(twin, "h", tm)}, nil)
		if err != nil {
			t.Fatal(err)
		}
		if !slices.Equal(names, []string{base}) || !proto.Equal(got[base].Metric[0], bm) {
			t.Errorf("families %q, metric %v; want the classic one unchanged", names, got[base].Metric)
		}
	})

	t.Run("invalid native buckets serve classic only", func(t *testing.T) {
		bm := classicMetric(labels("name", "a"), 3, 3)
		tm := nativeMetric(labels("name", "a"), 0, 0, 1, 2)
		tm.Histogram.PositiveDelta = tm.Histogram.PositiveDelta[:1] // a span longer than its deltas
		got, _, _ := mergeCrafted(t, []*dto.MetricFamily{histFamily(base, "h", bm), histFamily(twin, "h", tm)}, nil)
		if !proto.Equal(got[base].Metric[0], bm) {
			t.Errorf("metric %v; want the classic one unchanged", got[base].Metric[0])
		}
		// Buckets that hold 3 under a count of 4.
		bm = classicMetric(labels("name", "a"), 4, 4)
		tm = nativeMetric(labels("name", "a"), 0, 0, 1, 2)
		tm.Histogram.SampleCount = new(uint64(4))
		got, _, _ = mergeCrafted(t, []*dto.MetricFamily{histFamily(base, "h", bm), histFamily(twin, "h", tm)}, nil)
		if !proto.Equal(got[base].Metric[0], bm) {
			t.Errorf("buckets that do not add up to the count merged: %v", got[base].Metric[0])
		}
	})

	t.Run("twin without base is renamed", func(t *testing.T) {
		// With a namespace and without units, as WithNamespace and
		// WithoutUnits name them.
		tm := nativeMetric(labels("name", "a"), 0, 5, 2)
		got, names, err := mergeCrafted(t, []*dto.MetricFamily{
			gaugeFamily("a_gauge"), histFamily("ns_workqueue_work_duration_native", "work help", tm), gaugeFamily("ns_z"),
		}, nil)
		if err != nil {
			t.Fatal(err)
		}
		if !slices.Equal(names, []string{"a_gauge", "ns_workqueue_work_duration", "ns_z"}) {
			t.Fatalf("families %q", names)
		}
		mf := got["ns_workqueue_work_duration"]
		if mf.GetHelp() != "work help" || mf.GetType() != dto.MetricType_HISTOGRAM || len(mf.Metric) != 1 {
			t.Fatalf("renamed family %v", mf)
		}
		h := mf.Metric[0].Histogram
		if h.GetSampleCount() != 2 || h.GetSchema() != 3 || len(h.Bucket) != 0 || nativeBuckets(t, h.PositiveSpan, h.PositiveDelta)[5] != 2 {
			t.Errorf("renamed histogram %v", h)
		}
	})

	t.Run("twin metric without base metric is added", func(t *testing.T) {
		b := classicMetric(labels("controller", "c", "name", "b"), 2, 2)
		tb := nativeMetric(labels("name", "b", "controller", "c"), 0, 1, 2) // labels in another order
		ta := nativeMetric(labels("controller", "c", "name", "a"), 0, 1, 7)
		got, names, err := mergeCrafted(t, []*dto.MetricFamily{histFamily(base, "h", b), histFamily(twin, "h", tb, ta)}, nil)
		if err != nil {
			t.Fatal(err)
		}
		if !slices.Equal(names, []string{base}) || len(got[base].Metric) != 2 {
			t.Fatalf("families %q: %v", names, got)
		}
		ma, mb := got[base].Metric[0], got[base].Metric[1]
		if labelMap(ma)["name"] != "a" || labelMap(mb)["name"] != "b" {
			t.Fatalf("metrics %v", got[base].Metric)
		}
		if h := ma.Histogram; h.GetSampleCount() != 7 || len(h.Bucket) != 0 || h.GetSchema() != 3 {
			t.Errorf("native-only metric %v", h)
		}
		if h := mb.Histogram; h.GetSampleCount() != 2 || len(h.Bucket) != 2 || h.Schema == nil || len(h.PositiveSpan) != 1 {
			t.Errorf("merged metric %v", h)
		}
	})

	t.Run("unrelated families pass through", func(t *testing.T) {
		in := []*dto.MetricFamily{
			gaugeFamily("a"), histFamily("other_duration_seconds", "x", classicMetric(labels("name", "a"), 1, 1)),
			gaugeFamily("workqueue_depth"), histFamily(twin, "h", nativeMetric(labels("name", "a"), 1, 0)),
			gaugeFamily("zzz"),
			// The base name taken by another type: the twin stays.
			gaugeFamily("workqueue_work_duration_seconds"), histFamily("workqueue_work_duration_native_seconds", "h", nativeMetric(labels("name", "a"), 1, 0)),
			// Not a histogram: not a twin.
			gaugeFamily("workqueue_queue_duration_native_gauge"),
		}
		slices.SortFunc(in, func(a, b *dto.MetricFamily) int { return strings.Compare(a.GetName(), b.GetName()) })
		got, names, err := mergeCrafted(t, in, nil)
		if err != nil {
			t.Fatal(err)
		}
		want := []string{"a", "other_duration_seconds", "workqueue_depth", "workqueue_queue_duration_native_gauge", base,
			"workqueue_work_duration_native_seconds", "workqueue_work_duration_seconds", "zzz"}
		if !slices.Equal(names, want) {
			t.Fatalf("families %q, want %q", names, want)
		}
		for _, mf := range in {
			if mf.GetName() == twin {
				continue
			}
			if got[mf.GetName()] != mf {
				t.Errorf("%s was not passed through as it is", mf.GetName())
			}
		}
		// Only zeros: served with client_golang's zero threshold.
		if h := got[base].Metric[0].Histogram; h.GetZeroThreshold() != prometheus.DefNativeHistogramZeroThreshold || h.GetZeroCount() != 1 {
			t.Errorf("renamed zeros-only histogram %v", h)
		}
		// No twin at all: the very slice comes back.
		plain := []*dto.MetricFamily{gaugeFamily("a"), gaugeFamily("b")}
		out, _ := otelqueuesdk.MergeNativeHistograms(prometheus.GathererFunc(func() ([]*dto.MetricFamily, error) { return plain, nil })).Gather()
		if len(out) != 2 || out[0] != plain[0] || out[1] != plain[1] {
			t.Errorf("got %v", out)
		}
	})

	t.Run("zero threshold", func(t *testing.T) {
		// Bucket -1024 at schema 3 is (2^-128.125, 2^-128]: at the
		// default threshold. The zero bucket must stay exact zeros.
		for _, tc := range []struct {
			offset int32
			want   float64
		}{
			{-1024, 0},
			{-1023, prometheus.DefNativeHistogramZeroThreshold},
		} {
			tm := nativeMetric(labels("name", "a"), 1, tc.offset, 1)
			got, _, _ := mergeCrafted(t, []*dto.MetricFamily{histFamily(twin, "h", tm)}, nil)
			if h := got[base].Metric[0].Histogram; h.ZeroThreshold == nil || h.GetZeroThreshold() != tc.want {
				t.Errorf("bucket %d: zero threshold %v (set: %t), want %v", tc.offset, h.GetZeroThreshold(), h.ZeroThreshold != nil, tc.want)
			}
		}
	})

	t.Run("inner error", func(t *testing.T) {
		inner := errors.New("collector x failed")
		bm := classicMetric(labels("name", "a"), 1, 1)
		tm := nativeMetric(labels("name", "a"), 0, 0, 1)
		got, names, err := mergeCrafted(t, []*dto.MetricFamily{histFamily(base, "h", bm), histFamily(twin, "h", tm)}, inner)
		if !errors.Is(err, inner) {
			t.Errorf("error %v, want the Gatherer's", err)
		}
		if !slices.Equal(names, []string{base}) || got[base].Metric[0].Histogram.Schema == nil {
			t.Errorf("families %q not merged", names)
		}
	})

	t.Run("nil gatherer", func(t *testing.T) {
		mfs, err := otelqueuesdk.MergeNativeHistograms(nil).Gather()
		if mfs != nil || err == nil || !strings.Contains(err.Error(), "nil") {
			t.Errorf("got %v, %v; want no families and an error about the nil Gatherer", mfs, err)
		}
	})
}

// TestMergeNativeHistogramsNamespace checks that the twins are recognised
// under the exporter's WithNamespace.
func TestMergeNativeHistogramsNamespace(t *testing.T) {
	mp, reg := nativeProm(t, otelprom.WithNamespace("ctrl"))
	fc := testingclock.NewFakeClock(time.Unix(1e9, 0))
	q := nativeQueue(t, mp, nil, fc, "orders")
	nativeProcess(q, fc, "a", time.Second, 2*time.Second)
	raw := gatherFamilies(t, reg)
	if _, ok := raw["ctrl_workqueue_queue_duration_native_seconds"]; !ok {
		t.Fatalf("the exporter names the twin otherwise: %v", raw)
	}
	got := gatherFamilies(t, otelqueuesdk.MergeNativeHistograms(reg))
	for _, name := range []string{"ctrl_" + queueFamily, "ctrl_" + workFamily} {
		_, h := oneHistogram(t, got, name)
		if h.Schema == nil || len(h.Bucket) == 0 || h.GetSampleCount() != 1 {
			t.Errorf("%s: not merged: %v", name, h)
		}
	}
	for name := range got {
		if strings.Contains(name, "native") {
			t.Errorf("family %s served", name)
		}
	}
}

// TestMergeNativeHistogramsConcurrent gathers while several goroutines
// process keys: whenever a gathered histogram has native buckets, they add up
// to its count (a sample Prometheus would accept).
func TestMergeNativeHistogramsConcurrent(t *testing.T) {
	mp, reg := nativeProm(t)
	queues := []*scheduler.Scheduler[string]{
		nativeQueue(t, mp, nil, nil, "q1"), nativeQueue(t, mp, nil, nil, "q2"),
	}
	g := otelqueuesdk.MergeNativeHistograms(reg)
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
	for w := range 6 {
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
	var native, classicOnly int
	check := func(mfs []*dto.MetricFamily) {
		n, c := checkMerged(t, mfs)
		native += n
		classicOnly += c
	}
	deadline := time.Now().Add(time.Second)
	for i := 0; i < 50 || (processed.Load() < 1000 && time.Now().Before(deadline)); i++ {
		mfs, err := g.Gather()
		if err != nil {
			t.Fatal(err)
		}
		check(mfs)
	}
	stop.Store(true)
	wg.Wait()
	t.Logf("%d keys processed; %d histograms served with native buckets, %d classic only", processed.Load(), native, classicOnly)

	// At rest both streams agree: everything is merged.
	mfs, err := g.Gather()
	if err != nil {
		t.Fatal(err)
	}
	check(mfs)
	var total uint64
	for _, mf := range mfs {
		if mf.GetName() != queueFamily {
			continue
		}
		for _, m := range mf.Metric {
			if m.Histogram.Schema == nil {
				t.Errorf("%v at rest: classic only", labelMap(m))
			}
			total += m.Histogram.GetSampleCount()
		}
	}
	if total != uint64(processed.Load()) {
		t.Errorf("queue waits counted %d, keys processed %d", total, processed.Load())
	}
}

// checkMerged checks merged families: no twin is served, and each
// histogram of otelqueue's two families has classic buckets, and native
// buckets that add up to its count when it has some (a sample Prometheus
// would accept). It returns how many histograms have native buckets, and how
// many are classic only.
func checkMerged(t testing.TB, mfs []*dto.MetricFamily) (native, classicOnly int) {
	t.Helper()
	for _, mf := range mfs {
		name := mf.GetName()
		if strings.Contains(name, "native") {
			t.Errorf("family %s served", name)
		}
		if name != queueFamily && name != workFamily {
			continue
		}
		for _, m := range mf.Metric {
			h := m.Histogram
			if n := len(h.Bucket); n == 0 || h.Bucket[n-1].GetCumulativeCount() > h.GetSampleCount() {
				t.Errorf("%s: classic buckets %v, count %d", name, h.Bucket, h.GetSampleCount())
			}
			if h.Schema == nil {
				classicOnly++
				continue
			}
			native++
			var total int64
			for _, n := range nativeBuckets(t, h.PositiveSpan, h.PositiveDelta) {
				total += n
			}
			if uint64(total)+h.GetZeroCount() != h.GetSampleCount() {
				t.Errorf("%s %v: native buckets hold %d + %d zeros, count %d", name, labelMap(m), total, h.GetZeroCount(), h.GetSampleCount())
			}
		}
	}
	return native, classicOnly
}

// TestNativeHistogramsViews checks the views themselves: which instruments
// they match, the two streams they make, and maxSize.
func TestNativeHistogramsViews(t *testing.T) {
	for _, maxSize := range []int32{0, -3, math.MinInt32, 40, 160} {
		views := otelqueuesdk.NativeHistograms(maxSize)
		if len(views) != 4 {
			t.Fatalf("NativeHistograms(%d): %d views, want 4", maxSize, len(views))
		}
		wantSize := maxSize
		if maxSize <= 0 {
			wantSize = 320
		}
		for _, name := range []string{semconv.MetricQueueDuration, semconv.MetricWorkDuration} {
			inst := sdkmetric.Instrument{Name: name, Description: "d", Unit: "s", Kind: sdkmetric.InstrumentKindHistogram,
				Scope: instrumentationScopeOf(semconv.ScopeOtelqueue)}
			var streams []sdkmetric.Stream
			for _, v := range views {
				if s, ok := v(inst); ok {
					streams = append(streams, s)
				}
			}
			if len(streams) != 2 {
				t.Fatalf("%s: %d streams, want 2", name, len(streams))
			}
			if s := streams[0]; s.Name != name || s.Unit != "s" || s.Description != "d" || s.Aggregation != nil {
				t.Errorf("%s: first stream %+v, want the instrument's as it is", name, s)
			}
			want := sdkmetric.AggregationBase2ExponentialHistogram{MaxSize: wantSize, MaxScale: 3}
			if s := streams[1]; s.Name != name+semconv.NativeSuffix || s.Unit != "s" || s.Description != "d" || s.Aggregation != want {
				t.Errorf("NativeHistograms(%d): %s: second stream %+v, want %s with %+v", maxSize, name, s, name+semconv.NativeSuffix, want)
			}
			// Other scopes and other instruments are not matched.
			for _, other := range []sdkmetric.Instrument{
				{Name: name, Kind: sdkmetric.InstrumentKindHistogram, Scope: instrumentationScopeOf("someone/else")},
				{Name: semconv.MetricClientRequest, Kind: sdkmetric.InstrumentKindHistogram, Scope: instrumentationScopeOf(semconv.ScopeOtelqueue)},
			} {
				for _, v := range views {
					if s, ok := v(other); ok {
						t.Errorf("%s of %s matched: %+v", other.Name, other.Scope.Name, s)
					}
				}
			}
		}
	}

	// Two calls, two independent sets of views.
	a := otelqueuesdk.NativeHistograms(8)
	b := otelqueuesdk.NativeHistograms(0)
	b[1] = nil
	inst := sdkmetric.Instrument{Name: semconv.MetricQueueDuration, Kind: sdkmetric.InstrumentKindHistogram, Scope: instrumentationScopeOf(semconv.ScopeOtelqueue)}
	if s, _ := a[1](inst); s.Aggregation != (sdkmetric.AggregationBase2ExponentialHistogram{MaxSize: 8, MaxScale: 3}) {
		t.Errorf("the first call's views changed: %+v", s.Aggregation)
	}
}

func instrumentationScopeOf(name string) instrumentation.Scope {
	return instrumentation.Scope{Name: name}
}

var (
	timestampOne = timestamppb.Timestamp{Seconds: 1}
	timestampTwo = timestamppb.Timestamp{Seconds: 2}
)

// TestNativeHistogramsStreams checks, through the SDK, the two streams of
// each histogram: the first keeps the instrument's advised boundaries
// (DefaultBuckets, or WithExplicitBuckets) since a view that sets no
// aggregation leaves the reader's default with the advice in place; the
// second is an exponential histogram of at most scale 3 over the same
// measurements.
func TestNativeHistogramsStreams(t *testing.T) {
	for _, tc := range []struct {
		name   string
		opts   []otelqueue.Option
		bounds []float64
	}{
		{"DefaultBuckets", nil, otelqueue.DefaultBuckets()},
		{"WithExplicitBuckets", []otelqueue.Option{otelqueue.WithExplicitBuckets(0.5, 1, 2)}, []float64{0.5, 1, 2}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			reader := sdkmetric.NewManualReader()
			mp := sdkmetric.NewMeterProvider(sdkmetric.WithReader(reader), sdkmetric.WithView(otelqueuesdk.NativeHistograms(0)...))
			t.Cleanup(func() { _ = mp.Shutdown(context.Background()) })
			fc := testingclock.NewFakeClock(time.Unix(1e9, 0))
			q := nativeQueue(t, mp, nil, fc, "orders", tc.opts...)
			// Another scope's histogram of the same name keeps one stream.
			other, err := mp.Meter("someone/else").Float64Histogram(semconv.MetricQueueDuration)
			if err != nil {
				t.Fatal(err)
			}
			other.Record(context.Background(), 1)
			nativeProcess(q, fc, "a", 3*time.Second, time.Second)
			nativeProcess(q, fc, "b", 0, 250*time.Millisecond)

			var rm metricdata.ResourceMetrics
			if err := reader.Collect(context.Background(), &rm); err != nil {
				t.Fatal(err)
			}
			byName := map[string]metricdata.Metrics{}
			for _, sm := range rm.ScopeMetrics {
				for _, m := range sm.Metrics {
					byName[sm.Scope.Name+" "+m.Name] = m
				}
			}
			for name, want := range map[string]struct {
				count uint64
				sum   float64
			}{
				semconv.MetricQueueDuration: {2, 3},
				semconv.MetricWorkDuration:  {2, 1.25},
			} {
				classic := byName[semconv.ScopeOtelqueue+" "+name]
				h, ok := classic.Data.(metricdata.Histogram[float64])
				if !ok || len(h.DataPoints) != 1 {
					t.Fatalf("%s is a %T, want a histogram with one point", name, classic.Data)
				}
				if dp := h.DataPoints[0]; !slices.Equal(dp.Bounds, tc.bounds) || dp.Count != want.count || dp.Sum != want.sum {
					t.Errorf("%s: bounds %v count %d sum %v; want %v %d %v", name, dp.Bounds, dp.Count, dp.Sum, tc.bounds, want.count, want.sum)
				}
				twin := byName[semconv.ScopeOtelqueue+" "+name+semconv.NativeSuffix]
				if twin.Unit != classic.Unit || twin.Description != classic.Description {
					t.Errorf("%s: twin unit %q description %q; classic %q %q", name, twin.Unit, twin.Description, classic.Unit, classic.Description)
				}
				e, ok := twin.Data.(metricdata.ExponentialHistogram[float64])
				if !ok || len(e.DataPoints) != 1 {
					t.Fatalf("%s is a %T, want an exponential histogram with one point", twin.Name, twin.Data)
				}
				if dp := e.DataPoints[0]; dp.Count != want.count || dp.Sum != want.sum || dp.Scale != 3 || !dp.Attributes.Equals(&h.DataPoints[0].Attributes) {
					t.Errorf("%s: count %d sum %v scale %d attributes %v", twin.Name, dp.Count, dp.Sum, dp.Scale, dp.Attributes.ToSlice())
				}
			}
			if _, ok := byName["someone/else "+semconv.MetricQueueDuration].Data.(metricdata.Histogram[float64]); !ok {
				t.Error("another scope's histogram changed")
			}
			if _, ok := byName["someone/else "+semconv.MetricQueueDuration+semconv.NativeSuffix]; ok {
				t.Error("another scope's histogram got a twin")
			}
		})
	}
}
