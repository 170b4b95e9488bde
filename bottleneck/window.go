package bottleneck

import (
	"fmt"
	"math"
	"time"

	"github.com/otelqueue/otelqueue/internal/sizing"
)

// Window is what one queue did over an interval: the differences of two
// readings of its cumulative numbers (scheduler.Stats, a Runner's Stats or
// the workers' busy time, otelqueue.ClientStats) and the process's CPU over
// the same interval (package procstat). Example_window shows how to fill it.
type Window struct {
	// Name is the queue's name (scheduler.Config.Name), for the
	// recommendation of a process with several queues (Span).
	Name string
	// Duration is the interval's length.
	Duration time.Duration
	// Workers is the configured worker count (or an adaptive pool's count),
	// 0 when unknown.
	Workers int
	// Adds, Coalesced, Retries and DelayedAdds are the differences of
	// scheduler.Stats' fields.
	Adds, Coalesced, Retries, DelayedAdds uint64
	// Reconciles is the number of reconciles that finished, Busy the time
	// the workers spent reconciling (those still running included, so that
	// Busy never exceeds Workers × Duration).
	Reconciles uint64
	Busy       time.Duration
	// Client is where the attempts that used an instrumented client and
	// ended in the window spent their time.
	Client Client
	// CPU is the process's CPU over the window.
	CPU CPUUse
	// APIServer is how the API server answered the process's instrumented
	// clients over the window (APIServerBetween), with Known cleared for a
	// queue whose reconciles make no API calls.
	APIServer APIServerUse
	// ProcessReconciles is the number of reconciles every queue of the
	// process finished in the window, over which the process's CPU is
	// spread for CPU per reconcile; 0: Reconciles (a process with one
	// queue).
	ProcessReconciles uint64
}

// Client is where the time of the attempts that used a Kubernetes client
// instrumented with package kubeclient went (the differences of
// otelqueue.ClientStats' fields).
type Client struct {
	// Used says whether any attempt that ended in the window used one:
	// without, the waits are unknown rather than zero.
	Used bool
	// Work is those attempts' work time, of which the others are parts.
	Work, RateLimiterWait, RequestTime, RetryAfterWait time.Duration
}

// Share returns d as a share of the client attempts' work time, 0 when
// none.
func (c Client) Share(d time.Duration) float64 {
	if c.Work <= 0 {
		return 0
	}
	return d.Seconds() / c.Work.Seconds()
}

// Own is the share of the work time spent outside the client (the
// reconcile's own work), at least 0.
func (c Client) Own() float64 {
	return max(0, 1-c.Share(c.RateLimiterWait)-c.Share(c.RequestTime)-c.Share(c.RetryAfterWait))
}

// Seconds is the window's length in seconds.
func (w Window) Seconds() float64 { return w.Duration.Seconds() }

// Utilization is the busy time over the time the workers had:
// Busy / (Workers × Duration); 0 when either is unknown.
func (w Window) Utilization() float64 {
	if w.Duration <= 0 || w.Workers <= 0 {
		return 0
	}
	return w.Busy.Seconds() / (float64(w.Workers) * w.Seconds())
}

// Arrivals is the rate at which work arrives, in keys per second: the adds
// that became work and, once the queue is saturated (utilization 0.9 or more), the
// coalesced adds too.
func (w Window) Arrivals() float64 {
	if w.Duration <= 0 {
		return 0
	}
	if w.Utilization() >= sizing.SaturatedAt {
		return float64(w.Adds+w.Coalesced) / w.Seconds()
	}
	return float64(w.Adds) / w.Seconds()
}

// MeanWork is the mean time of one reconcile, 0 when none finished.
func (w Window) MeanWork() time.Duration {
	if w.Reconciles == 0 {
		return 0
	}
	return w.Busy / time.Duration(w.Reconciles)
}

// LittlesLaw is the worker count the window's load needs at
// TargetUtilization: ⌈arrivals/s × mean work time / TargetUtilization⌉,
// at least 1.
func (w Window) LittlesLaw() int { return littlesLaw(w.Arrivals(), w.MeanWork()) }

