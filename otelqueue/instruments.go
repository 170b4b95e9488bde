package otelqueue

import (
	"github.com/otelqueue/otelqueue/internal/semconv"
	"go.opentelemetry.io/otel"
	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/metric"
	"go.opentelemetry.io/otel/metric/noop"
)

// instruments are the OpenTelemetry instruments of one meter. Every creation
// error goes to otel.Handle and leaves a working no-op instrument in place.
type instruments struct {
	meter metric.Meter

	queueDuration metric.Float64Histogram
	workDuration  metric.Float64Histogram
	// changeDuration is nil without WithChangeDuration,
	// queueDurationByPriority without WithWaitByPriority.
	changeDuration          metric.Float64Histogram
	queueDurationByPriority metric.Float64Histogram
	lateness                metric.Float64Histogram // nil without WithLateness

	depth          metric.Int64ObservableUpDownCounter
	adds           metric.Int64ObservableCounter
	retries        metric.Int64ObservableCounter
	delayedAdds    metric.Int64ObservableCounter
	unfinished     metric.Float64ObservableGauge
	longestRunning metric.Float64ObservableGauge
	oldestPending  metric.Float64ObservableGauge
	delayed        metric.Int64ObservableUpDownCounter
	coalesced      metric.Int64ObservableCounter
	activeWorkers  metric.Int64ObservableUpDownCounter
	workers        metric.Int64ObservableGauge
	standby        metric.Int64ObservableGauge
	workersChanges metric.Int64ObservableCounter
	results        metric.Int64ObservableCounter

	clientLimiter    metric.Float64Histogram
	clientRequest    metric.Float64Histogram
	clientRetryAfter metric.Float64Histogram
	clientRequests   metric.Int64ObservableCounter
	clientThrottled  metric.Int64ObservableCounter
}

// The descriptions of the metrics controller-runtime also has are its help
// texts, word for word: Prometheus refuses to serve one metric family with
// two help texts, so this is what lets an application serve otelqueue's
// series and those of controller-runtime's own queues (its other
// controllers) from one endpoint. (Some say "item" where otelqueue says
// "key", and the retries one says "non-zero delay" where otelqueue, like
// client-go, counts every AddAfter and AddRateLimited.)
const (
	helpDepth                   = "Current depth of workqueue by workqueue and priority"
	helpAdds                    = "Total number of adds handled by workqueue"
	helpQueueDuration           = "How long in seconds an item stays in workqueue before being requested"
	helpWorkDuration            = "How long in seconds processing an item from workqueue takes."
	helpQueueDurationByPriority = "How long in seconds an item stays in workqueue before being requested, by the priority it was added with."
	helpLateness                = "How long in seconds after the end of its delay, backoff or debounce window an item was requested, by wait reason."
	helpChangeDuration          = "How long in seconds after a change of an item the controller had processed it without a failure, waits, backoffs and retries included."
	helpUnfinished              = "How many seconds of work has been done that is in progress and hasn't been observed by work_duration. Large values indicate stuck threads. One can deduce the number of stuck threads by observing the rate at which this increases."
	helpLongestRunning          = "How many seconds has the longest running processor for workqueue been running."
	helpRetries                 = "Total number of items added to the workqueue with a non-zero delay (rate-limited requeues, explicit RequeueAfter or AddAfter calls)"
)

