package otelqueuesdk

import (
	"errors"
	"math"
	"slices"
	"strings"

	"github.com/otelqueue/otelqueue/internal/semconv"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/otelqueue/otelqueue/internal/nilcheck"
	dto "github.com/prometheus/client_model/go"
	sdkmetric "go.opentelemetry.io/otel/sdk/metric"
)

// nativeMaxScale is the finest scale of the twin streams: scale 3 is
// Prometheus schema 3, a bucket factor of 2^(1/8) ≈ 1.0905, which is what
// client_golang picks for controller-runtime's NativeHistogramBucketFactor
// 1.1 (the largest factor 2^(2^-n) not above it).
const nativeMaxScale = 3

// nativeDefaultMaxSize is NativeHistograms' maxSize when none is given: at
// scale 3, 320 bucket indexes span a factor of 2^40 (1µs to about 12
// days).
const nativeDefaultMaxSize = 320

// NativeHistograms returns views that serve otelqueue's queue-wait and
// work-duration histograms the way controller-runtime does with
// client_golang: classic buckets and native (sparse) buckets in one
// histogram. Pass them to sdkmetric.NewMeterProvider with sdkmetric.WithView,
// and either serve the Prometheus exporter's registry through
// MergeNativeHistograms, or, when another component serves the registry the
// exporter registers with (controller-runtime's metrics.Registry), pass the
// exporter otelprom.WithRegisterer(NativeHistogramRegisterer(registry)).
//
// For each of the two instruments there are two views. The first keeps the
// stream exactly as it is without views: same name, and the reader's
// aggregation with the instrument's advised boundaries (DefaultBuckets, or
// WithExplicitBuckets), since a view that sets no aggregation leaves the
// SDK's choice, advice included, in place. The second adds a stream of the
// same measurements named name+".native", aggregated as a base-2
// exponential histogram of at most maxSize buckets (320 when maxSize is not
// positive) and at most scale 3 (Prometheus schema 3, as controller-runtime).
//
// maxSize bounds the span of bucket indexes from the smallest observation to
// the largest, not the number of populated buckets as client_golang's
// NativeHistogramMaxBucketNumber does. At scale 3 (8 buckets per doubling)
// the default 320 spans a factor of 2^40: 1µs to about 12 days, or 20µs
// to 100s with room to spare, so a queue's waits stay at scale 3 as
// controller-runtime's do. A smaller maxSize spans less (160: a factor of
// 2^20, 150µs to 100s fits, 100µs to 100s does not), and observations
// further apart make the SDK lower the scale (to 2, a factor of 2^40 at 160)
// for as long as the process runs, where client_golang would stay at schema
// 3. The bound costs nothing until it is needed: the SDK keeps, per
// histogram, an array of buckets from the lowest populated index to the
// highest, grown as observations land outside it, so memory and the work of
// each collection follow the range actually observed, not maxSize.
//
// Every measurement is recorded twice, so each costs a little more. Over
// OTLP the twin is exported as its own metric (workqueue.queue.duration.native
// and workqueue.work.duration.native; through the Prometheus exporter alone
// workqueue_queue_duration_native_seconds and
// workqueue_work_duration_native_seconds); MergeNativeHistograms and
// NativeHistogramRegisterer fold it back into the classic histogram for a
// Prometheus endpoint.
//
// Do not combine these views with ExponentialHistograms: the SDK identifies a
// stream by its name, description and unit, not its aggregation, so the two
// views that name the base stream would make one stream, aggregated as
// whichever view comes first says, and the other would be silently ignored.
func NativeHistograms(maxSize int32) []sdkmetric.View {
	if maxSize <= 0 {
		maxSize = nativeDefaultMaxSize
	}
	agg := sdkmetric.AggregationBase2ExponentialHistogram{MaxSize: maxSize, MaxScale: nativeMaxScale}
	views := make([]sdkmetric.View, 0, 4)
	for _, name := range []string{semconv.MetricQueueDuration, semconv.MetricWorkDuration} {
		match := sdkmetric.Instrument{Name: name, Scope: instrumentationScope()}
		views = append(views,
			sdkmetric.NewView(match, sdkmetric.Stream{}),
			sdkmetric.NewView(match, sdkmetric.Stream{Name: name + semconv.NativeSuffix, Aggregation: agg}),
		)
	}
	return views
}

