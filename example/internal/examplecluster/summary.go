package examplecluster

import (
	"fmt"
	"github.com/otelqueue/otelqueue/inspect"
	"strings"
	"sync"
	"time"

	"github.com/otelqueue/otelqueue/bottleneck"
	"github.com/otelqueue/otelqueue/kubeclient"
	"github.com/otelqueue/otelqueue/otelqueue"
	"github.com/otelqueue/otelqueue/procstat"
	"github.com/otelqueue/otelqueue/scheduler"
	"github.com/otelqueue/otelqueue/shard"
)

// behindBelow is the fraction of the requested writes under which the
// workload says it is behind.
const behindBelow = 0.9

// Busy measures the time spent in something, e.g. the workers' time in
// reconciles for the utilization (neither the Runner nor controller-runtime
// exposes it): the calls finished and, up to the moment of reading, those
// still running, so that an interval's busy time never exceeds workers ×
// interval.
type Busy struct {
	mu       sync.Mutex
	finished time.Duration
	n        uint64
	running  int64
	startSum time.Duration // sum of the running reconciles' starts, since epoch
}

// epoch is the origin of Busy's monotonic times.
var epoch = time.Now()

// Start records the start of a reconcile; call the function it returns
// when the reconcile returns: defer b.Start()().
func (b *Busy) Start() (end func()) {
	start := time.Since(epoch)
	b.mu.Lock()
	b.running++
	b.startSum += start
	b.mu.Unlock()
	return func() {
		d := time.Since(epoch) - start
		b.mu.Lock()
		b.running--
		b.startSum -= start
		b.finished += d
		b.n++
		b.mu.Unlock()
	}
}

// Load returns the time spent reconciling until now (running reconciles
// included) and the number of reconciles finished.
func (b *Busy) Load(now time.Time) (time.Duration, uint64) {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.finished + time.Duration(b.running)*now.Sub(epoch) - b.startSum, b.n
}

// Window is what a queue did over one summary interval: the library's
// bottleneck.Window, which classifies it and sizes the controller, and
// what the demo's line says of it.
type Window struct {
	bottleneck.Window
	// Adaptive holds the bounds of the adaptive pool whose count Workers
	// is, zero for a fixed count: the recommendation then speaks of the
	// pool rather than of -workers.
	Adaptive AdaptiveRange
	// Watches are the program's watch streams at the end
	// (kubeclient.ReadWatchStats), At the end's time; nil: unknown.
	Watches *kubeclient.WatchStats
	At      time.Time
}

// procReader reads the process for the summary lines.
var procReader procstat.Reader

// watchesText is the line's watches=N (stale=M for those open with no
// event or bookmark for two minutes, kubeclient.WatchStats), and when none is open and
// carrying data though some were, why: none open for how long (the
// informers wait to watch again, client-go's reflector backoff), or open
// and silent; either way the controller sees no change, its queue idle all
// the same. Empty before any watch was opened.
func (w Window) watchesText() string {
	ws := w.Watches
	if ws == nil || ws.Opened == 0 {
		return ""
	}
	switch {
	case ws.Open > 0 && ws.Stale > 0:
		return fmt.Sprintf(" watches=%d stale=%d", ws.Open, ws.Stale)
	case ws.Open > 0:
		return fmt.Sprintf(" watches=%d", ws.Open)
	case ws.Stale > 0:
		return fmt.Sprintf(" watches=0 (%d open, stale: no event or bookmark for minutes; the informers see no change)", ws.Stale)
	}
	return fmt.Sprintf(" watches=0 (%s none open: the informers see no change)", w.At.Sub(ws.LastEnded).Round(100*time.Millisecond))
}

