package otelqueue

import (
	"context"
	"math"
	"sync"
	"sync/atomic"

	"go.opentelemetry.io/otel"
	"go.opentelemetry.io/otel/metric"
	"k8s.io/client-go/util/workqueue"
)

// MetricsProvider is a client-go workqueue.MetricsProvider that reports the
// queue metrics of this package (same names, units and attributes) for plain
// client-go queues, and for controller-runtime's priority queue through its
// Opts.MetricProvider.
//
// client-go's metrics interface carries no context, so these histograms have
// no exemplars and there are no spans; use a scheduler.Scheduler with
// Instrument for those. Counters and gauges live in atomics read at
// collection time; only the two histograms are recorded synchronously.
type MetricsProvider struct {
	in         *instruments
	controller string

	mu     sync.Mutex
	queues []*providerQueue
}

var _ workqueue.MetricsProvider = (*MetricsProvider)(nil)

// NewMetricsProvider returns a MetricsProvider. Pass it per queue in
// workqueue.TypedRateLimitingQueueConfig.MetricsProvider (controller-runtime
// installs its own global provider in an init, and client-go honours only the
// first workqueue.SetProvider). The queue's name becomes the "name" attribute,
// and the "controller" attribute unless WithControllerName is given. Bucket boundaries that WithExplicitBuckets gets
// wrong are reported to otel.Handle and replaced by DefaultBuckets.
func NewMetricsProvider(opts ...MetricsOption) *MetricsProvider {
	c := newConfig(opts)
	if err := c.validate(); err != nil {
		otel.Handle(err)
		c.buckets = defaultBuckets
	}
	p := &MetricsProvider{in: newInstruments(&c), controller: c.controller}
	if _, err := p.in.meter.RegisterCallback(p.observe, p.in.depth, p.in.adds, p.in.retries, p.in.unfinished, p.in.longestRunning); err != nil {
		otel.Handle(err)
	}
	return p
}

// providerQueue holds one named queue's numbers.
type providerQueue struct {
	name    string
	attrs   metric.MeasurementOption
	record  []metric.RecordOption
	depth   atomic.Int64
	adds    atomic.Int64
	retries atomic.Int64
	// Float64 bits of the last Set values.
	unfinished, longest atomic.Uint64
}

// queue returns the numbers of the queue called name, created on first use:
// client-go calls every New*Metric once per queue.
func (p *MetricsProvider) queue(name string) *providerQueue {
	p.mu.Lock()
	defer p.mu.Unlock()
	for _, q := range p.queues {
		if q.name == name {
			return q
		}
	}
	set := queueAttrs(name, p.controller)
	q := &providerQueue{name: name, attrs: metric.WithAttributeSet(set), record: []metric.RecordOption{metric.WithAttributeSet(set)}}
	p.queues = append(p.queues, q)
	return q
}

func (p *MetricsProvider) observe(_ context.Context, o metric.Observer) error {
	p.mu.Lock()
	qs := p.queues
	p.mu.Unlock()
	for _, q := range qs {
		o.ObserveInt64(p.in.depth, q.depth.Load(), q.attrs)
		o.ObserveInt64(p.in.adds, q.adds.Load(), q.attrs)
		o.ObserveInt64(p.in.retries, q.retries.Load(), q.attrs)
		o.ObserveFloat64(p.in.unfinished, math.Float64frombits(q.unfinished.Load()), q.attrs)
		o.ObserveFloat64(p.in.longestRunning, math.Float64frombits(q.longest.Load()), q.attrs)
	}
	return nil
}

// NewDepthMetric implements workqueue.MetricsProvider.
func (p *MetricsProvider) NewDepthMetric(name string) workqueue.GaugeMetric {
	return gauge{&p.queue(name).depth}
}

// NewAddsMetric implements workqueue.MetricsProvider.
func (p *MetricsProvider) NewAddsMetric(name string) workqueue.CounterMetric {
	return gauge{&p.queue(name).adds}
}

// NewRetriesMetric implements workqueue.MetricsProvider.
func (p *MetricsProvider) NewRetriesMetric(name string) workqueue.CounterMetric {
	return gauge{&p.queue(name).retries}
}

// NewLatencyMetric implements workqueue.MetricsProvider.
func (p *MetricsProvider) NewLatencyMetric(name string) workqueue.HistogramMetric {
	return histogram{p.in.queueDuration, p.queue(name).record}
}

// NewWorkDurationMetric implements workqueue.MetricsProvider.
func (p *MetricsProvider) NewWorkDurationMetric(name string) workqueue.HistogramMetric {
	return histogram{p.in.workDuration, p.queue(name).record}
}

// NewUnfinishedWorkSecondsMetric implements workqueue.MetricsProvider.
func (p *MetricsProvider) NewUnfinishedWorkSecondsMetric(name string) workqueue.SettableGaugeMetric {
	return settable{&p.queue(name).unfinished}
}

// NewLongestRunningProcessorSecondsMetric implements
// workqueue.MetricsProvider.
func (p *MetricsProvider) NewLongestRunningProcessorSecondsMetric(name string) workqueue.SettableGaugeMetric {
	return settable{&p.queue(name).longest}
}

// gauge is an atomic counter or gauge.
type gauge struct{ v *atomic.Int64 }

func (g gauge) Inc() { g.v.Add(1) }
func (g gauge) Dec() { g.v.Add(-1) }

// settable is an atomic float64 gauge.
type settable struct{ v *atomic.Uint64 }

func (s settable) Set(f float64) { s.v.Store(math.Float64bits(f)) }

// histogram records into an OpenTelemetry histogram with prepared attributes.
type histogram struct {
	h      metric.Float64Histogram
	record []metric.RecordOption
}

func (h histogram) Observe(v float64) { h.h.Record(context.Background(), v, h.record...) }
