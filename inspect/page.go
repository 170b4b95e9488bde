package inspect

import (
	"time"

	"github.com/otelqueue/otelqueue/bottleneck"
)

// Page is what an otelqueue.Inspector shows, and its JSON form.
type Page struct {
	// At is when the page was made.
	At time.Time `json:"at"`
	// Shard is the replica's shard, its Inspector's shard.Shard: "1 of 3
	// by uid" (or "by uid" for explicit ranges) and its selector; empty
	// for a replica that is not sharded.
	Shard string `json:"shard,omitempty"`
	// Recommendation is the Inspector's otelqueue.Sizer's, nil without one.
	Recommendation *bottleneck.Recommendation `json:"recommendation,omitempty"`
	Queues         []Queue                    `json:"queues"`
}

// Queue is one queue on an Inspector's page.
type Queue struct {
	Name    string `json:"name"`
	Standby bool   `json:"standby"`
	// Depth, Delayed, Held and InFlight are those of scheduler.Stats;
	// OldestPending the wait of the oldest key ready.
	Depth         int           `json:"depth"`
	Delayed       int           `json:"delayed"`
	Held          int           `json:"held"`
	InFlight      int           `json:"in_flight"`
	OldestPending time.Duration `json:"oldest_pending_ns"`
	// Pending counts the keys waiting by priority and wait reason.
	Pending []Count `json:"pending"`
	// Oldest are the keys that have waited longest, Running the runs in
	// flight that have run longest: at most the Inspector's Limit each
	// (20 by default, 1000 at most).
	Oldest  []Key `json:"oldest"`
	Running []Run `json:"running"`
	// Failures are the last failed attempts, the latest first (at most
	// 20): those of an otelqueue.Runner, of package controllerruntime's
	// Reconciler, and those given to
	// otelqueue.Instrumentation.RecordFailure.
	Failures []Failure `json:"failures"`
	// Adaptive is the adaptive pool's state, when the queue has one, and
	// Decisions its last decisions (at most 8), the latest first.
	Adaptive  *Pool      `json:"adaptive,omitempty"`
	Decisions []Decision `json:"decisions,omitempty"`
	// Bottleneck is what limits the queue over this Inspector's last
	// window.
	Bottleneck *Bottleneck `json:"bottleneck"`
}

// Count is the number of keys waiting with one priority and wait
// reason in one place: "ready" (counted in Depth), "delayed" (Delayed) or
// "held" (Held). A key held until its run ended is ready, with the reason
// held (scheduler.PendingCount).
type Count struct {
	Priority int    `json:"priority"`
	Reason   string `json:"reason"`
	Place    string `json:"place"`
	Keys     int    `json:"keys"`
}

// Key is a key waiting.
type Key struct {
	Key string `json:"key"`
	// Wait is how long since its earliest add still pending.
	Wait time.Duration `json:"wait_ns"`
	// ReadyIn is how long until it may run, for a key delayed (0: ready).
	ReadyIn time.Duration `json:"ready_in_ns"`
	// Reason is why it waits; Trigger what the add that set its ready
	// time came from (scheduler.Trigger): why it will run.
	Reason  string `json:"reason"`
	Trigger string `json:"trigger"`
	// Source is where the trigger's event came from, when the add said
	// (scheduler.AddOptions.Source: with package controllerruntime's
	// handlers, the watched object's kind).
	Source   string `json:"source,omitempty"`
	Priority int    `json:"priority"`
	// Attempts is the attempt its next run will be (1 + the rate
	// limiter's failures); Coalesced the adds merged into it.
	Attempts  int `json:"attempts"`
	Coalesced int `json:"coalesced"`
	// EnqueuedBy is the trace id of the first add that carried a trace
	// context; LastAttempt that of the attempt a retry follows. Empty when
	// none.
	EnqueuedBy  string `json:"enqueued_by,omitempty"`
	LastAttempt string `json:"last_attempt,omitempty"`
}

// Run is a run in flight.
type Run struct {
	Key     string        `json:"key"`
	Running time.Duration `json:"running_ns"`
	// Trigger is why it runs (scheduler.Trigger); Source where its event
	// came from, if the add said.
	Trigger string `json:"trigger"`
	Source  string `json:"source,omitempty"`
	// TraceID is the attempt's trace id, when it is traced.
	TraceID string `json:"trace_id,omitempty"`
}

// Failure is one of the last failed attempts of a queue, as the
// Inspector shows them.
type Failure struct {
	Key string    `json:"key"`
	At  time.Time `json:"at"`
	// Outcome is error or panic.
	Outcome string `json:"outcome"`
	// Error is the error's text, cut at 1024 bytes.
	Error string `json:"error"`
	// TraceID is the attempt's trace id, when it was traced.
	TraceID string `json:"trace_id,omitempty"`
}