// String is the load part of the summary line: utilization, coalesced adds
// per second, the process's CPU, where the work time went (split), the
// bottleneck with the figure that decided it (the library's classifier,
// bottleneck.Classify), the worker count to run with (more only when the
// bottleneck is workers), and the interval's CPU per reconcile and the
// cores its arrivals need.
func (w Window) String() string {
	var b strings.Builder
	u := w.Utilization()
	fmt.Fprintf(&b, "utilization=%.2f coalesced/s=%.1f", u, float64(w.Coalesced)/max(w.Seconds(), 1e-9))
	if c := w.CPU; c.Known {
		fmt.Fprintf(&b, " cpu=%.2f/%.2f cores", c.Used, c.Cores)
		if c.ThrottledKnown {
			fmt.Fprintf(&b, " throttled=%.2f", c.Throttled)
		}
		if st, ok := c.Starved(); ok {
			fmt.Fprintf(&b, " starved=%.2f", st)
		}
		if c.GCIdle >= 0.01 {
			fmt.Fprintf(&b, " gc-idle=%.2f", c.GCIdle)
		}
		fmt.Fprintf(&b, " sched-p99=%v", c.SchedLatencyP99)
	}
	if a := w.APIServer; a.Known {
		fmt.Fprintf(&b, " apiserver-failed=%.2f", a.Unavailable)
		if a.LatencyKnown {
			fmt.Fprintf(&b, " apiserver-latency=%v", a.Latency.Round(100*time.Microsecond))
		}
	}
	b.WriteString(w.watchesText())
	v := w.Classify()
	law := w.LittlesLaw()
	if v.Class == "" || w.Reconciles == 0 && v.Class == bottleneck.None {
		// Keys came and none finished: no class (bottleneck.Window.Classify);
		// or an idle interval, which the line leaves without one.
		return b.String()
	}
	if w.Reconciles == 0 {
		law = w.Workers // the control plane failed or stalled the requests: keep the count
	}
	fmt.Fprintf(&b, " %s %s", split(w.Client), verdict(v))
	switch rec := v.Recommend(w.Workers, law); {
	case v.Class == bottleneck.Workers:
		fmt.Fprintf(&b, ": %.1f arrivals/s × %v mean work / %.1f → %s",
			w.Arrivals(), w.MeanWork().Round(time.Millisecond/10), bottleneck.TargetUtilization, w.recommend(rec))
	case v.Class != bottleneck.None && w.Adaptive.On():
		fmt.Fprintf(&b, " → no more than %s", Workers(rec))
	case v.Class != bottleneck.None:
		fmt.Fprintf(&b, " → no more than -workers %d", rec)
	}
	if sz := w.Size(); sz.Known {
		// Limited by its CPU, the process also takes in events more
		// slowly (its informers, here its workload too, share the CPU):
		// the arrivals, and the cores they need, are a lower bound.
		atLeast := "="
		if v.Class == bottleneck.CPU {
			atLeast = ">="
		}
		fmt.Fprintf(&b, " size: cpu/reconcile=%v cores-needed%s%.2f", sz.CPUPerReconcile.Round(10*time.Microsecond), atLeast, sz.Cores)
	}
	return b.String()
}

// Pod is the pod part of the summary line: the Sizer's recommendation
// (otelqueue.Sizer), the one answer to how many workers, cores and memory,
// from the busiest five minutes of the last hour:
//
//	pod: workers=2 (4 run: more than enough) cpu=0.15/0.30 memory=24Mi/30Mi GOMEMLIMIT=27MiB (200 objects × 5.2KiB) over 2m10s
//
// with the CPU and memory as request/limit. The inspector page shows its
// arithmetic.
func Pod(r bottleneck.Recommendation) string {
	if r.At.IsZero() {
		return "pod: measuring"
	}
	var b strings.Builder
	b.WriteString("pod:")
	for _, q := range r.Queues {
		switch {
		case !q.Known:
			fmt.Fprintf(&b, " workers=unknown")
		case q.Workers <= 0:
			fmt.Fprintf(&b, " workers=%d", q.Run)
		default:
			enough := "enough"
			switch {
			case q.Run < q.Workers:
				enough = "more than enough"
			case q.Run > q.Workers:
				enough = "too few"
			}
			fmt.Fprintf(&b, " workers=%d (%d run: %s)", q.Run, q.Workers, enough)
		}
		if len(r.Queues) > 1 {
			fmt.Fprintf(&b, " for %s", q.Name)
		}
	}
	if c := r.CPU; c.Known {
		at := ""
		if c.LowerBound {
			at = ">="
		}
		fmt.Fprintf(&b, " cpu=%s%.2f/%.2f", at, c.Request, c.Limit)
	}
	if m := r.Memory; m.Known {
		fmt.Fprintf(&b, " memory=%dMi/%dMi GOMEMLIMIT=%dMiB", m.Request>>20, m.Limit>>20, m.GOMEMLIMIT>>20)
		if m.Objects > 0 {
			fmt.Fprintf(&b, " (%d objects × %s)", m.Objects, bytesText(float64(m.PerObject)))
		}
	}
	if r.Span < bottleneck.PeakSpan {
		fmt.Fprintf(&b, " over %v", r.Over.Round(time.Second))
	} else {
		fmt.Fprintf(&b, " busiest %v of %v", r.Span.Round(time.Second), r.Over.Round(time.Second))
	}
	return b.String()
}

