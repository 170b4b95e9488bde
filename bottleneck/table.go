package bottleneck

import (
	"fmt"
	"math"
	"strconv"
)

// Class names what limits a queue.
type Class string

// The classes, in the order of precedence of Rules: the first whose rule
// holds wins. None is what is left.
const (
	// APIServerUnavailable: the API server fails the process's requests:
	// connections refused or reset, timeouts, 5xx answers (an API server
	// restarting, etcd down). The reconcile is not at fault, and more
	// workers only retry faster; the queue drains once the server is back.
	APIServerUnavailable Class = "apiserver-unavailable"
	// CPU: the process uses the CPU it has (its cgroup quota, else
	// GOMAXPROCS), or is throttled by its quota in most periods. More
	// workers only share the same CPU: give the controller more, or make
	// each reconcile cheaper.
	CPU Class = "cpu"
	// ServerThrottling: the reconciles spend a share of their time waiting
	// out the API server's Retry-After after HTTP 429 (API Priority and
	// Fairness).
	ServerThrottling Class = "server-throttling"
	// ClientRateLimit: the reconciles spend a share of their time waiting
	// for the client-side rate limiter (rest.Config QPS and Burst).
	ClientRateLimit Class = "client-rate-limit"
	// APIServerSlow: the API server answers single-object requests slowly
	// without 429s (a slow admission webhook, etcd stalling on its disk,
	// requests queued by API Priority and Fairness). Whether more workers
	// help depends on whether the server has room, which only a change of
	// the count tells: the recommendation does not ask for more.
	APIServerSlow Class = "apiserver-slow"
	// Errors: most keys that became pending are retries through the rate
	// limiter's backoff (failed reconciles, Result.Requeue). Requeues at a
	// time the reconcile chose (RequeueAfter) are not counted.
	Errors Class = "errors"
	// Workers: Little's law needs more workers than are configured.
	Workers Class = "workers"
	// None: no rule holds.
	None Class = "none"
)

// Signal names a figure a rule reads (Figures.Value): the Signal of a
// Rule of Rules. Its string is the name the docs and the generated
// artifacts use.
type Signal string

// The signals, one per rule.
const (
	// signalAPIServerUnavailable is the share of the process's API round
	// trips that failed for the API server (APIServerUse.Unavailable).
	signalAPIServerUnavailable Signal = "apiserver_unavailable"
	// signalCPUUtilization is the CPU the process used over the cores it
	// has: the cgroup's quota, else GOMAXPROCS (0..1, a little above with
	// rounding).
	signalCPUUtilization Signal = "cpu_utilization"
	// signalCPUThrottled is the share of the cgroup's enforcement periods
	// in which the process was throttled (0..1).
	signalCPUThrottled Signal = "cpu_throttled"
	// signalCPUMaxProcs is the CPU the process used over GOMAXPROCS, read
	// only when GOMAXPROCS is below the cores it may use (the node's CPUs,
	// its quota): then GOMAXPROCS, not the CPU, is its limit (0..1).
	signalCPUMaxProcs Signal = "cpu_maxprocs"
	// signalCPUWaitShare is the time the process's threads waited on the
	// node's run queues for a CPU over the queue's work time (Figures.CPUWaitShare).
	signalCPUWaitShare Signal = "cpu_wait_share"
	// signalRetryAfterShare is the time waiting out Retry-After over the
	// work time of the attempts that used an instrumented client.
	signalRetryAfterShare Signal = "retry_after_share"
	// signalRateLimiterShare is the time waiting for the client's rate
	// limiter over that work time.
	signalRateLimiterShare Signal = "rate_limiter_share"
	// signalAPIServerLatency is the mean time of the process's
	// single-object API reads, or of its writes if more, in seconds
	// (APIServerUse.Latency).
	signalAPIServerLatency Signal = "apiserver_latency"
	// signalErrorRetries is the adds through the rate limiter's backoff
	// (scheduler.Stats Retries − DelayedAdds) over the adds that made a key
	// pending.
	signalErrorRetries Signal = "error_retries"
	// signalWorkersNeeded is the Little's-law worker count over the
	// configured workers.
	signalWorkersNeeded Signal = "workers_needed"
)

