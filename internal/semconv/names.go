// Code generated from semconv/registry.yaml by go test ./internal/semconv -update. DO NOT EDIT.

package semconv

import "go.opentelemetry.io/otel/attribute"

// The instrumentation scopes of otelqueue's packages.
const (
	ScopeOtelqueue   = "github.com/otelqueue/otelqueue/otelqueue"
	ScopeKubeclient  = "github.com/otelqueue/otelqueue/kubeclient"
	ScopeProcstat    = "github.com/otelqueue/otelqueue/procstat"
	ScopeTraceparent = "github.com/otelqueue/otelqueue/traceparent"
	ScopeShard       = "github.com/otelqueue/otelqueue/shard"
)

// Attribute keys.
const (
	// AttrName: The queue's name (controller-runtime's name label).
	AttrName = attribute.Key("name")
	// AttrController: The controller's name (controller-runtime's controller
	// label); the queue's name when there is no other.
	AttrController = attribute.Key("controller")
	// AttrResult: How a reconcile ended.
	AttrResult = attribute.Key("result")
	// AttrPriority: The priority a key was added with, a bounded set of values
	// (at most 32, the rest as "overflow").
	AttrPriority = attribute.Key("priority")
	// AttrReason: Why an adaptive worker pool changed its count.
	AttrReason = attribute.Key("reason")
	// AttrQueueName: The queue's name: the value name has on metrics.
	AttrQueueName = attribute.Key("workqueue.name")
	// AttrKey: The key the attempt processed (spans only: keys are unbounded).
	AttrKey = attribute.Key("workqueue.key")
	// AttrAttempt: 1 for the first attempt of a key since it last succeeded,
	// then 2, 3...
	AttrAttempt = attribute.Key("workqueue.attempt")
	// AttrTrigger: Why the attempt ran: what the add that set its ready time
	// came from.
	AttrTrigger = attribute.Key("workqueue.trigger")
	// AttrTriggerSource: Where the trigger's event came from, when the add
	// said: the watched object's kind (ConfigMap); never a value taken from an
	// object.
	AttrTriggerSource = attribute.Key("workqueue.trigger.source")
	// AttrWaitReason: What held the key before it was ready.
	AttrWaitReason = attribute.Key("workqueue.wait_reason")
	// AttrCoalesced: Adds of the key merged into this attempt's pending add.
	AttrCoalesced = attribute.Key("workqueue.coalesced")
	// AttrDroppedLinks: Enqueue links over the bound, not recorded.
	AttrDroppedLinks = attribute.Key("workqueue.links.dropped")
	// AttrLinkKind: What a link of the root span points to.
	AttrLinkKind = attribute.Key("workqueue.link")
	// AttrNextTrigger: When the key runs again, for what (a workqueue.trigger
	// value).
	AttrNextTrigger = attribute.Key("workqueue.next.trigger")
	// AttrNextDelay: When the key runs again, in how many seconds after the
	// attempt's end (0: at once).
	AttrNextDelay = attribute.Key("workqueue.next.delay")
	// AttrWorkersFrom: An adaptive pool's count before a change.
	AttrWorkersFrom = attribute.Key("workqueue.workers.from")
	// AttrWorkersTo: An adaptive pool's count after a change.
	AttrWorkersTo = attribute.Key("workqueue.workers.to")
	// AttrWorkersReason: Why the pool changed (a reason value).
	AttrWorkersReason = attribute.Key("workqueue.workers.reason")
	// AttrExceptionStacktrace: The stack of a reconcile that panicked, on the
	// exception event (OpenTelemetry's exception conventions).
	AttrExceptionStacktrace = attribute.Key("exception.stacktrace")
	// AttrRequestVerb: The Kubernetes verb; absent for a path that names no
	// resource.
	AttrRequestVerb = attribute.Key("kubernetes.request.verb")
	// AttrRequestGroup: The API group, empty for the core group.
	AttrRequestGroup = attribute.Key("kubernetes.request.group")
	// AttrRequestResource: The resource, with its subresource after a slash
	// (pods/status), as in RBAC rules.
	AttrRequestResource = attribute.Key("kubernetes.request.resource")
	// AttrRequestName: The object's name (spans only).
	AttrRequestName = attribute.Key("kubernetes.request.name")
	// AttrCPUMode: OpenTelemetry CPU conventions.
	AttrCPUMode = attribute.Key("cpu.mode")
	// AttrShardOrdinal: The replica's shard, 0 to workqueue.shard.total - 1
	// (absent for explicit ranges).
	AttrShardOrdinal = attribute.Key("workqueue.shard.ordinal")
	// AttrShardTotal: The number of shards the replicas split the objects into
	// (absent for explicit ranges).
	AttrShardTotal = attribute.Key("workqueue.shard.total")
	// AttrShardBy: What the shards hash.
	AttrShardBy = attribute.Key("workqueue.shard.by")
	// LogTraceID: The trace of the attempt's span (the reconcile span, or the
	// reconciler's own).
	LogTraceID = "trace_id"
	// LogSpanID: That span.
	LogSpanID = "span_id"
	// LogTraceSampled: Whether that trace was sampled: false leads to no
	// exported trace (unless a collector's tail sampling kept it).
	LogTraceSampled = "trace_sampled"
	// LogSuppressed: Error lines the rate limit dropped since the previous line
	// logged.
	LogSuppressed = "suppressed"
)