// split is where the work time went, as shares of it.
func split(c bottleneck.Client) string {
	if !c.Used {
		return "split=unknown (no instrumented client)"
	}
	return fmt.Sprintf("split=own %.2f limiter %.2f api %.2f retry-after %.2f",
		c.Own(), c.Share(c.RateLimiterWait), c.Share(c.RequestTime), c.Share(c.RetryAfterWait))
}

// verdict is "bottleneck=<class> (<the figure> <the threshold>: what to
// change)", in the demo's words, with the table's thresholds.
func verdict(v bottleneck.Verdict) string {
	r := v.Rule
	switch v.Class {
	case bottleneck.CPU:
		switch r.Signal {
		case "cpu_maxprocs":
			return fmt.Sprintf("bottleneck=cpu (gomaxprocs %.2f %s %g: GOMAXPROCS is below the cores the process may use; raise it, not the CPU limit, not workers)", v.Figure, r.Comparison(), r.Threshold)
		case "cpu_wait_share":
			return fmt.Sprintf("bottleneck=cpu (cpu-wait %.2f of work time %s %g: the node's other processes take the CPU it wants; a larger CPU request, or a quieter node, not workers)", v.Figure, r.Comparison(), r.Threshold)
		case "cpu_throttled":
			return fmt.Sprintf("bottleneck=cpu (throttled %.2f %s %g: more CPU (the pod's CPU limit) or cheaper reconciles (-reconcile-cpu), not workers)", v.Figure, r.Comparison(), r.Threshold)
		}
		return fmt.Sprintf("bottleneck=cpu (cpu %.2f %s %g: more CPU (the pod's CPU limit) or cheaper reconciles (-reconcile-cpu), not workers)", v.Figure, r.Comparison(), r.Threshold)
	case bottleneck.ServerThrottling:
		return fmt.Sprintf("bottleneck=%s (retry-after %.2f of work time %s %g: the API server's 429s; its API Priority and Fairness share, not workers)", v.Class, v.Figure, r.Comparison(), r.Threshold)
	case bottleneck.ClientRateLimit:
		return fmt.Sprintf("bottleneck=%s (limiter %.2f of work time %s %g: raise -kube-qps/-kube-burst, not workers)", v.Class, v.Figure, r.Comparison(), r.Threshold)
	case bottleneck.Errors:
		return fmt.Sprintf("bottleneck=%s (backoff retries %.2f of adds %s %g: fix the reconcile, not workers)", v.Class, v.Figure, r.Comparison(), r.Threshold)
	case bottleneck.APIServerUnavailable:
		return fmt.Sprintf("bottleneck=%s (failed %.2f of API requests %s %g: the control plane is down or failing; the queue drains once it is back, not workers)", v.Class, v.Figure, r.Comparison(), r.Threshold)
	case bottleneck.APIServerSlow:
		return fmt.Sprintf("bottleneck=%s (%v per API request %s %v: a slow API server (a webhook, etcd); more workers help only while it has room: try a step and watch the work time)",
			v.Class, time.Duration(v.Figure*float64(time.Second)).Round(100*time.Microsecond), r.Comparison(), time.Duration(r.Threshold*float64(time.Second)))
	}
	return v.String()
}

// bytesText is n bytes in the largest binary unit under it, to 3 figures.
func bytesText(n float64) string {
	for _, u := range []string{"B", "KiB", "MiB", "GiB"} {
		if n < 1024 || u == "GiB" {
			return fmt.Sprintf("%.3g%s", n, u)
		}
		n /= 1024
	}
	return ""
}