// nativeStems are the Prometheus names of the twin streams, without the
// namespace and unit suffix the exporter may add.
var nativeStems = [...]string{
	"workqueue_queue_duration_native",
	"workqueue_work_duration_native",
}

// MergeNativeHistograms returns a Gatherer that gathers g and folds the twin
// streams of NativeHistograms back into otelqueue's histograms: each of
// workqueue_queue_duration_seconds and workqueue_work_duration_seconds comes
// out as one histogram with both the classic buckets and the native buckets
// (schema, zero bucket, spans and the native exemplars), as client_golang
// serves a histogram that has both, and the *_native_* families are gone.
// Serve it with promhttp.HandlerFor; a Prometheus server that negotiates the
// protobuf exposition keeps both kinds of buckets, the text formats carry the
// classic ones. When the program does not serve the registry itself (a
// controller-runtime manager serves its metrics.Registry), register the
// exporter through NativeHistogramRegisterer instead, which applies this
// merge to the exporter's collector.
//
// A twin is a histogram family whose name contains
// "workqueue_queue_duration_native" or "workqueue_work_duration_native" (so
// the exporter's namespace and unit suffix may be anything); its base is the
// name without that "_native". For each metric of the twin:
//
//   - With a base metric of the same labels and the same sample count, the
//     base metric gets the native fields and exemplars. Its count, sum,
//     classic buckets and their exemplars, and created timestamp stay (the
//     twin's created timestamp fills in when the base has none, as the
//     exporter's classic histograms do not).
//   - With a different count (a measurement landed between the SDK's
//     collection of the two streams), the base metric is served classic
//     only: the native buckets must add up to the count exactly, or
//     Prometheus rejects the sample. Its native series misses that scrape.
//   - With no base metric of those labels, the twin's metric is added to the
//     base family as a native-only histogram; with no base family, the twin
//     family is served under the base name.
//
// The native buckets are re-encoded as client_golang encodes them: only
// populated buckets, a new span after a gap of more than two. OpenTelemetry's
// zero bucket counts exact zeros only (zero threshold 0); when no populated
// bucket lies at or below client_golang's default threshold
// (prometheus.DefNativeHistogramZeroThreshold, 2^-128), that threshold is
// served instead, so that the histogram is the one client_golang would serve.
//
// Other families pass through unchanged, and the result is sorted as a
// Gatherer's must be. The families and metrics g returns are not modified.
// When g returns an error, what it gathered is merged and returned with the
// error. MergeNativeHistograms(nil) returns a Gatherer that reports an error.
func MergeNativeHistograms(g prometheus.Gatherer) prometheus.Gatherer {
	return nativeMerger{g: g}
}

type nativeMerger struct{ g prometheus.Gatherer }

var errNilGatherer = errors.New("otelqueuesdk: MergeNativeHistograms was given a nil prometheus.Gatherer; pass the registry the OpenTelemetry Prometheus exporter registers with (otelprom.WithRegisterer)")

// Gather implements prometheus.Gatherer.
func (m nativeMerger) Gather() ([]*dto.MetricFamily, error) {
	if nilcheck.IsNil(m.g) {
		return nil, errNilGatherer
	}
	mfs, err := m.g.Gather()
	return mergeNative(mfs), err
}

// twinBase returns the name of the family a twin family belongs to, and
// whether mf is a twin.
func twinBase(mf *dto.MetricFamily) (string, bool) {
	if mf.GetType() != dto.MetricType_HISTOGRAM {
		return "", false
	}
	name := mf.GetName()
	for _, stem := range nativeStems {
		if i := strings.Index(name, stem); i >= 0 {
			cut := i + len(stem) - len("_native")
			return name[:cut] + name[i+len(stem):], true
		}
	}
	return "", false
}

