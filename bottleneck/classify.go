package bottleneck

import (
	"fmt"
	"math"
	"strconv"
	"time"

	"github.com/otelqueue/otelqueue/procstat"
)

// Figures are the signals of one queue over a window, as the rules read
// them. Each group has a flag that says whether it was measured: a signal
// not measured holds no rule (a queue whose client is not instrumented
// cannot be client-rate-limit), rather than reading as zero.
type Figures struct {
	// CPU is the process's CPU over the window (its Known field says
	// whether it was read).
	CPU CPUUse
	// Client says whether attempts that ended in the window used a
	// Kubernetes client instrumented with package kubeclient; the shares
	// are of their work time.
	Client                            bool
	RetryAfterShare, RateLimiterShare float64
	// ErrorRetries is the share of the adds that were retries through the
	// rate limiter's backoff; AddsKnown says whether enough keys became
	// pending to read it (5).
	ErrorRetries float64
	AddsKnown    bool
	// Workers is the configured worker count (0: unknown), LittlesLaw the
	// count the load needs; WorkKnown says whether the mean work time, and
	// so Little's law, are known (Window: at least 5 finished).
	Workers, LittlesLaw int
	WorkKnown           bool
	// Utilization is the workers' busy time over the time they had.
	Utilization float64
	// APIServer is how the API server answered the process's instrumented
	// clients (its Known field says whether it was read).
	APIServer APIServerUse
	// CPUWaitShare is the share of the work time the node's CPU held back:
	// the time the process's threads waited on the node's run queues for a
	// CPU (CPUUse.RunDelay) over the workers' busy time, and no more than
	// the share of the CPU the threads wanted that they waited
	// (CPUUse.Starved), so that a queue which is a small part of a busy
	// process is not charged the wait of the rest. CPUWaitKnown says
	// whether it was read: the run delay, at least a tenth of a core of it
	// (less is the wakeups of a quiet process, which a short work time
	// would magnify), enough reconciles for a work time (5),
	// and workers busy at least downstreamShare of their time (under it,
	// the wait lengthens reconciles beside idle workers, and no key waits
	// behind them).
	CPUWaitShare float64
	CPUWaitKnown bool
}

// CPUUse is the CPU of the process over a window, from the Go runtime and
// the kernel (package procstat reads it).
type CPUUse struct {
	// Known says whether the figures were read (a window of some length).
	Known bool
	// Used is the CPU cores used on average, Cores those the process has:
	// the cgroup's quota, else GOMAXPROCS (the lower).
	Used, Cores float64
	// Throttled is the share of the cgroup's enforcement periods in which
	// the process was throttled; ThrottledKnown says whether a quota was in
	// force and periods passed.
	Throttled      float64
	ThrottledKnown bool
	// SchedLatencyP99 is the 99th percentile of the time goroutines waited,
	// runnable, for a thread to run on (runtime/metrics
	// /sched/latencies:seconds): shown beside the class, not a rule.
	SchedLatencyP99 time.Duration
	// GCIdle is the cores of Used that the garbage collector's
	// idle-priority marking took: it runs only on processors with nothing
	// else to do, so it is no demand of the process's work, and the
	// utilization leaves it out (a large heap's idle marking made a quiet
	// process read busy).
	GCIdle float64
	// RunDelay is the cores' worth of time the process's threads spent
	// waiting on the node's run queues for a CPU (procstat's
	// Window.RunDelay per second of the window), RunDelayKnown whether it
	// was read: the CPU the node did not give them.
	RunDelay      float64
	RunDelayKnown bool
	// MaxProcs is GOMAXPROCS, Available the cores the process may use
	// whatever GOMAXPROCS says: the least of the node's CPUs and the
	// cgroup's quota (0: unknown). MaxProcs under Available is a process
	// that runs its Go code on fewer threads than it may.
	MaxProcs  int
	Available float64
}

// Utilization is Used, less the idle GC's, over Cores; 0 when unknown.
func (c CPUUse) Utilization() float64 {
	if !c.Known || c.Cores <= 0 {
		return 0
	}
	return max(0, c.Used-c.GCIdle) / c.Cores
}

// minCPU is the least CPU, in cores, that a wait for it is read against:
// a tenth of a core. Under it, the waits are those of a quiet process's
// wakeups, not of work held back.
const minCPU = 0.1

// Starved returns the share of the CPU the process's threads wanted that
// the node did not give them: RunDelay over it and Used; false when unknown
// or when they wanted less than a tenth of a core.
func (c CPUUse) Starved() (float64, bool) {
	if !c.Known || !c.RunDelayKnown || c.RunDelay+c.Used < minCPU {
		return 0, false
	}
	return c.RunDelay / (c.RunDelay + c.Used), true
}

// maxProcsBound returns the share of GOMAXPROCS the process used (less the
// idle GC's), and false unless GOMAXPROCS is below the cores it may use:
// only then is GOMAXPROCS, not the CPU, what limits it.
func (c CPUUse) maxProcsBound() (float64, bool) {
	if !c.Known || c.MaxProcs <= 0 || c.Available <= 0 || float64(c.MaxProcs) > c.Available-0.01 {
		return 0, false
	}
	return max(0, c.Used-c.GCIdle) / float64(c.MaxProcs), true
}