// recommend says what to do for the worker count rec: run with -workers
// rec, or, with an adaptive pool, let it grow (which it does by itself up
// to its MAX) or raise its MAX.
func (w Window) recommend(rec int) string {
	a := w.Adaptive
	switch {
	case !a.On():
		return fmt.Sprintf("recommend -workers %d", rec)
	case rec > a.Max:
		return fmt.Sprintf("recommend %s: above -adaptive-workers %v, raise its MAX", Workers(rec), a)
	}
	return fmt.Sprintf("recommend %s, within -adaptive-workers %v", Workers(rec), a)
}

// AdaptiveSummary is the worker part of the summary line for an adaptive
// pool's state st: "workers=12 (adaptive 1..32, last: demand, 3 changes)",
// with "ceiling N, " before "last" while a downstream limit holds the pool
// under N, and "no change yet" instead of the last change before the first.
func AdaptiveSummary(st inspect.Pool) string {
	var b strings.Builder
	fmt.Fprintf(&b, "workers=%d (adaptive %d..%d, ", st.Limit, st.Min, st.Max)
	if st.Ceiling > 0 {
		fmt.Fprintf(&b, "ceiling %d, ", st.Ceiling)
	}
	switch {
	case st.Reason == "":
		b.WriteString("no change yet)")
	case st.Changes == 1:
		fmt.Fprintf(&b, "last: %s, 1 change)", st.Reason)
	default:
		fmt.Fprintf(&b, "last: %s, %d changes)", st.Reason, st.Changes)
	}
	return b.String()
}

// Writes is what the workload did over one summary interval, against what
// its flags asked for.
type Writes struct {
	Seconds float64
	// Requested is the number of writes the flags asked for that count in
	// the interval (WorkloadStats.Counted): those that became due and
	// finished in it, and those overdue. A write due but not finished at
	// the end of an interval, within the slack (a burst due at that
	// moment), counts in the interval it finishes in, as its completion
	// does; so Done passes Requested only when overdue writes of earlier
	// intervals were done: catching up.
	Requested, Done, Failed uint64
	Busy                    time.Duration // time in the workload's writes
	// Backlog is the number of writes due and not yet started at the end
	// of the interval; Slack the backlog that is no lag (a burst just due,
	// half a second of churn).
	Backlog, Slack uint64
	// LimiterWaited is the time the workload's requests waited for its own
	// client-side limiter, of WorkloadQPS and WorkloadBurst (0: none).
	LimiterWaited time.Duration
	WorkloadQPS   float64
	WorkloadBurst int
	// Rejected is the number of the workload's requests the embedded API
	// server rejected with 429 under its limit of ServerQPS per client
	// (client-go retried each after a second).
	Rejected  uint64
	ServerQPS float64
	// CPUBound says the process used the CPU it has (the queue's class was
	// cpu): the workload, in the same process, shares it.
	CPUBound bool
	// Events is the number of adds the queue took in the interval (adds,
	// coalesced adds and retries): with writes done and none, the
	// controller is blind.
	Events uint64
}

// Behind returns why the workload falls behind its schedule (its backlog
// passed the slack, or more than 10% of the writes failed), "" when it
// keeps up.
func (w Writes) Behind() string {
	if w.Backlog <= w.Slack && float64(w.Failed) <= (1-behindBelow)*float64(w.Requested) {
		return ""
	}
	switch {
	case w.Rejected > 0:
		return fmt.Sprintf("the API server rejected %d writes with 429 (-server-qps %g), each retried after a second", w.Rejected, w.ServerQPS)
	case w.LimiterWaited.Seconds() >= 0.25*w.Seconds:
		return fmt.Sprintf("client rate limit (-workload-qps %g -workload-burst %d): requests waited %v for it", w.WorkloadQPS, w.WorkloadBurst, w.LimiterWaited.Round(time.Millisecond))
	case w.Failed > 0:
		return fmt.Sprintf("%d writes failed", w.Failed)
	case w.CPUBound:
		return "the process's CPU: the workload shares it with the controller"
	case w.Done > 0:
		return fmt.Sprintf("each write takes %v (a slow API server?)", (w.Busy / time.Duration(w.Done)).Round(time.Millisecond/10))
	}
	return "no write finished"
}