// ErrorRetries returns the share of the adds that were retries through the
// rate limiter's backoff, and false when fewer than 5 keys
// became pending: the share of one or two adds says nothing of the queue
// (one retry in a second of a restarting API server is no errors class).
func (w Window) ErrorRetries() (float64, bool) {
	if w.Adds < sizing.MinReconciles {
		return 0, false
	}
	backoff := w.Retries - min(w.DelayedAdds, w.Retries)
	return float64(backoff) / float64(w.Adds), true
}

// Figures returns the window's signals.
func (w Window) Figures() Figures {
	f := Figures{
		CPU:         w.CPU,
		APIServer:   w.APIServer,
		Client:      w.Client.Used && w.Client.Work > 0,
		Workers:     w.Workers,
		WorkKnown:   w.Reconciles >= sizing.MinReconciles,
		Utilization: w.Utilization(),
	}
	if f.Client {
		f.RetryAfterShare = w.Client.Share(w.Client.RetryAfterWait)
		f.RateLimiterShare = w.Client.Share(w.Client.RateLimiterWait)
	}
	f.ErrorRetries, f.AddsKnown = w.ErrorRetries()
	if w.CPU.Known && w.CPU.RunDelayKnown && w.CPU.RunDelay >= minCPU && f.WorkKnown && f.Utilization >= downstreamShare {
		// The threads' wait is the process's, the busy time the queue's.
		// The work waited at most all of that wait (over the work time),
		// and, were the wait spread over all the process wanted, the share
		// of what it wanted that it waited: a queue that is a small part
		// of a busy process is not charged the wait of the rest.
		f.CPUWaitShare, f.CPUWaitKnown = w.CPU.RunDelay/max(w.Busy.Seconds()/w.Seconds(), w.CPU.RunDelay+w.CPU.Used), true
	}
	if f.WorkKnown {
		f.LittlesLaw = w.LittlesLaw()
	}
	return f
}

// Classify returns what limits the queue over the window.
//
// A window in which keys came and no reconcile finished has no class (the
// zero Verdict, "bottleneck=unknown"), unless the control plane failed or
// stalled the requests, which is why nothing finished (apiserver-unavailable,
// apiserver-slow): no figure tells which limit holds workers that finish
// nothing (not started, or stuck in long reconciles). An idle window (no
// key came) is classified as any other: none, unless the process or the
// control plane is limited.
func (w Window) Classify() Verdict {
	v := Classify(w.Figures())
	if w.Reconciles == 0 && w.Adds > 0 && v.Class != APIServerUnavailable && v.Class != APIServerSlow {
		return Verdict{}
	}
	return v
}

// Size is what the window says of the controller's size.
type Size struct {
	// CPUPerReconcile is the process's CPU time over the reconciles it
	// finished: an upper bound of one reconcile's, since it includes what
	// the process does besides (informers, garbage collection, telemetry).
	CPUPerReconcile time.Duration
	// Cores is the cores the queue's arrivals need at TargetUtilization:
	// arrivals/s × CPUPerReconcile / TargetUtilization. For a process, sum
	// it over its queues.
	Cores float64
	// Known says whether the CPU was read and reconciles finished.
	Known bool
}

// Size returns the CPU per reconcile and the cores the arrivals need.
func (w Window) Size() Size {
	n := w.ProcessReconciles
	if n == 0 {
		n = w.Reconciles
	}
	if !w.CPU.Known || n == 0 || w.Duration <= 0 {
		return Size{}
	}
	cpu := w.CPU.Used * w.Seconds() / float64(n) // seconds
	cores := w.Arrivals() * cpu / TargetUtilization
	if math.IsNaN(cores) || math.IsInf(cores, 0) {
		return Size{}
	}
	return Size{CPUPerReconcile: time.Duration(cpu * float64(time.Second)), Cores: cores, Known: true}
}

// String is "cpu/reconcile=<CPU per reconcile> cores-needed=<cores>", or
// "size unknown".
func (s Size) String() string {
	if !s.Known {
		return "size unknown"
	}
	return fmt.Sprintf("cpu/reconcile=%v cores-needed=%.2f", s.CPUPerReconcile.Round(10*time.Microsecond), s.Cores)
}
