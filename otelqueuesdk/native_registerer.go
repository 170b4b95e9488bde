package otelqueuesdk

import (
	"errors"
	"reflect"
	"slices"
	"sync"
	"sync/atomic"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/otelqueue/otelqueue/internal/nilcheck"
	dto "github.com/prometheus/client_model/go"
)

// NativeHistogramRegisterer returns a Registerer to give the OpenTelemetry
// Prometheus exporter (otelprom.WithRegisterer) in place of reg, so that the
// histograms of NativeHistograms reach reg's scrapes with classic and native
// buckets in one histogram, as MergeNativeHistograms serves them.
//
// Which one to use:
//
//   - MergeNativeHistograms when the program serves the exporter's registry
//     itself: promhttp.HandlerFor(MergeNativeHistograms(registry), ...).
//   - NativeHistogramRegisterer when someone else serves the registry, above
//     all a controller-runtime manager, whose metrics server serves
//     sigs.k8s.io/controller-runtime/pkg/metrics.Registry:
//     otelprom.New(otelprom.WithRegisterer(NativeHistogramRegisterer(metrics.Registry))).
//     The families of the exporter then reach that server already merged,
//     beside controller-runtime's own.
//
// Use one or the other, not both on the same registry (both would work, the
// second merge finding nothing left to do, but at twice the cost).
//
// The exporter registers an unchecked collector (its Describe sends no
// descriptor, as its metrics are not known in advance). For such a
// collector c, Register registers in reg an unchecked collector of its own
// which, on each Collect, gathers c through a private prometheus.Registry
// holding only c, merges the result as MergeNativeHistograms does, and sends
// every merged metric on: its Desc carries the family's name, help and unit
// and the metric's label names; its Write gives the gathered dto.Metric
// (classic and native buckets, exemplars, created timestamp). Errors of the
// gather (the exporter's invalid metrics, inconsistent metrics) are sent as
// invalid metrics, so reg's Gather reports them as it would have reported
// them for c. Collectors that describe their metrics (checked collectors,
// such as client_golang's own) are registered with reg as they are:
// Register, MustRegister and Unregister pass them through.
//
// For unchecked collectors, where a prometheus.Registry accepts the same
// collector twice (and then fails every Gather with duplicate metrics) and
// cannot unregister it (Unregister finds no descriptors and returns false),
// the Registerer keeps track of what it wrapped: registering the same
// collector again returns a prometheus.AlreadyRegisteredError naming it,
// and Unregister removes it and returns true. A prometheus.Registry keeps
// the wrapping collector in its list of unchecked collectors after that (it
// cannot remove one), but it collects nothing any more. Collectors are
// compared with ==, so one whose type is not comparable (collectors are
// nearly always pointers) is not recognised: registering it again is not
// refused, and Unregister does not find it.
//
// NativeHistogramRegisterer(nil) returns a Registerer whose Register returns
// an error (and MustRegister panics with it), so that otelprom.New fails
// with that error instead of registering with prometheus.DefaultRegisterer,
// which is what otelprom.WithRegisterer(nil) does.
func NativeHistogramRegisterer(reg prometheus.Registerer) prometheus.Registerer {
	if nilcheck.IsNil(reg) {
		return nilRegisterer{}
	}
	return &nativeRegisterer{reg: reg}
}

var errNilRegisterer = errors.New("otelqueuesdk: NativeHistogramRegisterer was given a nil prometheus.Registerer; pass the registry that is served, e.g. controller-runtime's metrics.Registry")

var errNilCollector = errors.New("otelqueuesdk: a nil prometheus.Collector cannot be registered")

type nilRegisterer struct{}

func (nilRegisterer) Register(prometheus.Collector) error { return errNilRegisterer }

func (nilRegisterer) MustRegister(cs ...prometheus.Collector) {
	if len(cs) > 0 {
		panic(errNilRegisterer)
	}
}

func (nilRegisterer) Unregister(prometheus.Collector) bool { return false }

type nativeRegisterer struct {
	reg prometheus.Registerer

	mu      sync.Mutex
	wrapped []*nativeCollector // unchecked collectors registered through this Registerer
}