// Thresholds of the rules (their Threshold in Rules, and the numbers their
// Holds texts say), and the utilizations the figures use. Everything that
// classifies reads them from here or from Rules: otelqueue's adaptive
// pool, the examples' summary line, and the generated Prometheus rules and
// queue-figures.sh (example/prometheus).
const (
	// apiServerUnavailableShare: apiserver-unavailable holds from this
	// share of the round trips failed.
	apiServerUnavailableShare = 0.25
	// apiServerSlowLatency: apiserver-slow holds from this mean time of a
	// single-object round trip, in seconds: a quarter of the 1 s that
	// Kubernetes' API call latency SLO allows such a call at the 99th
	// percentile, and many times what a healthy server takes (a few
	// milliseconds here, tens in large clusters).
	apiServerSlowLatency = 0.25
	// cpuUtilizationShare: the CPU class holds from this share of the
	// cores used.
	cpuUtilizationShare = 0.9
	// cpuThrottledShare: the CPU class holds from this share of the
	// cgroup's periods throttled.
	cpuThrottledShare = 0.5

	// downstreamShare: server-throttling, client-rate-limit and the CPU
	// class of a busy node hold from this share of the work time spent
	// waiting on the limit (the server, the client, the node's CPU).
	downstreamShare = 0.25
	// errorRetriesShare: errors holds above this share of the adds.
	errorRetriesShare = 0.5
	// TargetUtilization is the utilization the recommended worker count
	// and the cores needed aim at: headroom for bursts without idling most
	// of what is paid for.
	TargetUtilization = 0.7
)

// Rule is one row of the table: a class holds when its signal is above the
// threshold (or at it, when Inclusive) and no earlier rule holds.
type Rule struct {
	Class     Class
	Signal    Signal
	Threshold float64
	Inclusive bool
	// Holds says in words when the rule holds.
	Holds string
	// Change is what to change when the class holds.
	Change string
	// MoreWorkers says whether the recommendation may ask for more workers
	// than are configured: only for Workers. Every other class keeps the
	// recommendation at or under the configured count, since more workers
	// only wait longer on the same limit or retry faster.
	MoreWorkers bool
}