// Value returns the value of signal s and whether it was measured.
func (f Figures) Value(s Signal) (float64, bool) {
	switch s {
	case signalAPIServerUnavailable:
		return f.APIServer.Unavailable, f.APIServer.Known
	case signalAPIServerLatency:
		return f.APIServer.Latency.Seconds(), f.APIServer.Known && f.APIServer.LatencyKnown
	case signalCPUUtilization:
		return f.CPU.Utilization(), f.CPU.Known && f.CPU.Cores > 0
	case signalCPUMaxProcs:
		return f.CPU.maxProcsBound()
	case signalCPUWaitShare:
		return f.CPUWaitShare, f.CPUWaitKnown
	case signalCPUThrottled:
		return f.CPU.Throttled, f.CPU.Known && f.CPU.ThrottledKnown
	case signalRetryAfterShare:
		return f.RetryAfterShare, f.Client
	case signalRateLimiterShare:
		return f.RateLimiterShare, f.Client
	case signalErrorRetries:
		return f.ErrorRetries, f.AddsKnown
	case signalWorkersNeeded:
		if f.Workers <= 0 || !f.WorkKnown {
			return 0, false
		}
		return float64(f.LittlesLaw) / float64(f.Workers), true
	}
	return 0, false
}

// Verdict is what limits a queue, with the figure that decided it.
type Verdict struct {
	Class Class
	// Rule is the rule that held; its Class is empty for None.
	Rule Rule
	// Figure is the value of the rule's signal; for None, the utilization.
	// For Workers it is the Little's-law count, as the summary line prints
	// it.
	Figure float64
}

// Classify returns the class of the first rule of the table that holds for
// f, or None.
func Classify(f Figures) Verdict {
	for _, r := range rules {
		v, ok := f.Value(r.Signal)
		if !ok || !r.holds(v) {
			continue
		}
		if r.Signal == signalWorkersNeeded {
			v = float64(f.LittlesLaw)
		}
		return Verdict{Class: r.Class, Rule: r, Figure: v}
	}
	return Verdict{Class: None, Figure: f.Utilization}
}

// Recommend returns the worker count to run with, for the configured count
// workers and the Little's-law count law: law when the class may ask for
// more workers or is None (then law is at most workers), and never more
// than workers otherwise.
func (v Verdict) Recommend(workers, law int) int {
	if v.Class == None || v.Rule.MoreWorkers || workers <= 0 {
		return law
	}
	return min(law, workers)
}

// MoreWorkers says whether the verdict lets the worker count grow.
func (v Verdict) MoreWorkers() bool { return v.Class == None || v.Rule.MoreWorkers }

// String is "bottleneck=<class> (<signal> <figure> <comparison> <threshold>)"
// with what to change, as the examples' summary line prints it.
func (v Verdict) String() string {
	switch v.Class {
	case None:
		return fmt.Sprintf("bottleneck=none (utilization %.2f)", v.Figure)
	case Workers:
		return fmt.Sprintf("bottleneck=workers (Little's law %.0f > configured)", v.Figure)
	case "":
		return "bottleneck=unknown"
	}
	suffix := ", not workers"
	if v.Class == APIServerSlow {
		suffix = "" // its Change says when more workers help
	}
	return fmt.Sprintf("bottleneck=%s (%s %.2f %s %s: %s%s)", v.Class, v.Rule.Signal, v.Figure,
		v.Rule.Comparison(), strconv.FormatFloat(v.Rule.Threshold, 'f', -1, 64), v.Rule.Change, suffix)
}

// littlesLaw returns the worker count that keeps a queue at
// TargetUtilization: ⌈arrivals/s × mean work time / TargetUtilization⌉, at
// least 1.
func littlesLaw(arrivalsPerSecond float64, meanWork time.Duration) int {
	// The epsilon keeps an exact quotient (7/s × 100 ms / 0.7 = 1) from
	// rounding up on a floating-point residue.
	n := math.Ceil(arrivalsPerSecond*meanWork.Seconds()/TargetUtilization - 1e-9)
	if math.IsNaN(n) || n < 1 {
		return 1
	}
	if n > math.MaxInt32 {
		return math.MaxInt32
	}
	return int(n)
}

// ProcessCPU returns the CPU figures of a procstat window (two
// procstat.Reader samples, procstat.Between): Known when the CPU time and
// the cores were read.
func ProcessCPU(w procstat.Window) CPUUse {
	if !w.CPUKnown || w.Duration <= 0 || w.Cores <= 0 {
		return CPUUse{}
	}
	c := CPUUse{
		Known: true, Used: w.Used(), Cores: w.Cores,
		Throttled: w.Throttled, ThrottledKnown: w.ThrottledKnown,
		SchedLatencyP99: w.SchedP99,
		GCIdle:          w.GCIdle.Seconds() / w.Duration.Seconds(),
		MaxProcs:        w.MaxProcs, Available: w.Available,
	}
	if w.RunDelayKnown {
		c.RunDelay, c.RunDelayKnown = w.RunDelay.Seconds()/w.Duration.Seconds(), true
	}
	return c
}