// Decision is one of the last decisions of a queue's adaptive
// pool, as the Inspector shows them: every decision, a change of the
// count or a hold, as its "adaptive workers" log line says it.
type Decision struct {
	At time.Time `json:"at"`
	// From and To are the count before and after (equal for a hold).
	From int `json:"from"`
	To   int `json:"to"`
	// Reason is the rule's reason (a Pool.Reason value); Detail
	// the figures that decided it.
	Reason string `json:"reason"`
	Detail string `json:"detail"`
}

// Bottleneck is what limits a queue (package bottleneck's table)
// over a window. For a queue the Inspector's Sizer sizes, the window is the
// Sizer's last (between its last two readings, otelqueue.Sizer.Interval apart, the
// workers the more of its two ends): the same for every reader and every
// look until the next reading, with the process's CPU from the first look
// on. Otherwise it is an Inspector's own: from its previous look that
// ended a window to this one, or, at its first look at a queue, from when
// the queue was instrumented, kept apart from other Inspectors'. Either
// way the window holds whole-queue counters only (scheduler.Stats,
// ClientStats and the process's CPU): nothing is recorded for it on the
// queue's hot path.
type Bottleneck struct {
	// Class is the bottleneck class (bottleneck.Class), "" while unknown:
	// the queue's first window is shorter than 5 seconds, the
	// queue is standby (nothing limits a queue no worker may take), or keys
	// came and no reconcile finished in the window (the workers are not
	// running or are stuck; the control plane's classes excepted).
	Class string `json:"class"`
	// Verdict is the figure and threshold that decided the class and what
	// to change (bottleneck.Verdict's String without its class), or why
	// there is no class.
	Verdict string `json:"verdict"`
	// Since is the window's start (on the queue's clock), Window its
	// length.
	Since  time.Time     `json:"since"`
	Window time.Duration `json:"window_ns"`
	// Workers is the worker count the window was read with: the adaptive
	// pool's limit, the Runners' workers, WithWorkers, or the scheduler's
	// MaxInFlight; 0 when none is known (then the window has no
	// utilization and no workers class). Recommended is the count the
	// verdict recommends (bottleneck.Verdict.Recommend), 0 when fewer than
	// 5 reconciles finished.
	Workers     int `json:"workers"`
	Recommended int `json:"recommended,omitempty"`
	// Utilization is the workers' busy time over the time they had;
	// Arrivals and Reconciles are per second; MeanWork is the mean time of
	// a reconcile that finished.
	Utilization float64       `json:"utilization"`
	Arrivals    float64       `json:"arrivals_per_second"`
	Reconciles  float64       `json:"reconciles_per_second"`
	MeanWork    time.Duration `json:"mean_work_ns"`
	// CPU is the process's CPU cores used over the window, CPUCores those
	// it has; both 0 when unknown (the first window, a queue on a fake
	// clock, or a platform procstat cannot read).
	CPU      float64 `json:"cpu_used_cores,omitempty"`
	CPUCores float64 `json:"cpu_cores,omitempty"`
}

// Pool is the state of a queue's adaptive worker pool
// (otelqueue.AdaptiveWorkers).
type Pool struct {
	// Limit is the number of keys the queue hands out at once now; Min and
	// Max its bounds (Max is the lower of AdaptiveWorkers.Max and the
	// workers given with WithWorkers).
	Limit int `json:"limit"`
	Min   int `json:"min"`
	Max   int `json:"max"`
	// Needed is the count the last decision found the demand needs, before
	// the bounds and the ceiling; 0 before the first.
	Needed int `json:"needed"`
	// Ceiling is the count a downstream limit holds the pool at or under,
	// 0 when none. The pool comes down to it by halves, so Limit may be
	// above it for an interval or two after it is set.
	Ceiling int `json:"ceiling"`
	// Changes counts the changes of Limit; Reason is the last one's and
	// Detail the figures that decided it, as in its log line; Changed is
	// when it happened. The reasons (also the "reason" of the pool's log
	// lines, span events and workqueue.workers.changes):
	//   - demand: the arrivals and the backlog need more workers than the
	//     limit (the square-root staffing estimate, docs/tuning.md);
	//   - wait: the queue wait is above the objective with the workers busy;
	//   - low-utilization: the demand needs well under the limit, two
	//     intervals in a row;
	//   - client-rate-limit, server-throttling, latency-gradient: more
	//     reconciles run at once than the downstream serves, and the time
	//     the others lose goes to the client's rate limiter, to the API
	//     server's Retry-After, or to each reconcile taking longer than with
	//     fewer at once;
	//   - cpu: the process uses the CPU it has, and more reconciles run at
	//     once than the CPU serves at no-load speed;
	//   - probe: a step above the ceiling a downstream limit set, to see
	//     whether the limit is still there;
	//   - slower-for-all: after a shrink for a latency gradient the work took
	//     as long as before: the downstream got slower for everyone, and the
	//     ceiling is lifted;
	//   - uninstrumented: the queue's instrumentation stopped, and the pool
	//     went back to the Runner's worker count.
	Changes uint64    `json:"changes"`
	Reason  string    `json:"reason,omitempty"`
	Detail  string    `json:"detail,omitempty"`
	Changed time.Time `json:"changed"`
}