// mergeNative folds the twin families of mfs into their bases.
func mergeNative(mfs []*dto.MetricFamily) []*dto.MetricFamily {
	twins := 0
	for _, mf := range mfs {
		if _, ok := twinBase(mf); ok {
			twins++
		}
	}
	if twins == 0 {
		return mfs
	}

	out := make([]*dto.MetricFamily, 0, len(mfs))
	index := make(map[string]int, len(mfs)) // name -> position in out
	for _, mf := range mfs {
		if _, ok := twinBase(mf); !ok {
			index[mf.GetName()] = len(out)
			out = append(out, mf)
		}
	}
	copied := make(map[int]bool, twins) // base families already copied
	for _, tw := range mfs {
		baseName, ok := twinBase(tw)
		if !ok {
			continue
		}
		i, exists := index[baseName]
		switch {
		case !exists:
			// No classic family: serve the twin under the base name.
			metrics := make([]*dto.Metric, len(tw.Metric))
			for j, m := range tw.Metric {
				metrics[j] = nativeOnly(m)
			}
			index[baseName] = len(out)
			out = append(out, &dto.MetricFamily{
				Name: &baseName, Help: tw.Help, Type: tw.Type, Unit: tw.Unit, Metric: metrics,
			})
			copied[len(out)-1] = true
			continue
		case out[i].GetType() != dto.MetricType_HISTOGRAM:
			// The base name is taken by something else: keep the twin
			// as it is rather than serve two families of one name.
			index[tw.GetName()] = len(out)
			out = append(out, tw)
			continue
		}
		if !copied[i] {
			b := out[i]
			out[i] = &dto.MetricFamily{
				Name: b.Name, Help: b.Help, Type: b.Type, Unit: b.Unit, Metric: slices.Clone(b.Metric),
			}
			copied[i] = true
		}
		mergeFamily(out[i], tw)
	}
	slices.SortStableFunc(out, func(a, b *dto.MetricFamily) int {
		return strings.Compare(a.GetName(), b.GetName())
	})
	return out
}

// mergeFamily folds the metrics of the twin family tw into base, whose
// Metric slice is its own.
func mergeFamily(base, tw *dto.MetricFamily) {
	byLabels := make(map[string]int, len(base.Metric))
	var key []byte
	for j, m := range base.Metric {
		key = labelKey(key[:0], m.Label)
		if _, dup := byLabels[string(key)]; !dup {
			byLabels[string(key)] = j
		}
	}
	appended := false
	for _, tm := range tw.Metric {
		key = labelKey(key[:0], tm.Label)
		j, ok := byLabels[string(key)]
		if !ok {
			base.Metric = append(base.Metric, nativeOnly(tm))
			appended = true
			continue
		}
		if merged := withNative(base.Metric[j], tm); merged != nil {
			base.Metric[j] = merged
		}
	}
	if appended {
		slices.SortStableFunc(base.Metric, compareMetrics)
	}
}

// labelKey appends to key the label set of a metric, independent of the
// order of the pairs.
func labelKey(key []byte, labels []*dto.LabelPair) []byte {
	sorted := slices.IsSortedFunc(labels, compareLabelNames)
	if !sorted {
		labels = slices.SortedFunc(slices.Values(labels), compareLabelNames)
	}
	for _, lp := range labels {
		// 0xff cannot occur in UTF-8, so the key is unambiguous.
		key = append(key, lp.GetName()...)
		key = append(key, 0xff)
		key = append(key, lp.GetValue()...)
		key = append(key, 0xff)
	}
	return key
}

func compareLabelNames(a, b *dto.LabelPair) int { return strings.Compare(a.GetName(), b.GetName()) }

// compareMetrics orders metrics as client_golang's registry does
// (internal.MetricSorter): by label values, then by timestamp.
func compareMetrics(a, b *dto.Metric) int {
	if len(a.Label) != len(b.Label) {
		return len(a.Label) - len(b.Label)
	}
	for n, lp := range a.Label {
		if c := strings.Compare(lp.GetValue(), b.Label[n].GetValue()); c != 0 {
			return c
		}
	}
	switch {
	case a.TimestampMs == nil && b.TimestampMs == nil:
		return 0
	case a.TimestampMs == nil:
		return 1
	case b.TimestampMs == nil:
		return -1
	}
	return int(min(max(a.GetTimestampMs()-b.GetTimestampMs(), -1), 1))
}

// withNative returns a copy of the classic metric bm with the native buckets
// of the twin metric tm, or nil when bm must stay as it is: the counts
// differ, tm has no valid native buckets, or bm already has some.
func withNative(bm, tm *dto.Metric) *dto.Metric {
	bh, th := bm.GetHistogram(), tm.GetHistogram()
	if bh == nil || th == nil || th.Schema == nil || bh.Schema != nil {
		return nil
	}
	if bh.GetSampleCount() != th.GetSampleCount() || bh.GetSampleCountFloat() != th.GetSampleCountFloat() {
		return nil
	}
	nh, ok := native(th)
	if !ok {
		return nil
	}
	created := bh.CreatedTimestamp
	if created == nil {
		// The exporter gives classic histograms no created timestamp
		// (prometheus.NewConstHistogram), native ones their start time;
		// both streams start when the instrument is created.
		created = th.CreatedTimestamp
	}
	nh.SampleCount, nh.SampleCountFloat, nh.SampleSum, nh.Bucket = bh.SampleCount, bh.SampleCountFloat, bh.SampleSum, bh.Bucket
	nh.CreatedTimestamp, nh.Exemplars = created, th.Exemplars
	return &dto.Metric{Label: bm.Label, Histogram: nh, TimestampMs: bm.TimestampMs}
}