// rules is the table, in the order of precedence.
var rules = [...]Rule{
	{
		Class: APIServerUnavailable, Signal: signalAPIServerUnavailable, Threshold: apiServerUnavailableShare, Inclusive: true,
		Holds:  "at least " + pct(apiServerUnavailableShare) + " of the process's API requests failed for the API server (connection errors, timeouts, 5xx)",
		Change: "bring the control plane back (kube-apiserver, etcd, a failing webhook); the reconciles are not at fault, more workers only retry faster",
	},
	{
		Class: CPU, Signal: signalCPUMaxProcs, Threshold: cpuUtilizationShare, Inclusive: true,
		Holds:  "the process used at least " + pct(cpuUtilizationShare) + " of GOMAXPROCS, which is below the cores it may use (the node's CPUs, its CPU limit)",
		Change: "raise GOMAXPROCS, or unset it (the Go runtime sets it from the CPU limit); not the CPU limit, which it does not reach, nor workers",
	},
	{
		Class: CPU, Signal: signalCPUUtilization, Threshold: cpuUtilizationShare, Inclusive: true,
		Holds:  "the process used at least " + pct(cpuUtilizationShare) + " of the cores it has (the least of the cgroup's CPU quota and GOMAXPROCS), the idle GC's marking left out",
		Change: "give the controller more CPU (its CPU limit, or a node with more) or make each reconcile cheaper; more workers only share the same cores",
	},
	{
		Class: CPU, Signal: signalCPUThrottled, Threshold: cpuThrottledShare, Inclusive: true,
		Holds:  "the cgroup throttled the process in at least " + pct(cpuThrottledShare) + " of its CPU periods",
		Change: "raise the controller's CPU limit or make each reconcile cheaper; more workers only hit the quota sooner",
	},
	{
		Class: CPU, Signal: signalCPUWaitShare, Threshold: downstreamShare, Inclusive: true,
		Holds:  "the process's threads waited on the node's run queues for a CPU at least " + pct(downstreamShare) + " of the work time (and of the CPU they wanted), while the workers were busy at least " + pct(downstreamShare) + " of their time",
		Change: "the node's other processes take the CPU it asks for: raise its CPU request (the scheduler places it where that is free, and the kernel weighs it by it) or move it off the busy node; more workers only wait longer",
	},
	{
		Class: ServerThrottling, Signal: signalRetryAfterShare, Threshold: downstreamShare, Inclusive: true,
		Holds:  "the reconciles spent at least " + pct(downstreamShare) + " of their work time waiting out the API server's Retry-After (HTTP 429)",
		Change: "give the controller a larger API Priority and Fairness share on the server (its FlowSchema's PriorityLevelConfiguration) or make fewer API calls",
	},
	{
		Class: ClientRateLimit, Signal: signalRateLimiterShare, Threshold: downstreamShare, Inclusive: true,
		Holds:  "the reconciles spent at least " + pct(downstreamShare) + " of their work time waiting for the client-side rate limiter",
		Change: "raise the client's QPS/Burst (rest.Config) or make fewer API calls",
	},
	{
		Class: APIServerSlow, Signal: signalAPIServerLatency, Threshold: apiServerSlowLatency, Inclusive: true,
		Holds:  "the process's single-object API reads or writes took at least " + ms(apiServerSlowLatency) + " on average, without the API server's 429s",
		Change: "find what slows the API server (admission webhooks, etcd, API Priority and Fairness queuing) or make fewer API calls; more workers help only while the server has room, which only a change of the count tells: try a step and watch the work time",
	},
	{
		Class: Errors, Signal: signalErrorRetries, Threshold: errorRetriesShare,
		Holds:  "more than " + pct(errorRetriesShare) + " of the keys that became pending were retries through the rate limiter's backoff (RequeueAfter not counted)",
		Change: "fix the reconcile's errors, they are most of the work",
	},
	{
		Class: Workers, Signal: signalWorkersNeeded, Threshold: 1,
		Holds:       "Little's law needs more workers than are configured",
		Change:      "raise the workers to the recommended count",
		MoreWorkers: true,
	},
}

// pct is a share as the Holds texts write it: "25%".
func pct(x float64) string { return strconv.FormatFloat(100*x, 'f', -1, 64) + "%" }

// ms is a time in seconds as the Holds texts write it: "250 ms".
func ms(seconds float64) string { return strconv.FormatFloat(1000*seconds, 'f', -1, 64) + " ms" }

// Rules returns the table, in the order of precedence: a copy, which the
// caller may change.
func Rules() []Rule { return append([]Rule(nil), rules[:]...) }

// holds tells whether the rule holds for the signal's value v.
func (r Rule) holds(v float64) bool {
	if math.IsNaN(v) {
		return false
	}
	if r.Inclusive {
		return v >= r.Threshold
	}
	return v > r.Threshold
}

// Comparison is the rule's comparison operator: ">=" or ">".
func (r Rule) Comparison() string {
	if r.Inclusive {
		return ">="
	}
	return ">"
}

// String is the rule as "class: signal >= threshold".
func (r Rule) String() string {
	return fmt.Sprintf("%s: %s %s %s", r.Class, r.Signal, r.Comparison(), strconv.FormatFloat(r.Threshold, 'g', -1, 64))
}
