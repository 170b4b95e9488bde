package otelqueue

import (
	"go.opentelemetry.io/otel"
	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/metric"
	"go.opentelemetry.io/otel/metric/noop"
)

// Metric instrument names. Through the OpenTelemetry Prometheus exporter they
// become controller-runtime's series names (shown after each constant).
const (
	// MetricDepth: keys ready and waiting for a worker, by AttrPriority
	// (from Instrument; NewMetricsProvider has no priorities).
	// workqueue_depth.
	MetricDepth = "workqueue.depth"
	// MetricAdds: keys that became pending. workqueue_adds_total.
	MetricAdds = "workqueue.adds"
	// MetricQueueDuration: how long a key waited, ready, for a worker.
	// workqueue_queue_duration_seconds.
	MetricQueueDuration = "workqueue.queue.duration"
	// MetricWorkDuration: how long processing a key took.
	// workqueue_work_duration_seconds.
	MetricWorkDuration = "workqueue.work.duration"
	// MetricQueueDurationByPriority: the queue wait by AttrPriority
	// (WithWaitByPriority). workqueue_queue_duration_by_priority_seconds.
	MetricQueueDurationByPriority = "workqueue.queue.duration.by_priority"
	// MetricLateness: how late a key that waited for a time ran after it,
	// by AttrWaitReason (WithLateness). workqueue_lateness_seconds.
	MetricLateness = "workqueue.lateness"
	// MetricChangeDuration: how long after a change of a key the controller
	// had acted on it, retries and backoffs included (WithChangeDuration).
	// workqueue_change_duration_seconds.
	MetricChangeDuration = "workqueue.change.duration"
	// MetricUnfinishedWork: seconds of work in progress and not yet observed
	// by the work duration. workqueue_unfinished_work_seconds.
	MetricUnfinishedWork = "workqueue.unfinished_work"
	// MetricLongestRunning: seconds the longest-running processing has run.
	// workqueue_longest_running_processor_seconds.
	MetricLongestRunning = "workqueue.longest_running_processor"
	// MetricRetries: AddAfter and AddRateLimited calls.
	// workqueue_retries_total.
	MetricRetries = "workqueue.retries"
	// MetricDelayedAdds: of the retries, the adds with a delay the caller
	// chose (AddAfter: a reconcile's RequeueAfter, a scheduled recheck),
	// which are no failures; the retries less these went through the rate
	// limiter's backoff (errors, Result.Requeue). From Instrument only
	// (client-go's MetricsProvider cannot tell them apart).
	// workqueue_delayed_adds_total.
	MetricDelayedAdds = "workqueue.delayed_adds"

	// MetricOldestPending: how long the oldest ready key has waited for a
	// worker. workqueue_oldest_pending_item_seconds.
	MetricOldestPending = "workqueue.oldest_pending_item"
	// MetricDelayed: keys waiting for a delay, backoff or debounce window.
	// workqueue_delayed.
	MetricDelayed = "workqueue.delayed"
	// MetricCoalesced: adds merged into a key that was already pending.
	// workqueue_coalesced_total.
	MetricCoalesced = "workqueue.coalesced"
	// MetricActiveWorkers: workers of a Runner processing a key right now.
	// workqueue_active_workers.
	MetricActiveWorkers = "workqueue.active_workers"
	// MetricWorkers: the configured number of workers of the queue: the
	// Runner's, or WithWorkers's without a Runner (controller-runtime's
	// MaxConcurrentReconciles through package controllerruntime); with
	// AdaptiveWorkers, the pool's current limit. Reported only when known.
	// workqueue_workers.
	MetricWorkers = "workqueue.workers"
	// MetricStandby: 1 while the queue is standby (WithStandby: a replica
	// that has not won its leader election), 0 once it is active; only for
	// a queue instrumented WithStandby. workqueue_standby.
	MetricStandby = "workqueue.standby"
	// MetricWorkersChanges: changes of an adaptive pool's limit, by
	// "reason" (the Reason constants). Reported while the queue has a pool.
	// workqueue_workers_changes_total.
	MetricWorkersChanges = "workqueue.workers.changes"
	// MetricReconcileResults: reconciles run by a Runner, by "result"
	// (success, error, requeue, requeue_after, panic).
	// workqueue_reconcile_results_total.
	MetricReconcileResults = "workqueue.reconcile.results"

	// The time a queue's reconcile attempts spent in Kubernetes API clients
	// instrumented with package kubeclient, recorded per attempt that made
	// requests through one (docs/metrics.md), for a queue instrumented
	// WithClientTime or with an adaptive worker pool only. Each is a part
	// of the work duration.

	// MetricClientRateLimiter: time the attempt's requests waited for the
	// client-side rate limiter (rest.Config QPS and Burst).
	// workqueue_client_rate_limiter_duration_seconds.
	MetricClientRateLimiter = "workqueue.client.rate_limiter.duration"
	// MetricClientRequest: time the attempt spent in API round trips, 429
	// answers included. workqueue_client_request_duration_seconds.
	MetricClientRequest = "workqueue.client.request.duration"
	// MetricClientRetryAfter: time the attempt waited out the API server's
	// Retry-After after a 429 (API Priority and Fairness) before client-go
	// retried. workqueue_client_retry_after_duration_seconds.
	MetricClientRetryAfter = "workqueue.client.retry_after.duration"
	// MetricClientRequests: API round trips made by the queue's attempts.
	// workqueue_client_requests_total.
	MetricClientRequests = "workqueue.client.requests"
	// MetricClientThrottled: those answered 429 Too Many Requests.
	// workqueue_client_throttled_total.
	MetricClientThrottled = "workqueue.client.throttled"
)