// nativeOnly returns the twin metric tm as it is served without a classic
// counterpart: its native buckets re-encoded (see native).
func nativeOnly(tm *dto.Metric) *dto.Metric {
	th := tm.GetHistogram()
	if th == nil || th.Schema == nil {
		return tm
	}
	nh, ok := native(th)
	if !ok {
		return tm // not valid native buckets: served as the exporter made them
	}
	nh.SampleCount, nh.SampleCountFloat, nh.SampleSum, nh.Bucket = th.SampleCount, th.SampleCountFloat, th.SampleSum, th.Bucket
	nh.CreatedTimestamp, nh.Exemplars = th.CreatedTimestamp, th.Exemplars
	return &dto.Metric{Label: tm.Label, Histogram: nh, TimestampMs: tm.TimestampMs}
}

// native returns a new histogram that holds the native fields of th as
// client_golang would serve them, and nothing else (the caller fills in the
// count, sum, classic buckets, created timestamp and exemplars):
//
//   - The buckets are re-encoded with the populated ones only. The exporter
//     passes OpenTelemetry's dense bucket array on, empty buckets included;
//     client_golang keeps populated buckets and starts a new span after a
//     gap of more than two (makeBuckets). Both mean the same to Prometheus.
//   - OpenTelemetry's zero bucket holds exact zeros only, so its threshold
//     is 0. client_golang's default is DefNativeHistogramZeroThreshold
//     (2^-128). When no populated bucket lies at or below 2^-128, the zero
//     bucket holds the same observations under either threshold, and
//     2^-128 is served, as client_golang does.
//
// ok is false when the buckets are not valid: malformed spans, or counts
// that do not add up to the sample count. The result shares no slice with th
// that it changed; the fields it did not change are th's.
func native(th *dto.Histogram) (nh *dto.Histogram, ok bool) {
	nh = &dto.Histogram{
		Schema:         th.Schema,
		ZeroThreshold:  th.ZeroThreshold,
		ZeroCount:      th.ZeroCount,
		ZeroCountFloat: th.ZeroCountFloat,
		NegativeSpan:   th.NegativeSpan,
		NegativeDelta:  th.NegativeDelta,
		NegativeCount:  th.NegativeCount,
		PositiveSpan:   th.PositiveSpan,
		PositiveDelta:  th.PositiveDelta,
		PositiveCount:  th.PositiveCount,
	}
	lowest := int64(math.MaxInt64) // lowest populated bucket index, either sign
	if len(th.PositiveCount) > 0 || len(th.NegativeCount) > 0 || th.ZeroCountFloat != nil || th.SampleCountFloat != nil {
		// A float histogram (the exporter makes none): check the counts,
		// keep the encoding.
		pos, okp := decodeBuckets(th.PositiveSpan, th.PositiveCount, true)
		neg, okn := decodeBuckets(th.NegativeSpan, th.NegativeCount, true)
		if !okp || !okn || (len(th.PositiveDelta)+len(th.NegativeDelta)) > 0 {
			return nil, false
		}
		sum := th.GetZeroCountFloat()
		for _, bs := range [2][]bucket[float64]{pos, neg} {
			for _, b := range bs {
				sum += b.n
				lowest = min(lowest, int64(b.i))
			}
		}
		if sum != th.GetSampleCountFloat() {
			return nil, false
		}
	} else {
		pos, okp := decodeBuckets(th.PositiveSpan, th.PositiveDelta, false)
		neg, okn := decodeBuckets(th.NegativeSpan, th.NegativeDelta, false)
		if !okp || !okn {
			return nil, false
		}
		sum := th.GetZeroCount()
		for _, bs := range [2][]bucket[int64]{pos, neg} {
			for _, b := range bs {
				sum += uint64(b.n)
				lowest = min(lowest, int64(b.i))
			}
		}
		if sum != th.GetSampleCount() {
			return nil, false
		}
		nh.PositiveSpan, nh.PositiveDelta = encodeBuckets(pos)
		nh.NegativeSpan, nh.NegativeDelta = encodeBuckets(neg)
	}
	if th.GetZeroThreshold() == 0 && !reachesDefaultZeroThreshold(lowest, th.GetSchema()) {
		zt := prometheus.DefNativeHistogramZeroThreshold
		nh.ZeroThreshold = &zt
	}
	if nh.GetZeroThreshold() == 0 && nh.GetZeroCount() == 0 && nh.GetZeroCountFloat() == 0 &&
		len(nh.PositiveSpan) == 0 && len(nh.NegativeSpan) == 0 {
		// As client_golang: an empty span tells an empty native histogram
		// from a classic one.
		nh.PositiveSpan = []*dto.BucketSpan{{Offset: new(int32(0)), Length: new(uint32(0))}}
	}
	return nh, true
}