func newInstruments(c *config) *instruments {
	m := c.meterProvider.Meter(semconv.ScopeOtelqueue, metric.WithInstrumentationVersion(Version))
	in := &instruments{meter: m}
	nm := noop.Meter{}
	handle := func(err error) {
		if err != nil {
			otel.Handle(err)
		}
	}
	var err error
	// The duration histograms, in seconds with the queue's buckets; the
	// optional ones only when asked for (nil otherwise).
	histogram := func(name, desc string) metric.Float64Histogram {
		h, err := m.Float64Histogram(name, metric.WithUnit("s"), metric.WithDescription(desc),
			metric.WithExplicitBucketBoundaries(c.buckets...))
		if err != nil {
			handle(err)
			h, _ = nm.Float64Histogram(name)
		}
		return h
	}
	in.queueDuration = histogram(semconv.MetricQueueDuration, helpQueueDuration)
	if c.waitByPriority {
		in.queueDurationByPriority = histogram(semconv.MetricQueueDurationByPriority, helpQueueDurationByPriority)
	}
	if c.lateness {
		in.lateness = histogram(semconv.MetricLateness, helpLateness)
	}
	if c.changes {
		in.changeDuration = histogram(semconv.MetricChangeDuration, helpChangeDuration)
	}
	in.workDuration = histogram(semconv.MetricWorkDuration, helpWorkDuration)

	upDown := func(name, unit, desc string) metric.Int64ObservableUpDownCounter {
		i, err := m.Int64ObservableUpDownCounter(name, metric.WithUnit(unit), metric.WithDescription(desc))
		if err != nil {
			handle(err)
			i, _ = nm.Int64ObservableUpDownCounter(name)
		}
		return i
	}
	counter := func(name, unit, desc string) metric.Int64ObservableCounter {
		i, err := m.Int64ObservableCounter(name, metric.WithUnit(unit), metric.WithDescription(desc))
		if err != nil {
			handle(err)
			i, _ = nm.Int64ObservableCounter(name)
		}
		return i
	}
	gauge := func(name, desc string) metric.Float64ObservableGauge {
		i, err := m.Float64ObservableGauge(name, metric.WithUnit("s"), metric.WithDescription(desc))
		if err != nil {
			handle(err)
			i, _ = nm.Float64ObservableGauge(name)
		}
		return i
	}

	in.depth = upDown(semconv.MetricDepth, "{item}", helpDepth)
	in.adds = counter(semconv.MetricAdds, "{item}", helpAdds)
	in.retries = counter(semconv.MetricRetries, "{item}", helpRetries)
	in.delayedAdds = counter(semconv.MetricDelayedAdds, "{item}", "Total number of keys added with a delay the caller chose (AddAfter, a reconcile's RequeueAfter): the retries that are no failures.")
	in.unfinished = gauge(semconv.MetricUnfinishedWork, helpUnfinished)
	in.longestRunning = gauge(semconv.MetricLongestRunning, helpLongestRunning)
	in.oldestPending = gauge(semconv.MetricOldestPending, "How many seconds the oldest ready key has waited for a worker.")
	in.delayed = upDown(semconv.MetricDelayed, "{item}", "Current number of keys waiting for a delay, rate-limiter backoff or debounce window.")
	in.coalesced = counter(semconv.MetricCoalesced, "{item}", "Total number of adds merged into a key that was already pending.")
	in.activeWorkers = upDown(semconv.MetricActiveWorkers, "{worker}", "Current number of workers processing a key.")
	in.workers, err = m.Int64ObservableGauge(semconv.MetricWorkers, metric.WithUnit("{worker}"),
		metric.WithDescription("Configured number of workers of the queue, as controller-runtime's max_concurrent_reconciles, or an adaptive pool's current limit."))
	if err != nil {
		handle(err)
		in.workers, _ = nm.Int64ObservableGauge(semconv.MetricWorkers)
	}
	// No unit: the Prometheus exporter would turn "1" into a _ratio suffix.
	in.standby, err = m.Int64ObservableGauge(semconv.MetricStandby,
		metric.WithDescription("1 while the queue is standby (its workers wait for leadership), 0 once it is active."))
	if err != nil {
		handle(err)
		in.standby, _ = nm.Int64ObservableGauge(semconv.MetricStandby)
	}
	in.results = counter(semconv.MetricReconcileResults, "{reconcile}", "Total number of reconciles, by result.")
	in.workersChanges = counter(semconv.MetricWorkersChanges, "{change}", "Total number of changes of an adaptive worker pool's limit, by reason.")

	in.clientLimiter = histogram(semconv.MetricClientRateLimiter, "How long in seconds the Kubernetes API requests of one reconcile waited for the client-side rate limiter.")
	in.clientRequest = histogram(semconv.MetricClientRequest, "How long in seconds one reconcile spent in Kubernetes API round trips.")
	in.clientRetryAfter = histogram(semconv.MetricClientRetryAfter, "How long in seconds one reconcile waited out the API server's Retry-After before retrying a throttled request.")
	in.clientRequests = counter(semconv.MetricClientRequests, "{request}", "Total number of Kubernetes API round trips made by reconciles.")
	in.clientThrottled = counter(semconv.MetricClientThrottled, "{request}", "Total number of Kubernetes API round trips of reconciles answered 429 Too Many Requests.")
	return in
}

// observables lists the asynchronous instruments for RegisterCallback.
func (in *instruments) observables() []metric.Observable {
	return []metric.Observable{
		in.depth, in.adds, in.retries, in.delayedAdds, in.unfinished, in.longestRunning,
		in.oldestPending, in.delayed, in.coalesced, in.activeWorkers, in.workers, in.standby, in.workersChanges, in.results,
		in.clientRequests, in.clientThrottled,
	}
}

// queueAttrs returns the metric attributes of a queue.
func queueAttrs(name, controller string) attribute.Set {
	if controller == "" {
		controller = name
	}
	return attribute.NewSet(semconv.AttrName.String(name), semconv.AttrController.String(controller))
}
