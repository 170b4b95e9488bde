// Package procstat reads what a controller process needs to know about its
// own CPU and memory to tell whether it is limited by its CPU, and to size
// its pod: how much CPU it used, how many cores it may use, how often the
// kernel stopped it for its cgroup's quota, how long its goroutines waited
// for a thread, and how much memory the Go runtime holds. An adaptive worker
// pool and summary lines read it every few seconds; it is not meant for a
// hot path.
//
// Read takes a Sample; Between turns two Samples into a Window: the CPU used
// and the cores available in between, their ratio (Window.Utilization), the
// share of throttled periods and the scheduling latencies. Read never fails
// and never panics: what cannot be read is reported as unknown (a Known
// flag false, a nil histogram), not as a zero that looks measured.
//
// # The figures, where they come from, and what they are for
//
//   - CPU time (Sample.User, Sample.System): getrusage(RUSAGE_SELF), all
//     threads of the process, children not counted. Divided by the
//     window's wall time it is the cores used (Window.Used).
//   - Cores available (Window.Cores): the least of GOMAXPROCS, NumCPU (the
//     CPUs of the process's affinity mask at start) and the cgroup's CPU
//     quota. The quota must be read itself: the Go runtime sets GOMAXPROCS
//     to the quota rounded up but never below 2, so a half-core quota on a
//     2-CPU machine leaves GOMAXPROCS at 2, while the kernel lets the
//     process run half a core on average. Used / Cores near 1 is a process
//     limited by its CPU.
//   - Throttling (CgroupCPU.Periods, ThrottledPeriods, ThrottledTime;
//     Window.Throttled): the cgroup's cpu.stat. In each enforcement period
//     (cpu.cfs_period_us, 100 ms by default) in which the cgroup used up
//     its quota, the kernel stops its threads until the period ends. A
//     high share of throttled periods says the quota, not the work, sets
//     the pace, even when the average use is under the quota (bursts).
//     ThrottledTime adds up the stops on every CPU: with threads on 2
//     CPUs it can grow twice as fast as the wall clock.
//   - Scheduling latency (Sample.SchedLatency; Window.SchedP50, SchedP99):
//     runtime/metrics /sched/latencies:seconds, how long goroutines were
//     runnable before a thread ran them (the runtime samples one such
//     transition in 8). High latencies mean more runnable goroutines than
//     GOMAXPROCS. A thread stopped by the quota is not seen by the
//     runtime: its goroutine counts as running, so throttling shows in
//     Throttled, not here (measured: a process throttled in every period
//     had a p99 under a microsecond).
//   - Memory (Sample.HeapLive, Sample.MemoryUsed): runtime/metrics
//     /gc/heap/live:bytes, the heap live after the last GC (0 before the
//     first), which is mostly the informer caches in a controller; and
//     /memory/classes/total:bytes less /memory/classes/heap/released:bytes,
//     the memory the runtime holds from the system (the semantic
//     conventions' go.memory.used), which is what the pod's memory limit
//     must fit, with the GC's headroom (GOGC) above HeapLive.
//
// # The cgroup
//
// Every Read finds the process's cgroup again, as the runtime does at
// start: the line of /proc/self/cgroup with "cpu" among its v1 controllers
// (such as "4:cpu,cpuacct:/kubepods/pod1/ctr"), or else the cgroup v2 line
// "0::/path". When both are there (a hybrid system) the v1 cpu controller
// wins: the kernel binds a controller to one hierarchy. The path is then
// placed under the first mount of /proc/self/mountinfo of that version (for
// v1, with "cpu" among its super options) whose root holds it: a
// container's mount may have the container's own cgroup as its root, and
// the path is then relative to that root. The mounts are parsed once per
// Reader and again when they do not hold the cgroup.
//
// The quota is the smallest over the cgroup and its ancestors up to the
// mount point (v1 cpu.cfs_quota_us / cpu.cfs_period_us with -1 for none,
// v2 cpu.max with "max" for none; a level without the file sets none), and
// the throttling counters are those of the cgroup whose quota that is
// (CgroupCPU.LimitPath). A limit file that exists but cannot be read or
// parsed makes the whole limit unknown (CgroupCPU.Known false); a missing
// or malformed cpu.stat makes only the counters unknown (StatKnown false).
// An ancestor above the mount's root, hidden by a cgroup namespace, cannot
// be read: its quota, if any, is not seen.
//
// # What is unknown where
//
// On Linux every figure is read. Other Unix systems have no cgroups:
// Sample.Cgroup is unknown, Cores comes from GOMAXPROCS and NumCPU.
// Windows has its CPU times from GetProcessTimes and no cgroup; js,
// wasip1 and plan9 have neither (Sample.CPUKnown is false, and so are
// Window.CPUKnown and its Used and Utilization: 0). The runtime metrics
// are there everywhere.
//
// # What it costs
//
// A Read on Linux makes a few system calls and reads /proc/self/cgroup,
// the quota file of the cgroup and of each ancestor below the mount point
// (and the period file, for a v1 quota), and one cpu.stat; the mounts are
// cached. Measured on the 2-CPU test VM, whose system calls take about
// 1 µs (go test -run '^$' -bench BenchmarkRead ./procstat/): a Read of a
// process in the cgroup at the mount point took about 80 µs and 33
// allocations (7.6 KB); four levels below it, as Kubernetes nests a
// container (kubepods/burstable/pod/container), about 200 µs and 71
// allocations (15.7 KB): some 30 µs a level. Nearly all of it is the
// kernel making the cgroup files: one cpu.stat took 31 µs to read there,
// /proc/self/cgroup 21 µs, the runtime metrics 2 µs, getrusage 1.5 µs.
// Every few seconds that is a negligible share of a core.
//
// # OpenTelemetry
//
// Instrument reports the figures through observable instruments, read by
// one callback at collection time. The OpenTelemetry Prometheus exporter
// names them so:
//
//	process.cpu.time{cpu.mode}         process_cpu_time_seconds_total{cpu_mode="user"|"system"}
//	go.processor.limit                 go_processor_limit
//	go.memory.used                     go_memory_used_bytes
//	otelqueue.cpu.limit                otelqueue_cpu_limit                          (with a quota)
//	otelqueue.cpu.periods              otelqueue_cpu_periods_total                  (with a quota)
//	otelqueue.cpu.throttled_periods    otelqueue_cpu_throttled_periods_total        (with a quota)
//	otelqueue.cpu.throttled_time       otelqueue_cpu_throttled_time_seconds_total   (with a quota)
//	otelqueue.cache.objects            otelqueue_cache_objects                      (WithCachedObjects)
//
// The first three are the semantic conventions' process and Go runtime
// metrics, which go.opentelemetry.io/contrib/instrumentation/runtime also
// reports (go.memory.used split by go.memory.type): a program that uses it
// too gets both, under their two scopes.
package procstat