// reachesDefaultZeroThreshold reports whether bucket index i (a Prometheus
// index: the bucket (2^((i-1)/2^schema), 2^(i/2^schema)] in magnitude) holds
// values at or below DefNativeHistogramZeroThreshold, 2^-128: whether its
// lower bound is below 2^-128. Unknown schemas answer yes, which keeps the
// threshold as it is.
func reachesDefaultZeroThreshold(i int64, schema int32) bool {
	if i == math.MaxInt64 {
		return false // no populated bucket
	}
	if schema < -4 || schema > 8 {
		return true
	}
	if schema >= 0 {
		return i-1 < -128<<schema
	}
	return (i-1)<<-schema < -128
}

// bucket is a populated native bucket: its Prometheus index and count.
type bucket[N int64 | float64] struct {
	i int32
	n N
}

// decodeBuckets returns the populated buckets of a span-encoded bucket list:
// vals are deltas between consecutive counts, or the counts themselves when
// absolute. ok is false when the spans and vals do not match or a count is
// negative.
func decodeBuckets[N int64 | float64](spans []*dto.BucketSpan, vals []N, absolute bool) (buckets []bucket[N], ok bool) {
	var (
		idx   int64
		count N
		k     int
	)
	if len(vals) > 0 {
		buckets = make([]bucket[N], 0, len(vals))
	}
	for s, sp := range spans {
		switch {
		case s == 0:
			idx = int64(sp.GetOffset())
		case sp.GetOffset() < 0:
			return nil, false // spans must not overlap
		default:
			idx += int64(sp.GetOffset())
		}
		for range sp.GetLength() {
			if k >= len(vals) {
				return nil, false
			}
			if absolute {
				count = vals[k]
			} else {
				count += vals[k]
			}
			k++
			if count < 0 || idx < math.MinInt32 || idx > math.MaxInt32 {
				return nil, false
			}
			if count != 0 {
				buckets = append(buckets, bucket[N]{i: int32(idx), n: count})
			}
			idx++
		}
	}
	return buckets, k == len(vals)
}

// encodeBuckets encodes populated buckets, in increasing index order, as
// client_golang's makeBuckets does: spans and deltas, one span until a gap
// of more than two empty buckets.
func encodeBuckets[N int64 | float64](buckets []bucket[N]) ([]*dto.BucketSpan, []N) {
	if len(buckets) == 0 {
		return nil, nil
	}
	// One allocation for all the spans, one for their fields.
	n := 1
	for k := 1; k < len(buckets); k++ {
		if buckets[k].i-buckets[k-1].i > 3 {
			n++
		}
	}
	var (
		spans   = make([]*dto.BucketSpan, 0, n)
		backing = make([]dto.BucketSpan, n)
		fields  = make([]struct {
			offset int32
			length uint32
		}, n)
		deltas = make([]N, 0, len(buckets))
		prev   N
		next   int32
	)
	add := func(c N) {
		fields[len(spans)-1].length++
		deltas = append(deltas, c-prev)
		prev = c
	}
	for k, b := range buckets {
		gap := b.i - next
		if k == 0 || gap > 2 {
			j := len(spans)
			fields[j].offset = gap
			backing[j].Offset, backing[j].Length = &fields[j].offset, &fields[j].length
			spans = append(spans, &backing[j])
		} else {
			for range gap {
				add(0)
			}
		}
		add(b.n)
		next = b.i + 1
	}
	return spans, deltas
}