// String is the workload part of the summary line: writes per second done
// over requested, "behind:" with the reason when it fell behind, and
// "catching up:" when it did more than requested, writes overdue from
// earlier intervals.
func (w Writes) String() string {
	s := fmt.Sprintf("writes/s=%.1f/%.1f", float64(w.Done)/max(w.Seconds, 1e-9), float64(w.Requested)/max(w.Seconds, 1e-9))
	why := w.Behind()
	if why != "" {
		s += " behind: " + why
	}
	if w.Done > w.Requested {
		if why != "" {
			s += ";"
		}
		s += fmt.Sprintf(" catching up: %d more writes than requested, overdue from earlier intervals", w.Done-w.Requested)
	}
	if w.Done > 0 && w.Events == 0 {
		// The API server accepted the workload's writes and no event of
		// them reached the queue: its informers are not watching
		// (reconnecting after the API server came back: client-go's
		// reflector backoff, docs/tuning.md), not an idle queue.
		s += fmt.Sprintf(" blind: %d writes accepted, no event received", w.Done)
	}
	return s
}

// Meter reads the counters a summary line is made of: the queue's, the
// workers' busy time, the controller's client limiter's and the
// workload's (its own limiter's and the API server's rejections of its
// requests included).
type Meter struct {
	// Workers is the configured worker count (with an adaptive pool, its
	// starting count).
	Workers int
	// Adaptive returns the state of the queue's adaptive worker pool, and
	// false while it has none running (the Runner's or the
	// Instrumentation's AdaptiveStats); nil: a fixed count. With a pool,
	// the line starts with AdaptiveSummary, and its utilization and
	// recommendation are for the pool's count at the reading.
	Adaptive func() (inspect.Pool, bool)
	// Range is -adaptive-workers, for the recommendation.
	Range AdaptiveRange
	// Busy returns the workers' busy time until now (those in a reconcile
	// included) and the reconciles they finished: a Busy's Load, or the
	// Runner's Stats.
	Busy     func(now time.Time) (time.Duration, uint64)
	Workload *Workload // nil without a workload
	// Limiter is the controller's client-side limiter (Cluster.Limiter).
	Limiter *Limiter
	// Client returns where the queue's reconciles spent their time in the
	// instrumented client (otelqueue.Instrumentation.ClientStats); nil:
	// unknown.
	Client func() otelqueue.ClientStats
	// Errors returns the number of reconciles that returned an error so
	// far (errors/s in the line); nil: none printed.
	Errors func() uint64
	// Standby reports whether the queue is standby: its workers wait for
	// leadership (otelqueue.Instrumentation.Standby); nil: never. A standby
	// line has no class: nothing limits a queue no worker may take.
	Standby func() bool
	// Sizer sizes the pod (Pod): nil, no pod part.
	Sizer *otelqueue.Sizer
	// Shard is the replica's shard (-shards), said first on the line; nil:
	// every object.
	Shard *shard.Shard
}

// Reading is one reading of a Meter's counters.
type Reading struct {
	At         time.Time
	Queue      scheduler.Stats
	Busy       time.Duration
	Reconciles uint64
	Errors     uint64
	Workload   WorkloadStats
	Limiter    LimiterStats
	Client     otelqueue.ClientStats
	// Server is how the API server answered the program's instrumented
	// clients (kubeclient.ServerStats), Watches their watch streams
	// (kubeclient.ReadWatchStats), read with Client.
	Server  bottleneck.APIServerCounters
	Watches kubeclient.WatchStats
	// Adaptive is the adaptive pool's state, AdaptiveOK whether it runs.
	Adaptive   inspect.Pool
	AdaptiveOK bool
	// CPU is the process's CPU (procstat.Reader.Read).
	CPU procstat.Sample
}

// Read reads the counters now, with the queue's stats q.
func (m *Meter) Read(q scheduler.Stats) Reading {
	r := Reading{At: time.Now(), Queue: q, Limiter: m.Limiter.Stats(), CPU: procReader.Read()}
	r.Busy, r.Reconciles = m.Busy(r.At)
	if m.Workload != nil {
		r.Workload = m.Workload.Stats()
	}
	if m.Client != nil {
		r.Client = m.Client()
		// nil: the global MeterProvider's clients, as the examples
		// instrument theirs.
		r.Server = kubeclient.ServerStats(nil)
		r.Watches = kubeclient.ReadWatchStats(nil)
	}
	if m.Errors != nil {
		r.Errors = m.Errors()
	}
	if m.Adaptive != nil {
		r.Adaptive, r.AdaptiveOK = m.Adaptive()
	}
	return r
}

