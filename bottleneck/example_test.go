package bottleneck_test

import (
	"fmt"
	"time"

	"github.com/otelqueue/otelqueue/bottleneck"
)

// Example_window classifies a window made of two readings of a queue's
// numbers ten seconds apart: scheduler.Stats (adds, coalesced adds,
// retries, delayed adds), the workers' busy time and finished reconciles
// (a Runner's Stats), and the process's CPU (package procstat: two Reads
// and procstat.Between). Here the process used all of its half core.
func Example_window() {
	w := bottleneck.Window{
		Duration: 10 * time.Second,
		Workers:  8,
		Adds:     300, Retries: 20, DelayedAdds: 20, // RequeueAfter: no errors
		Busy: 79 * time.Second, Reconciles: 50,
		CPU: bottleneck.CPUUse{Known: true, Used: 0.49, Cores: 0.5, Throttled: 0.97, ThrottledKnown: true},
	}
	v := w.Classify()
	fmt.Println("class:", v.Class)
	fmt.Println("Little's law:", w.LittlesLaw(), "recommended:", v.Recommend(w.Workers, w.LittlesLaw()))
	s := w.Size()
	fmt.Printf("CPU per reconcile %v, cores needed %.1f\n", s.CPUPerReconcile, s.Cores)
	// Output:
	// class: cpu
	// Little's law: 68 recommended: 8
	// CPU per reconcile 98ms, cores needed 4.2
}

// The API server's figures of a window from two readings of the process's
// round trips (kubeclient.ServerStats gives them): here 40 of 200 requests
// failed for the server, and single-object writes took 400 ms each, so the
// control plane is the bottleneck, not the workers.
func ExampleAPIServerBetween() {
	var before, after bottleneck.APIServerCounters
	after.Requests, after.Unavailable = 200, 40
	after.Writes = bottleneck.ObjectRoundTrips{Ended: 10, Time: 4 * time.Second, EndedTime: 4 * time.Second}
	var use bottleneck.APIServerUse = bottleneck.APIServerBetween(before, after)
	fmt.Printf("failed %.2f, latency %v\n", use.Unavailable, use.Latency)

	w := bottleneck.Window{Duration: 10 * time.Second, Workers: 4, Adds: 100, Busy: 20 * time.Second, Reconciles: 90, APIServer: use}
	var f bottleneck.Figures = w.Figures()
	v := bottleneck.Classify(f)
	fmt.Println(v.Class == bottleneck.APIServerUnavailable, v)
	// Output:
	// failed 0.20, latency 400ms
	// false bottleneck=apiserver-slow (apiserver_latency 0.40 >= 0.25: find what slows the API server (admission webhooks, etcd, API Priority and Fairness queuing) or make fewer API calls; more workers help only while the server has room, which only a change of the count tells: try a step and watch the work time)
}

// The table of the classes, in its order of precedence: the first rule
// that holds names the bottleneck, and None is what is left. Only the
// workers class may ask for more workers.
func ExampleRules() {
	for _, r := range bottleneck.Rules() {
		var where string
		switch r.Class {
		case bottleneck.APIServerUnavailable, bottleneck.APIServerSlow:
			where = "control plane"
		case bottleneck.ServerThrottling, bottleneck.ClientRateLimit:
			where = "API budget"
		case bottleneck.CPU:
			where = "process"
		case bottleneck.Errors, bottleneck.Workers:
			where = "queue"
		}
		var signal bottleneck.Signal = r.Signal
		fmt.Printf("%-21s %-13s %s %s %v, more workers: %v\n", r.Class, where, signal, r.Comparison(), r.Threshold, r.MoreWorkers)
	}
	fmt.Println(bottleneck.None, "otherwise")
	// Output:
	// apiserver-unavailable control plane apiserver_unavailable >= 0.25, more workers: false
	// cpu                   process       cpu_maxprocs >= 0.9, more workers: false
	// cpu                   process       cpu_utilization >= 0.9, more workers: false
	// cpu                   process       cpu_throttled >= 0.5, more workers: false
	// cpu                   process       cpu_wait_share >= 0.25, more workers: false
	// server-throttling     API budget    retry_after_share >= 0.25, more workers: false
	// client-rate-limit     API budget    rate_limiter_share >= 0.25, more workers: false
	// apiserver-slow        control plane apiserver_latency >= 0.25, more workers: false
	// errors                queue         error_retries > 0.5, more workers: false
	// workers               queue         workers_needed > 1, more workers: true
	// none otherwise
}

// How big, from a process's history of spans (otelqueue's Sizer keeps one
// every interval; a program with readings of its own builds them): the
// busiest five minutes of the last hour decide the workers, at
// TargetUtilization, the CPU and the memory.
func ExampleRecommend() {
	start := time.Date(2026, 12, 6, 12, 0, 0, 0, time.UTC)
	var history []bottleneck.Span
	for i, arrivals := range []uint64{3000, 12000, 6000} { // per 5 minutes
		span := 5 * time.Minute
		cpu := bottleneck.CPUUse{Known: true, Used: float64(arrivals) * 0.02 / span.Seconds(), Cores: 2}
		w := bottleneck.Window{Name: "deployments", Duration: span, Workers: 8, Adds: arrivals, Reconciles: arrivals,
			Busy: time.Duration(arrivals) * 100 * time.Millisecond, CPU: cpu}
		history = append(history, bottleneck.Span{End: start.Add(time.Duration(i+1) * span), Queues: []bottleneck.Window{w}, CPU: cpu, Memory: 40 << 20})
	}
	r := bottleneck.Recommend(history)
	var q bottleneck.QueueRecommendation = r.Queues[0]
	var cpu bottleneck.CPURecommendation = r.CPU
	var mem bottleneck.MemoryRecommendation = r.Memory
	fmt.Printf("%s: run %d of %d workers (%.0f arrivals/s × %v / %.1f)\n", q.Name, q.Run, q.Workers, q.Arrivals, q.MeanWork, bottleneck.TargetUtilization)
	fmt.Printf("cpu: request %.2f, limit %.2f\n", cpu.Request, cpu.Limit)
	fmt.Printf("memory: request %d MiB, limit %d MiB, GOMEMLIMIT %d MiB\n", mem.Request>>20, mem.Limit>>20, mem.GOMEMLIMIT>>20)
	// Output:
	// deployments: run 6 of 8 workers (40 arrivals/s × 100ms / 0.7)
	// cpu: request 1.15, limit 2.30
	// memory: request 40 MiB, limit 50 MiB, GOMEMLIMIT 45 MiB
}