// Attribute keys.
const (
	// AttrName is the queue's name on metrics, as controller-runtime's
	// "name" label (spans carry it as AttrQueueName).
	AttrName = attribute.Key("name")
	// AttrController is the controller's name (metrics), as
	// controller-runtime's "controller" label.
	AttrController = attribute.Key("controller")
	// AttrResult is the outcome of a reconcile (MetricReconcileResults and the
	// reconcile span): an Outcome's String.
	AttrResult = attribute.Key("result")

	// Span attributes. Keys and other per-item data go on spans only, never
	// on metrics.

	// AttrQueueName is the queue's name on spans: the value AttrName has on
	// metrics, under a key that says what it names among a span's
	// attributes.
	AttrQueueName  = attribute.Key("workqueue.name")
	AttrKey        = attribute.Key("workqueue.key")
	AttrAttempt    = attribute.Key("workqueue.attempt")
	AttrCoalesced  = attribute.Key("workqueue.coalesced")
	AttrWaitReason = attribute.Key("workqueue.wait_reason")
	// AttrTrigger is why the attempt ran: what the add that set its ready
	// time came from (scheduler.Trigger's String: an event, a requeue, a
	// backoff retry), on the root and "reconcile" spans.
	AttrTrigger = attribute.Key("workqueue.trigger")
	// AttrTriggerSource is where the trigger's event came from, when the
	// add said (scheduler.AddOptions.Source): with package
	// controllerruntime's handlers the kind of the watched object, so that
	// an update of an owned Secret tells itself from one of the For
	// object. On the root and "reconcile" spans, beside AttrTrigger.
	AttrTriggerSource = attribute.Key("workqueue.trigger.source")
	// AttrNextTrigger and AttrNextDelay say, on the "reconcile" span of an
	// attempt whose key runs again, for what (scheduler.Trigger's String:
	// backoff after a failure, requeue_after, or the event added while it
	// ran) and in how many seconds after its end (0: at once).
	AttrNextTrigger  = attribute.Key("workqueue.next.trigger")
	AttrNextDelay    = attribute.Key("workqueue.next.delay")
	AttrDroppedLinks = attribute.Key("workqueue.links.dropped")
	AttrLinkKind     = attribute.Key("workqueue.link")
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
	m := c.meterProvider.Meter(ScopeName, metric.WithInstrumentationVersion(Version))
	in := &instruments{meter: m}
	nm := noop.Meter{}
	handle := func(err error) {
		if err != nil {
			otel.Handle(err)
		}
	}
	var err error

	in.queueDuration, err = m.Float64Histogram(MetricQueueDuration,
		metric.WithUnit("s"),
		metric.WithDescription(helpQueueDuration),
		metric.WithExplicitBucketBoundaries(c.buckets...))
	if err != nil {
		handle(err)
		in.queueDuration, _ = nm.Float64Histogram(MetricQueueDuration)
	}
	if c.waitByPriority {
		in.queueDurationByPriority, err = m.Float64Histogram(MetricQueueDurationByPriority,
			metric.WithUnit("s"),
			metric.WithDescription(helpQueueDurationByPriority),
			metric.WithExplicitBucketBoundaries(c.buckets...))
		if err != nil {
			handle(err)
			in.queueDurationByPriority, _ = nm.Float64Histogram(MetricQueueDurationByPriority)
		}
	}
	if c.lateness {
		in.lateness, err = m.Float64Histogram(MetricLateness,
			metric.WithUnit("s"),
			metric.WithDescription(helpLateness),
			metric.WithExplicitBucketBoundaries(c.buckets...))
		if err != nil {
			handle(err)
			in.lateness, _ = nm.Float64Histogram(MetricLateness)
		}
	}
	if c.changes {
		in.changeDuration, err = m.Float64Histogram(MetricChangeDuration,
			metric.WithUnit("s"),
			metric.WithDescription(helpChangeDuration),
			metric.WithExplicitBucketBoundaries(c.buckets...))
		if err != nil {
			handle(err)
			in.changeDuration, _ = nm.Float64Histogram(MetricChangeDuration)
		}
	}
	in.workDuration, err = m.Float64Histogram(MetricWorkDuration,
		metric.WithUnit("s"),
		metric.WithDescription(helpWorkDuration),
		metric.WithExplicitBucketBoundaries(c.buckets...))
	if err != nil {
		handle(err)
		in.workDuration, _ = nm.Float64Histogram(MetricWorkDuration)
	}

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

	in.depth = upDown(MetricDepth, "{item}", helpDepth)
	in.adds = counter(MetricAdds, "{item}", helpAdds)
	in.retries = counter(MetricRetries, "{item}", helpRetries)
	in.delayedAdds = counter(MetricDelayedAdds, "{item}", "Total number of keys added with a delay the caller chose (AddAfter, a reconcile's RequeueAfter): the retries that are no failures.")
	in.unfinished = gauge(MetricUnfinishedWork, helpUnfinished)
	in.longestRunning = gauge(MetricLongestRunning, helpLongestRunning)
	in.oldestPending = gauge(MetricOldestPending, "How many seconds the oldest ready key has waited for a worker.")
	in.delayed = upDown(MetricDelayed, "{item}", "Current number of keys waiting for a delay, rate-limiter backoff or debounce window.")
	in.coalesced = counter(MetricCoalesced, "{item}", "Total number of adds merged into a key that was already pending.")
	in.activeWorkers = upDown(MetricActiveWorkers, "{worker}", "Current number of workers processing a key.")
	in.workers, err = m.Int64ObservableGauge(MetricWorkers, metric.WithUnit("{worker}"),
		metric.WithDescription("Configured number of workers of the queue, as controller-runtime's max_concurrent_reconciles, or an adaptive pool's current limit."))
	if err != nil {
		handle(err)
		in.workers, _ = nm.Int64ObservableGauge(MetricWorkers)
	}
	// No unit: the Prometheus exporter would turn "1" into a _ratio suffix.
	in.standby, err = m.Int64ObservableGauge(MetricStandby,
		metric.WithDescription("1 while the queue is standby (its workers wait for leadership), 0 once it is active."))
	if err != nil {
		handle(err)
		in.standby, _ = nm.Int64ObservableGauge(MetricStandby)
	}
	in.results = counter(MetricReconcileResults, "{reconcile}", "Total number of reconciles, by result.")
	in.workersChanges = counter(MetricWorkersChanges, "{change}", "Total number of changes of an adaptive worker pool's limit, by reason.")

	histogram := func(name, desc string) metric.Float64Histogram {
		h, err := m.Float64Histogram(name, metric.WithUnit("s"), metric.WithDescription(desc),
			metric.WithExplicitBucketBoundaries(c.buckets...))
		if err != nil {
			handle(err)
			h, _ = nm.Float64Histogram(name)
		}
		return h
	}
	in.clientLimiter = histogram(MetricClientRateLimiter, "How long in seconds the Kubernetes API requests of one reconcile waited for the client-side rate limiter.")
	in.clientRequest = histogram(MetricClientRequest, "How long in seconds one reconcile spent in Kubernetes API round trips.")
	in.clientRetryAfter = histogram(MetricClientRetryAfter, "How long in seconds one reconcile waited out the API server's Retry-After before retrying a throttled request.")
	in.clientRequests = counter(MetricClientRequests, "{request}", "Total number of Kubernetes API round trips made by reconciles.")
	in.clientThrottled = counter(MetricClientThrottled, "{request}", "Total number of Kubernetes API round trips of reconciles answered 429 Too Many Requests.")
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
	return attribute.NewSet(AttrName.String(name), AttrController.String(controller))
}