// Line is the part of the summary line both examples print for the
// interval between two readings: with an adaptive pool its count
// (AdaptiveSummary), rates of adds, retries, reconciles and failed
// reconciles, the load (Window) and, with a workload, its writes (Writes).
// Every figure is per second over the interval.
func (m *Meter) Line(prev, cur Reading) string {
	secs := cur.At.Sub(prev.At).Seconds()
	st, ps := cur.Queue, prev.Queue
	workers, pool := m.Workers, ""
	if cur.AdaptiveOK {
		workers, pool = cur.Adaptive.Limit, AdaptiveSummary(cur.Adaptive)+" "
	}
	load := Window{Window: bottleneck.Window{
		Duration: cur.At.Sub(prev.At), Workers: workers,
		Adds: st.Adds - ps.Adds, Coalesced: st.Coalesced - ps.Coalesced,
		Busy: cur.Busy - prev.Busy, Reconciles: cur.Reconciles - prev.Reconciles,
		Retries: st.Retries - ps.Retries, DelayedAdds: st.DelayedAdds - ps.DelayedAdds,
		CPU: bottleneck.ProcessCPU(procstat.Between(prev.CPU, cur.CPU)),
	}, Adaptive: m.Range}
	if m.Client != nil {
		c, pc := cur.Client, prev.Client
		load.Client = bottleneck.Client{
			// The attempts that used the client and ended in the
			// interval: Busy also holds those still running.
			Work: c.Work - pc.Work, Used: c.Attempts > pc.Attempts,
			RateLimiterWait: c.RateLimiterWait - pc.RateLimiterWait, RequestTime: c.RequestTime - pc.RequestTime,
			RetryAfterWait: c.RetryAfterWait - pc.RetryAfterWait,
		}
		// The API server's figures count for a queue whose reconciles
		// call it.
		if c.Attempts > 0 {
			load.APIServer = bottleneck.APIServerBetween(prev.Server, cur.Server)
		}
		load.Watches, load.At = &cur.Watches, cur.At
	}
	if o, n := m.Shard.Ordinal(); n > 0 {
		pool = fmt.Sprintf("shard=%d/%d ", o, n) + pool
	}
	line := pool + fmt.Sprintf("adds/s=%.1f retries/s=%.1f reconciles/s=%.1f ",
		float64(load.Adds)/secs, float64(load.Retries)/secs, float64(load.Reconciles)/secs)
	if m.Errors != nil {
		line += fmt.Sprintf("errors/s=%.1f ", float64(cur.Errors-prev.Errors)/secs)
	}
	if m.Standby != nil && m.Standby() {
		line += fmt.Sprintf("utilization=%.2f standby: the workers wait for leadership (no class)", load.Utilization())
	} else {
		line += load.String()
	}
	if m.Sizer != nil {
		line += " " + Pod(m.Sizer.Recommend())
	}
	if m.Workload != nil {
		qps, burst := m.Workload.Cluster.WorkloadLimiter.Limits()
		w := Writes{
			Seconds: secs, Backlog: cur.Workload.Requested - cur.Workload.Started, Slack: cur.Workload.Slack(),
			Requested: cur.Workload.Counted() - prev.Workload.Counted(),
			Done:      cur.Workload.Done - prev.Workload.Done, Failed: cur.Workload.Failed - prev.Workload.Failed,
			Busy:      cur.Workload.Busy - prev.Workload.Busy,
			Rejected:  cur.Workload.Rejected - prev.Workload.Rejected,
			ServerQPS: m.Workload.Cluster.ServerStats().QPS,
			// The workload's own limiter: Window's is the controller's.
			LimiterWaited: cur.Workload.LimiterWaited - prev.Workload.LimiterWaited,
			WorkloadQPS:   qps, WorkloadBurst: burst,
			CPUBound: load.Reconciles > 0 && load.Classify().Class == bottleneck.CPU,
		}
		w.Events = load.Adds + load.Coalesced + load.Retries
		line += " " + w.String()
	}
	return line
}