// Metric names.
const (
	// MetricDepth: Current depth of workqueue by workqueue and priority
	// workqueue_depth.
	MetricDepth = "workqueue.depth"
	// MetricAdds: Total number of adds handled by workqueue
	// workqueue_adds_total.
	MetricAdds = "workqueue.adds"
	// MetricQueueDuration: How long in seconds an item stays in workqueue
	// before being requested workqueue_queue_duration_seconds.
	MetricQueueDuration = "workqueue.queue.duration"
	// MetricWorkDuration: How long in seconds processing an item from workqueue
	// takes. workqueue_work_duration_seconds.
	MetricWorkDuration = "workqueue.work.duration"
	// MetricQueueDurationByPriority: How long in seconds an item stays in
	// workqueue before being requested, by the priority it was added with.
	// workqueue_queue_duration_by_priority_seconds.
	MetricQueueDurationByPriority = "workqueue.queue.duration.by_priority"
	// MetricLateness: How long in seconds after the end of its delay, backoff
	// or debounce window an item was requested, by wait reason.
	// workqueue_lateness_seconds.
	MetricLateness = "workqueue.lateness"
	// MetricChangeDuration: How long in seconds after a change of an item the
	// controller had processed it without a failure, waits, backoffs and
	// retries included. workqueue_change_duration_seconds.
	MetricChangeDuration = "workqueue.change.duration"
	// MetricUnfinishedWork: How many seconds of work has been done that is in
	// progress and hasn't been observed by work_duration. Large values indicate
	// stuck threads. One can deduce the number of stuck threads by observing
	// the rate at which this increases. workqueue_unfinished_work_seconds.
	MetricUnfinishedWork = "workqueue.unfinished_work"
	// MetricLongestRunning: How many seconds has the longest running processor
	// for workqueue been running. workqueue_longest_running_processor_seconds.
	MetricLongestRunning = "workqueue.longest_running_processor"
	// MetricRetries: Total number of items added to the workqueue with a
	// non-zero delay (rate-limited requeues, explicit RequeueAfter or AddAfter
	// calls) workqueue_retries_total.
	MetricRetries = "workqueue.retries"
	// MetricDelayedAdds: Total number of keys added with a delay the caller
	// chose (AddAfter, a reconcile's RequeueAfter): the retries that are no
	// failures. workqueue_delayed_adds_total.
	MetricDelayedAdds = "workqueue.delayed_adds"
	// MetricOldestPending: How many seconds the oldest ready key has waited for
	// a worker. workqueue_oldest_pending_item_seconds.
	MetricOldestPending = "workqueue.oldest_pending_item"
	// MetricDelayed: Current number of keys waiting for a delay, rate-limiter
	// backoff or debounce window. workqueue_delayed.
	MetricDelayed = "workqueue.delayed"
	// MetricCoalesced: Total number of adds merged into a key that was already
	// pending. workqueue_coalesced_total.
	MetricCoalesced = "workqueue.coalesced"
	// MetricActiveWorkers: Current number of workers processing a key.
	// workqueue_active_workers.
	MetricActiveWorkers = "workqueue.active_workers"
	// MetricWorkers: Configured number of workers of the queue, as
	// controller-runtime's max_concurrent_reconciles, or an adaptive pool's
	// current limit. workqueue_workers.
	MetricWorkers = "workqueue.workers"
	// MetricStandby: 1 while the queue is standby (its workers wait for
	// leadership), 0 once it is active. workqueue_standby.
	MetricStandby = "workqueue.standby"
	// MetricReconcileResults: Total number of reconciles, by result.
	// workqueue_reconcile_results_total.
	MetricReconcileResults = "workqueue.reconcile.results"
	// MetricWorkersChanges: Total number of changes of an adaptive worker
	// pool's limit, by reason. workqueue_workers_changes_total.
	MetricWorkersChanges = "workqueue.workers.changes"
	// MetricClientRateLimiter: How long in seconds the Kubernetes API requests
	// of one reconcile waited for the client-side rate limiter.
	// workqueue_client_rate_limiter_duration_seconds.
	MetricClientRateLimiter = "workqueue.client.rate_limiter.duration"
	// MetricClientRequest: How long in seconds one reconcile spent in
	// Kubernetes API round trips. workqueue_client_request_duration_seconds.
	MetricClientRequest = "workqueue.client.request.duration"
	// MetricClientRetryAfter: How long in seconds one reconcile waited out the
	// API server's Retry-After before retrying a throttled request.
	// workqueue_client_retry_after_duration_seconds.
	MetricClientRetryAfter = "workqueue.client.retry_after.duration"
	// MetricClientRequests: Total number of Kubernetes API round trips made by
	// reconciles. workqueue_client_requests_total.
	MetricClientRequests = "workqueue.client.requests"
	// MetricClientThrottled: Total number of Kubernetes API round trips of
	// reconciles answered 429 Too Many Requests.
	// workqueue_client_throttled_total.
	MetricClientThrottled = "workqueue.client.throttled"
	// MetricHTTPClientRequestDuration: Duration of HTTP client requests.
	// http_client_request_duration_seconds.
	MetricHTTPClientRequestDuration = "http.client.request.duration"
	// MetricKubernetesClientRateLimiterDuration: How long in seconds a
	// Kubernetes API request waited for the client-side rate limiter.
	// kubernetes_client_rate_limiter_duration_seconds.
	MetricKubernetesClientRateLimiterDuration = "kubernetes.client.rate_limiter.duration"
	// MetricKubernetesClientWatches: Watch streams of the Kubernetes API open.
	// kubernetes_client_watches.
	MetricKubernetesClientWatches = "kubernetes.client.watches"
	// MetricTraceparentInvalid: Object traceparent annotations that were
	// ignored because they were too long or malformed.
	// workqueue_traceparent_invalid_total.
	MetricTraceparentInvalid = "workqueue.traceparent.invalid"
	// MetricShardShare: The part of the hash space the replica's shard covers,
	// 0 to 1: summed over the live replicas, 1 when every object has one owner.
	// workqueue_shard_share.
	MetricShardShare = "workqueue.shard.share"
	// MetricProcessCPUTime: Total CPU seconds broken down by different CPU
	// modes. process_cpu_time_seconds_total.
	MetricProcessCPUTime = "process.cpu.time"
	// MetricGoProcessorLimit: The number of OS threads that can execute
	// user-level Go code simultaneously. go_processor_limit.
	MetricGoProcessorLimit = "go.processor.limit"
	// MetricGoMemoryUsed: Memory used by the Go runtime. go_memory_used_bytes.
	MetricGoMemoryUsed = "go.memory.used"
	// MetricMemoryNeeded: The most memory the Go runtime will hold before its
	// next garbage collection. otelqueue_memory_needed_bytes.
	MetricMemoryNeeded = "otelqueue.memory.needed"
	// MetricCPURunDelay: Total time the process's threads waited on the node's
	// run queues for a CPU. otelqueue_cpu_run_delay_seconds_total.
	MetricCPURunDelay = "otelqueue.cpu.run_delay"
	// MetricCPUGCIdle: Total CPU time of the garbage collector's idle-priority
	// marking, on processors with nothing else to run.
	// otelqueue_cpu_gc_idle_seconds_total.
	MetricCPUGCIdle = "otelqueue.cpu.gc_idle"
	// MetricCPUCount: The CPUs the process may run on. otelqueue_cpu_count.
	MetricCPUCount = "otelqueue.cpu.count"
	// MetricCPULimit: CPU cores the cgroup's quota allows the process on
	// average (quota/period), when a quota is set. otelqueue_cpu_limit.
	MetricCPULimit = "otelqueue.cpu.limit"
	// MetricCPUPeriods: Enforcement periods of the cgroup's CPU quota in which
	// the cgroup ran. otelqueue_cpu_periods_total.
	MetricCPUPeriods = "otelqueue.cpu.periods"
	// MetricCPUThrottledPeriods: Enforcement periods in which the cgroup used
	// up its CPU quota and was throttled.
	// otelqueue_cpu_throttled_periods_total.
	MetricCPUThrottledPeriods = "otelqueue.cpu.throttled_periods"
	// MetricCPUThrottledTime: Total time the cgroup's threads were throttled by
	// its CPU quota. otelqueue_cpu_throttled_time_seconds_total.
	MetricCPUThrottledTime = "otelqueue.cpu.throttled_time"
	// MetricCacheObjects: Objects in the controller's informer caches.
	// otelqueue_cache_objects.
	MetricCacheObjects = "otelqueue.cache.objects"
)

// Span names.
const (
	// SpanQueued: The wait: from the earliest pending enqueue to dequeue.
	SpanQueued = "queued"
	// SpanReconcile: The work: from dequeue to done; status Error for an error
	// or a panic.
	SpanReconcile = "reconcile"
	// SpanRateLimiter: A request's wait for the client-side rate limiter, when
	// longer than 1 ms.
	SpanRateLimiter = "client rate limiter"
	// SpanRetryAfter: client-go's wait for a 429 answer's Retry-After before
	// its retry.
	SpanRetryAfter = "retry after"
)

// Span event names.
const (
	// EventReady: On queued, at the ready time, when a delay held the key.
	EventReady = "ready"
	// EventActive: On queued, where a standby ended: the wait for a worker
	// counts from here.
	EventActive = "active"
	// EventWorkersChanged: On the reconcile span whose end made an adaptive
	// pool change its count.
	EventWorkersChanged = "workers changed"
)
