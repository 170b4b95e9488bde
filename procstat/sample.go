package procstat

import (
	"io/fs"
	"math"
	"runtime"
	"runtime/metrics"
	"sync"
	"time"
)

// Sample is one reading of the process (Read). Its figures are cumulative
// or current; Between turns two of them into what happened in between.
type Sample struct {
	// At is time.Now() at the reading, with its monotonic clock reading.
	At time.Time
	// CPUKnown is true when User and System were read: getrusage on Unix
	// systems, GetProcessTimes on Windows; false elsewhere or when the
	// call failed.
	CPUKnown bool
	// User and System are the CPU time of the process, all its threads,
	// since it started (getrusage RUSAGE_SELF: the children it waited for
	// are not counted).
	User, System time.Duration
	// GOMAXPROCS is runtime.GOMAXPROCS(0): the threads that may run Go
	// code at once. By default the runtime sets it from the CPUs and the
	// cgroup's quota, rounded up and never below 2 (unless there are fewer
	// CPUs): read Cgroup.Limit for the quota itself.
	GOMAXPROCS int
	// NumCPU is runtime.NumCPU(): the CPUs the process may run on (its
	// affinity mask at start).
	NumCPU int
	// Cgroup is the CPU bandwidth limit of the process's cgroup (Linux).
	Cgroup CgroupCPU
	// SchedLatency is the runtime's histogram of how long goroutines were
	// runnable before they ran (runtime/metrics /sched/latencies:seconds),
	// cumulative since the process started.
	SchedLatency SchedHistogram
	// HeapLive is the heap occupied by live objects as of the last
	// garbage collection (runtime/metrics /gc/heap/live:bytes); 0 before
	// the first one.
	HeapLive uint64
	// MemoryUsed is the memory the Go runtime has mapped and not returned
	// to the system: /memory/classes/total:bytes less
	// /memory/classes/heap/released:bytes, the semantic conventions'
	// go.memory.used.
	MemoryUsed uint64
	// HeapGoal is the heap size the garbage collector lets the heap grow
	// to before its current cycle ends (/gc/heap/goal:bytes; GOGC and
	// GOMEMLIMIT set it).
	HeapGoal uint64
	// RunDelay is how long the process's threads were runnable and waiting
	// on a CPU's run queue so far (Linux's schedstat of each thread,
	// summed; a thread that exits keeps what it added), RunDelayKnown
	// whether it was read. Against the CPU time it says how much of the
	// CPU the process asked for the node did not give it: other processes
	// took it. A thread stopped by the cgroup's quota is throttled, not
	// waiting: Cgroup's counters say that.
	RunDelay      time.Duration
	RunDelayKnown bool
	// GCIdle is the CPU time the garbage collector spent marking on
	// processors that had nothing else to run (runtime/metrics
	// /cpu/classes/gc/mark/idle, the runtime's estimate, updated at each
	// cycle's end): in User, but no demand of the process's work, since
	// it runs only where that leaves the CPU idle.
	GCIdle time.Duration
	// MemoryNeeded is the most memory the Go runtime will hold before its
	// next collection: MemoryUsed, plus the heap's growth to HeapGoal
	// beyond the spans it holds already (/memory/classes/heap/objects,
	// unused and free). A reading of MemoryUsed lands anywhere between a
	// collection and the next; this is the top of that sawtooth, the
	// figure a pod's memory must fit.
	MemoryNeeded uint64
}

// SchedHistogram is a cumulative histogram of scheduling latencies in
// seconds, as runtime/metrics gives it: Counts[i] events fell in
// [Bounds[i], Bounds[i+1]). The first bound is -Inf and the last +Inf, which
// encoding/json cannot encode.
type SchedHistogram struct {
	// Bounds are the bucket boundaries, one more than Counts. They are the
	// runtime's, the same in every Sample of the process: read them, never
	// change them.
	Bounds []float64
	// Counts are the events of each bucket since the process started; nil
	// when unknown.
	Counts []uint64
}

// Reader reads Samples. Its zero value reads the running process; it is
// safe for concurrent use and must not be copied after its first Read.
//
// Each Read finds the process's cgroup again from /proc/self/cgroup (a
// process may be moved to another cgroup), but keeps the cgroup mounts of
// /proc/self/mountinfo between Reads, reading them again only when they do
// not hold the cgroup.
type Reader struct {
	// fsys holds the cgroup files: nil for the platform's (defaultFS).
	fsys fs.FS
	// cgroupFile and mountinfoFile are the process's files in fsys: ""
	// for procCgroupFile and procMountinfoFile.
	cgroupFile, mountinfoFile string

	mu       sync.Mutex
	mounts   []mount // of the last parse of mountinfoFile
	parsed   bool    // mounts holds a parse
	runDelay runDelay
}

// defaultReader is the Reader of a nil *Reader and of Instrument without
// a Reader of its own.
var defaultReader Reader

