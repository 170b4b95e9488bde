package otelqueue

import (
	"errors"
	"fmt"
	"math"
	"slices"

	"go.opentelemetry.io/otel"
	"go.opentelemetry.io/otel/metric"
	"go.opentelemetry.io/otel/trace"
	"go.opentelemetry.io/otel/trace/noop"
)

// DefaultBuckets returns the explicit histogram bucket boundaries, in
// seconds, of the queue-wait and work-duration histograms: from 100µs to
// 1000s, three buckets a decade. The SDK's default boundaries are sized for
// milliseconds. Each call returns a new slice: changing it changes nothing
// else.
func DefaultBuckets() []float64 { return slices.Clone(defaultBuckets) }

var defaultBuckets = []float64{
	0.0001, 0.00025, 0.0005,
	0.001, 0.0025, 0.005,
	0.01, 0.025, 0.05,
	0.1, 0.25, 0.5,
	1, 2.5, 5,
	10, 25, 50,
	100, 250, 500,
	1000,
}

// Option configures Instrument.
type Option interface {
	apply(*config)
}

// MetricsOption configures NewMetricsProvider. Every MetricsOption is also
// an Option of Instrument; the options about traces, links and workers are
// Options only, since a MetricsProvider has none of those.
type MetricsOption interface {
	Option
	metricsOption()
}

type optionFunc func(*config)

func (f optionFunc) apply(c *config) { f(c) }

// metricsOptionFunc is an option that NewMetricsProvider honours too.
type metricsOptionFunc func(*config)

func (f metricsOptionFunc) apply(c *config) { f(c) }
func (metricsOptionFunc) metricsOption()    {}

type config struct {
	meterProvider  metric.MeterProvider
	tracerProvider trace.TracerProvider
	controller     string
	buckets        []float64
	parentMode     bool
	linkSource     any  // a LinkSource[K], checked against the queue's K (WithLinkSource)
	workers        int  // WithWorkers
	workersSet     bool // WithWorkers was given
	adaptive       *AdaptiveWorkers
	clientTime     bool            // WithClientTime
	changes        bool            // WithChangeDuration
	waitByPriority bool            // WithWaitByPriority
	lateness       bool            // WithLateness
	standby        <-chan struct{} // WithStandby
	sizer          *Sizer          // WithSizer
	errs           []error         // found by setDefaults, reported by validate
}

func newConfig[O Option](opts []O) config {
	var c config
	for _, o := range opts {
		if Option(o) != nil {
			o.apply(&c)
		}
	}
	c.setDefaults()
	return c
}

// setDefaults fills what no option set.
func (c *config) setDefaults() {
	if isNil(c.meterProvider) {
		if c.meterProvider != nil {
			c.errs = append(c.errs, typedNil("WithMeterProvider", c.meterProvider))
		}
		c.meterProvider = otel.GetMeterProvider()
	}
	if isNil(c.tracerProvider) {
		if c.tracerProvider != nil {
			c.errs = append(c.errs, typedNil("WithTracerProvider", c.tracerProvider))
		}
		c.tracerProvider = otel.GetTracerProvider()
	}
	if c.buckets == nil {
		c.buckets = defaultBuckets
	}
}

// validate reports options that cannot be used as given.
func (c *config) validate() error {
	if len(c.errs) > 0 {
		return errors.Join(c.errs...)
	}
	for i, b := range c.buckets {
		if math.IsNaN(b) || math.IsInf(b, 0) {
			return fmt.Errorf("otelqueue: bucket boundary %d is %v: boundaries must be finite numbers of seconds", i, b)
		}
		if i > 0 && b <= c.buckets[i-1] {
			return fmt.Errorf("otelqueue: bucket boundaries must increase strictly, but %v follows %v", b, c.buckets[i-1])
		}
	}
	if c.workersSet && c.workers < 1 {
		return fmt.Errorf("otelqueue: WithWorkers needs at least 1 worker, got %d", c.workers)
	}
	if len(c.buckets) == 0 {
		return errors.New("otelqueue: WithExplicitBuckets needs at least one boundary")
	}
	if c.adaptive != nil {
		return c.adaptive.check()
	}
	return nil
}

// tracing reports whether spans are wanted at all: not with a no-op
// TracerProvider, so that metrics-only users pay nothing for tracing.
func (c *config) tracing() bool {
	switch c.tracerProvider.(type) {
	case noop.TracerProvider, *noop.TracerProvider:
		return false
	}
	return true
}

// WithMeterProvider sets the MeterProvider; the global one by default, and
// when mp is nil. A nil pointer of a MeterProvider type (a typed nil) is an
// error from Instrument.
func WithMeterProvider(mp metric.MeterProvider) MetricsOption {
	return metricsOptionFunc(func(c *config) { c.meterProvider = mp })
}

// WithTracerProvider sets the TracerProvider; the global one by default,
// and when tp is nil. A nil pointer of a TracerProvider type (a typed nil)
// is an error from Instrument.
// A noop.TracerProvider turns tracing off: metrics are still recorded, with
// no spans and no exemplars.
func WithTracerProvider(tp trace.TracerProvider) Option {
	return optionFunc(func(c *config) { c.tracerProvider = tp })
}