// Register implements prometheus.Registerer.
func (r *nativeRegisterer) Register(c prometheus.Collector) error {
	if nilcheck.IsNil(c) {
		return errNilCollector
	}
	if describes(c) {
		return r.reg.Register(c)
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	if i := r.find(c); i >= 0 {
		return prometheus.AlreadyRegisteredError{ExistingCollector: r.wrapped[i].c, NewCollector: c}
	}
	w := newNativeCollector(c)
	if err := r.reg.Register(w); err != nil {
		return err
	}
	r.wrapped = append(r.wrapped, w)
	return nil
}

// MustRegister implements prometheus.Registerer.
func (r *nativeRegisterer) MustRegister(cs ...prometheus.Collector) {
	for _, c := range cs {
		if err := r.Register(c); err != nil {
			panic(err)
		}
	}
}

// Unregister implements prometheus.Registerer.
func (r *nativeRegisterer) Unregister(c prometheus.Collector) bool {
	if nilcheck.IsNil(c) {
		return false // nothing registered it; client_golang would call its Describe
	}
	r.mu.Lock()
	i := r.find(c)
	var w *nativeCollector
	if i >= 0 {
		w = r.wrapped[i]
		r.wrapped = slices.Delete(r.wrapped, i, i+1)
	}
	r.mu.Unlock()
	if w == nil {
		return r.reg.Unregister(c)
	}
	w.removed.Store(true)
	// A prometheus.Registry cannot unregister an unchecked collector; other
	// Registerers may.
	r.reg.Unregister(w)
	return true
}

// find returns the position of the wrapper of c in r.wrapped, or -1.
func (r *nativeRegisterer) find(c prometheus.Collector) int {
	if c == nil || !reflect.TypeOf(c).Comparable() {
		return -1
	}
	return slices.IndexFunc(r.wrapped, func(w *nativeCollector) bool { return w.c == c })
}

// describes reports whether c sends a descriptor on Describe, that is
// whether it is a checked collector. It drains what c sends, as
// prometheus.Registry does.
func describes(c prometheus.Collector) bool {
	ch := make(chan *prometheus.Desc)
	go func() {
		c.Describe(ch)
		close(ch)
	}()
	described := false
	for range ch {
		described = true
	}
	return described
}

// nativeCollector is the unchecked collector NativeHistogramRegisterer
// registers for the unchecked collector c.
type nativeCollector struct {
	c       prometheus.Collector
	g       prometheus.Gatherer // MergeNativeHistograms of a registry holding only c
	removed atomic.Bool         // unregistered: collect nothing
}

func newNativeCollector(c prometheus.Collector) *nativeCollector {
	private := prometheus.NewRegistry()
	// An unchecked collector registers without a check that could fail.
	_ = private.Register(c)
	return &nativeCollector{c: c, g: MergeNativeHistograms(private)}
}

// Describe implements prometheus.Collector: it sends nothing, as the
// collector it wraps.
func (*nativeCollector) Describe(chan<- *prometheus.Desc) {}

// Collect implements prometheus.Collector.
func (w *nativeCollector) Collect(ch chan<- prometheus.Metric) {
	if w.removed.Load() {
		return
	}
	mfs, err := w.g.Gather()
	if err != nil {
		var multi prometheus.MultiError
		if !errors.As(err, &multi) {
			multi = prometheus.MultiError{err}
		}
		for _, e := range multi {
			ch <- prometheus.NewInvalidMetric(prometheus.NewInvalidDesc(e), e)
		}
	}
	var names []string
	for _, mf := range mfs {
		var desc *prometheus.Desc
		for _, m := range mf.Metric {
			if desc == nil || !sameLabelNames(names, m.Label) {
				names = names[:0]
				for _, lp := range m.Label {
					names = append(names, lp.GetName())
				}
				desc = familyDesc(mf, slices.Clone(names))
			}
			ch <- gatheredMetric{desc: desc, m: m}
		}
	}
}

// familyDesc returns the Desc of the metrics of mf with the label names
// labels.
func familyDesc(mf *dto.MetricFamily, labels []string) *prometheus.Desc {
	var opts []prometheus.DescOpt
	if mf.GetUnit() != "" {
		opts = append(opts, prometheus.WithUnit(mf.GetUnit()))
	}
	return prometheus.V2.NewDesc(mf.GetName(), mf.GetHelp(), prometheus.UnconstrainedLabels(labels), nil, opts...)
}

func sameLabelNames(names []string, labels []*dto.LabelPair) bool {
	return slices.EqualFunc(names, labels, func(n string, lp *dto.LabelPair) bool { return n == lp.GetName() })
}

// gatheredMetric is a gathered (and merged) dto.Metric sent on as a
// prometheus.Metric.
type gatheredMetric struct {
	desc *prometheus.Desc
	m    *dto.Metric
}

// Desc implements prometheus.Metric.
func (g gatheredMetric) Desc() *prometheus.Desc { return g.desc }

// Write implements prometheus.Metric: it gives out every field of the
// gathered metric. The values are shared, not copied: each Collect gathers
// new ones, and the registry that calls Write does not modify them.
func (g gatheredMetric) Write(out *dto.Metric) error {
	out.Label = g.m.Label
	out.Gauge = g.m.Gauge
	out.Counter = g.m.Counter
	out.Summary = g.m.Summary
	out.Untyped = g.m.Untyped
	out.Histogram = g.m.Histogram
	out.TimestampMs = g.m.TimestampMs
	return nil
}