// runtimeMetrics are the runtime/metrics a Sample holds, in the order of
// the indexes below.
var runtimeMetrics = [...]string{
	"/gc/heap/live:bytes",
	"/memory/classes/total:bytes",
	"/memory/classes/heap/released:bytes",
	"/gc/heap/goal:bytes",
	"/memory/classes/heap/objects:bytes",
	"/memory/classes/heap/unused:bytes",
	"/memory/classes/heap/free:bytes",
	"/cpu/classes/gc/mark/idle:cpu-seconds",
	"/sched/latencies:seconds", // last: left out without sched
}

const (
	metricHeapLive = iota
	metricMemoryTotal
	metricMemoryReleased
	metricHeapGoal
	metricHeapObjects
	metricHeapUnused
	metricHeapFree
	metricGCIdle
	metricSchedLatencies
)

// Read reads the process's CPU time, GOMAXPROCS and CPUs, its cgroup's
// CPU limit and throttling counters, the runtime's scheduling latencies and
// memory. It never fails: what cannot be read is reported as unknown. A
// nil Reader reads with one the package shares.
func (r *Reader) Read() Sample {
	if r == nil {
		return defaultReader.read(true) // a nil Reader reads as the package does
	}
	return r.read(true)
}

// read is Read; without sched, SchedLatency is left out (the callback of
// the instruments has no use for it).
func (r *Reader) read(sched bool) Sample {
	s := Sample{
		At:         time.Now(),
		GOMAXPROCS: runtime.GOMAXPROCS(0),
		NumCPU:     runtime.NumCPU(),
	}
	s.User, s.System, s.CPUKnown = cpuTimes()

	var ms [len(runtimeMetrics)]metrics.Sample
	for i, name := range runtimeMetrics {
		ms[i].Name = name
	}
	n := len(ms)
	if !sched {
		n = metricSchedLatencies
	}
	metrics.Read(ms[:n])
	s.HeapLive = uint64Metric(ms[metricHeapLive])
	total, released := uint64Metric(ms[metricMemoryTotal]), uint64Metric(ms[metricMemoryReleased])
	if total > released {
		s.MemoryUsed = total - released
	}
	s.HeapGoal = uint64Metric(ms[metricHeapGoal])
	spans := uint64Metric(ms[metricHeapObjects]) + uint64Metric(ms[metricHeapUnused]) + uint64Metric(ms[metricHeapFree])
	s.MemoryNeeded = s.MemoryUsed
	if s.HeapGoal > spans {
		s.MemoryNeeded += s.HeapGoal - spans
	}
	if v := ms[metricGCIdle].Value; v.Kind() == metrics.KindFloat64 {
		s.GCIdle = durationOf(v.Float64())
	}
	if sched && ms[metricSchedLatencies].Value.Kind() == metrics.KindFloat64Histogram {
		h := ms[metricSchedLatencies].Value.Float64Histogram()
		if len(h.Buckets) == len(h.Counts)+1 {
			// ms is this call's: metrics.Read made h for it, and no
			// other Read reuses it. Buckets is the runtime's, the same
			// in every histogram of the metric.
			s.SchedLatency = SchedHistogram{Bounds: h.Buckets, Counts: h.Counts}
		}
	}

	if fsys := r.fs(); fsys != nil {
		s.Cgroup = readCgroup(fsys, orDefault(r.cgroupFile, procCgroupFile), func(refresh bool) ([]mount, bool) {
			return r.cgroupMounts(fsys, refresh)
		})
		r.mu.Lock()
		s.RunDelay, s.RunDelayKnown = r.runDelay.read(fsys)
		r.mu.Unlock()
	}
	return s
}

func uint64Metric(s metrics.Sample) uint64 {
	if s.Value.Kind() != metrics.KindUint64 {
		return 0
	}
	return s.Value.Uint64()
}

func (r *Reader) fs() fs.FS {
	if r.fsys != nil {
		return r.fsys
	}
	return defaultFS()
}

// cgroupMounts returns the cgroup mounts of mountinfo: those of the last
// parse unless refresh is true or there was none; fresh is true when
// mountinfo was read for this call.
func (r *Reader) cgroupMounts(fsys fs.FS, refresh bool) (mounts []mount, fresh bool) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.parsed && !refresh {
		return r.mounts, false
	}
	data, err := fs.ReadFile(fsys, orDefault(r.mountinfoFile, procMountinfoFile))
	if err != nil {
		// Not cached: the next Read tries again.
		return nil, true
	}
	r.mounts, r.parsed = parseMountinfo(data), true
	return r.mounts, true
}

func orDefault(s, def string) string {
	if s == "" {
		return def
	}
	return s
}

// durationOf converts seconds to a Duration, rounded to the nanosecond;
// 0 for NaN and negative values, the longest Duration for values beyond it.
func durationOf(seconds float64) time.Duration {
	ns := math.Round(seconds * 1e9)
	switch {
	case !(ns > 0):
		return 0
	case ns >= math.MaxInt64:
		return time.Duration(math.MaxInt64)
	}
	return time.Duration(ns)
}