// WithControllerName sets the "controller" attribute of every metric. By
// default it is the queue name, as controller-runtime sets it.
func WithControllerName(name string) MetricsOption {
	return metricsOptionFunc(func(c *config) { c.controller = name })
}

// WithExplicitBuckets sets the bucket boundaries, in seconds, of the
// queue-wait and work-duration histograms (DefaultBuckets by default). They
// must be finite and strictly increasing; Instrument reports an error
// otherwise. For exponential (Prometheus native) histograms, configure the
// SDK with the views of package otelqueuesdk instead.
func WithExplicitBuckets(bounds ...float64) MetricsOption {
	b := append([]float64{}, bounds...)
	return metricsOptionFunc(func(c *config) { c.buckets = b })
}

// WithEnqueuerAsParent makes each processing trace a child of the first span
// context the key was enqueued from, instead of a new root that links to
// every enqueue context. Keys enqueued without a span context still start a
// new root. Use it when one writer's trace should contain the whole story;
// the default (links) suits keys coalesced from many events. The root starts
// at the earliest pending enqueue: when an add without a span context came
// before the first one with one, the root starts before its parent, which
// trace viewers may flag as clock skew.
func WithEnqueuerAsParent() Option {
	return optionFunc(func(c *config) { c.parentMode = true })
}

// WithClientTime makes the queue record where its reconcile attempts spend
// their time in Kubernetes API clients instrumented with package
// kubeclient: each attempt's context carries an account that such a client
// adds the requests made with that context (or one derived from it) to,
// and when the attempt ends the queue records it in the workqueue.client.*
// instruments (`workqueue.client.rate_limiter.duration`, `workqueue.client.request.duration` and
// `workqueue.client.retry_after.duration`, histograms of the time waiting for the
// client-side rate limiter, in API round trips and waiting out the API
// server's Retry-After; `workqueue.client.requests` and `workqueue.client.throttled`) and
// in Instrumentation.ClientStats, and an adaptive worker pool
// (AdaptiveWorkers) reads it to tell a client-side limit from other
// limits. Without it a queue records none of them, even when its
// reconcilers use an instrumented client. The spans of a sampled attempt's
// requests (kubeclient's client spans and "retry after" waits) do not
// depend on it.
//
// It costs one allocation (about 100 bytes) per attempt that is not
// sampled: with tracing off, or dropped by the sampler. A sampled
// attempt's context is an allocation already, which the account joins.
func WithClientTime() Option {
	return optionFunc(func(c *config) { c.clientTime = true })
}

// WithChangeDuration makes the queue record, for each change of a key, how
// long after it the controller had acted on it: the histogram
// workqueue.change.duration (`workqueue.change.duration`), from the add that
// opened the change to the end of the first attempt that ended without a
// rate-limited add of its key (no error, no Requeue), waits, backoffs and
// failed attempts included, with that attempt's trace as exemplar. An add
// opens a change unless it is a requeue's (AddAfter, RequeueAfter) or a
// backoff's (AddRateLimited), or the key has one open; so a polling
// controller's time between polls is no change's; on a standby queue
// (WithStandby) a change counts from when the queue became active, as its
// leader acted on it before. This is the service
// level indicator users state their objectives in ("a change is acted on
// within 30 s"); docs/metrics.md has the burn-rate rules.
//
// It costs a histogram record per change closed, and the scheduler's
// bookkeeping of changes (see scheduler.Observer); without it neither is
// paid. A controller-runtime reconcile that ends in a TerminalError is not
// requeued, so it closes its change: the change was acted on, if not
// successfully.
func WithChangeDuration() Option {
	return optionFunc(func(c *config) { c.changes = true })
}

// WithWaitByPriority makes the queue also record its queue wait by the
// priority of each key's run (scheduler.AddOptions.Priority, as
// controller-runtime's priority queue gives it): the histogram
// workqueue.queue.duration.by_priority (`workqueue.queue.duration.by_priority`)
// with `priority`, so that the wait of real changes (priority 0) can be
// told from that of the informer's initial list and resyncs
// (handler.LowPriority, -100). Like the depth, it keeps at most
// 25 priorities per queue, the rest under "exceeded_cardinality_limit".
// workqueue.queue.duration stays as controller-runtime serves it, without
// the priority. It costs a second histogram record per attempt.
func WithWaitByPriority() Option {
	return optionFunc(func(c *config) { c.waitByPriority = true })
}

// WithLateness makes the queue record how late a key that waited for a
// time ran: from the time it was due (the end of its AddAfter or
// RequeueAfter delay, of its rate limiter's backoff, of its debounce
// window) to a worker taking it, the histogram workqueue.lateness
// (`workqueue.lateness`) with `workqueue.wait_reason` (delayed, rate_limited or
// debounced). A polling controller whose polls run late, or a backoff
// that ends in a queue too busy to take the retry, shows there; the
// queue wait mixes these waits with those of keys ready at once. It costs
// a second histogram record per attempt that waited for a time.
func WithLateness() Option {
	return optionFunc(func(c *config) { c.lateness = true })
}
