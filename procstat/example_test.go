package procstat_test

import (
	"fmt"
	"log"
	"time"

	"github.com/otelqueue/otelqueue/procstat"
)

// Read the process every few seconds, as an adaptive pool or a summary
// line does, and say what the window shows. (Not run as a test: its figures
// are the machine's.)
func ExampleReader_Read() {
	var r procstat.Reader
	prev := r.Read()
	for range time.Tick(5 * time.Second) {
		cur := r.Read()
		w := procstat.Between(prev, cur)
		prev = cur

		cpu := fmt.Sprintf("%.2f of %.2f cores (%.0f%%)", w.Used(), w.Cores, 100*w.Utilization())
		if w.Limited {
			cpu += fmt.Sprintf(", quota of %s", cur.Cgroup.LimitPath)
		}
		if w.ThrottledKnown {
			cpu += fmt.Sprintf(", throttled in %.0f%% of the periods (%v)", 100*w.Throttled, w.ThrottledTime)
		}
		// The runtime's scheduling latencies since the process started
		// (cumulative; Between makes the window's quantiles of two).
		var sched procstat.SchedHistogram = cur.SchedLatency
		log.Printf("cpu: %s; runnable goroutines waited p50 %v, p99 %v (%d buckets); heap live %d MiB, Go memory %d MiB",
			cpu, w.SchedP50, w.SchedP99, len(sched.Counts), w.HeapLive>>20, w.MemoryUsed>>20)
	}
}

// What Between makes of two samples of a process under a half-core quota
// on a 2-CPU machine: the runtime keeps GOMAXPROCS at 2 (it never goes
// below 2 for a quota), so the cores come from the quota itself.
func ExampleBetween() {
	t0 := time.Now()
	cgroup := func(periods, throttled uint64) procstat.CgroupCPU {
		return procstat.CgroupCPU{
			Known: true, Version: 2, Path: "/sys/fs/cgroup/app", LimitPath: "/sys/fs/cgroup/app",
			Limit: 0.5, StatKnown: true, Periods: periods, ThrottledPeriods: throttled,
		}
	}
	a := procstat.Sample{At: t0, CPUKnown: true, User: 3 * time.Second, GOMAXPROCS: 2, NumCPU: 2, Cgroup: cgroup(1000, 100)}
	b := procstat.Sample{At: t0.Add(5 * time.Second), CPUKnown: true, User: 5 * time.Second, System: 500 * time.Millisecond, GOMAXPROCS: 2, NumCPU: 2, Cgroup: cgroup(1050, 145)}

	w := procstat.Between(a, b)
	fmt.Printf("used %.2f of %.2f cores (limited by the quota: %v): %.0f%%\n", w.Used(), w.Cores, w.Limited, 100*w.Utilization())
	fmt.Printf("throttled in %.0f%% of the periods\n", 100*w.Throttled)
	// Output:
	// used 0.50 of 0.50 cores (limited by the quota: true): 100%
	// throttled in 90% of the periods
}
