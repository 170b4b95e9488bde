package procstat

import (
	"math"
	"math/bits"
	"slices"
	"time"
)

// Window is what happened between two Samples (Between). Its figures are
// never negative nor NaN: what cannot be told is 0, with a Known flag
// where 0 could be mistaken for a measurement.
type Window struct {
	// Duration is the time between the two samples; 0 when they cannot be
	// compared, and then every other figure is 0 too.
	Duration time.Duration
	// CPUKnown is true when both samples have their CPU time (CPUKnown).
	CPUKnown bool
	// CPU is the CPU time the process used in the window, user and
	// system.
	CPU time.Duration
	// Cores is how many cores the process can use: the least of
	// GOMAXPROCS, NumCPU and the cgroup's quota when one is set, at the
	// later sample, or at the earlier one if fewer (a window that spans a
	// change of the quota is judged by the tighter); 0 when none is known.
	Cores float64
	// Limited is true when Cores is the cgroup's quota: the kernel stops
	// the process's threads for the rest of a period once the quota is
	// used, whatever GOMAXPROCS is.
	Limited bool
	// ThrottledKnown is true when a quota was in force at the later
	// sample, both samples have the same cgroup's counters, and the
	// kernel counted enforcement periods in the window (it counts none
	// while the cgroup does not run).
	ThrottledKnown bool
	// Throttled is the share of those periods in which the cgroup used up
	// its quota and was stopped, from 0 to 1.
	Throttled float64
	// ThrottledTime is how long the cgroup's threads were stopped in the
	// window, added up over the CPUs (see CgroupCPU.ThrottledTime): it may
	// exceed Duration.
	ThrottledTime time.Duration
	// SchedP50 and SchedP99 are the median and 99th percentile of the
	// time goroutines were runnable before they ran, among the events of
	// the window: the upper bound of the histogram bucket of the nearest
	// rank (the runtime's buckets are an eighth of a power of two wide).
	// 0 when none was recorded.
	SchedP50, SchedP99 time.Duration
	// HeapLive and MemoryUsed are those of the later sample.
	HeapLive, MemoryUsed uint64
	// RunDelay is how long the process's threads waited on run queues in
	// the window (Sample.RunDelay), RunDelayKnown whether both samples had
	// it; GCIdle the CPU of the garbage collector's idle-priority marking
	// (Sample.GCIdle), part of CPU.
	RunDelay      time.Duration
	RunDelayKnown bool
	GCIdle        time.Duration
	// MaxProcs is GOMAXPROCS at the later sample; Available the cores the
	// process may use whatever GOMAXPROCS says: the least of NumCPU and
	// the cgroup's quota when one is set. MaxProcs below Available is a
	// process that runs Go code on fewer threads than it may.
	MaxProcs  int
	Available float64
}

// Between returns what happened from a to b, b being the later sample. A
// zero a or b, or b not after a, gives a zero Window.
func Between(a, b Sample) Window {
	if a.At.IsZero() || b.At.IsZero() || !b.At.After(a.At) {
		return Window{}
	}
	w := Window{
		Duration:   b.At.Sub(a.At),
		HeapLive:   b.HeapLive,
		MemoryUsed: b.MemoryUsed,
	}
	if a.CPUKnown && b.CPUKnown {
		w.CPUKnown = true
		w.CPU = max(0, (b.User+b.System)-(a.User+a.System))
	}
	w.Cores, w.Limited = cores(b)
	// A window that spans a change of the cores (a quota set, raised or
	// lifted) is judged by the fewer: the process had no more for part of
	// it, and its CPU then is what the window's use is measured against.
	if c, limited := cores(a); c > 0 && c < w.Cores {
		w.Cores, w.Limited = c, limited
	}
	w.throttling(a.Cgroup, b.Cgroup)
	w.SchedP50, w.SchedP99 = schedQuantiles(a.SchedLatency, b.SchedLatency)
	if a.RunDelayKnown && b.RunDelayKnown && b.RunDelay >= a.RunDelay {
		w.RunDelayKnown, w.RunDelay = true, b.RunDelay-a.RunDelay
	}
	if b.GCIdle > a.GCIdle {
		w.GCIdle = min(b.GCIdle-a.GCIdle, w.CPU)
	}
	w.MaxProcs = b.GOMAXPROCS
	w.Available = float64(b.NumCPU)
	if limit := b.Cgroup.Limit; b.Cgroup.Known && limit > 0 && (w.Available <= 0 || limit < w.Available) {
		w.Available = limit
	}
	return w
}

// cores returns the cores s says the process can use (the least of
// GOMAXPROCS, NumCPU and its cgroup's quota), and whether the quota is
// that least; 0 when none is known.
func cores(s Sample) (float64, bool) {
	var c float64
	for _, n := range []int{s.GOMAXPROCS, s.NumCPU} {
		if n > 0 && (c == 0 || float64(n) < c) {
			c = float64(n)
		}
	}
	if limit := s.Cgroup.Limit; s.Cgroup.Known && limit > 0 && (c == 0 || limit <= c) {
		return limit, true
	}
	return c, false
}

// throttling sets the throttling figures when a and b are the counters of
// one cgroup with a quota, and they did not go back (a cgroup made again
// under the same path starts from 0).
func (w *Window) throttling(a, b CgroupCPU) {
	if !a.Known || !b.Known || !a.StatKnown || !b.StatKnown || b.Limit <= 0 ||
		a.Version != b.Version || a.LimitPath != b.LimitPath ||
		b.Periods < a.Periods || b.ThrottledPeriods < a.ThrottledPeriods || b.ThrottledTime < a.ThrottledTime {
		return
	}
	w.ThrottledTime = b.ThrottledTime - a.ThrottledTime
	periods, throttled := b.Periods-a.Periods, b.ThrottledPeriods-a.ThrottledPeriods
	if periods == 0 {
		return
	}
	w.ThrottledKnown = true
	w.Throttled = min(1, float64(throttled)/float64(periods))
}

// Used is the number of cores the process used on average in the window:
// CPU / Duration. 0 when the CPU time is unknown.
func (w Window) Used() float64 {
	if w.Duration <= 0 || !w.CPUKnown {
		return 0
	}
	return w.CPU.Seconds() / w.Duration.Seconds()
}

// Utilization is the share of the available cores the process used: Used /
// Cores. 0 when either is unknown (or Cores is so small that the share is
// beyond a float64). It may exceed 1 a little: threads that run no Go code
// (in system calls, cgo) are not bound by GOMAXPROCS, and a quota's
// enforcement lags.
func (w Window) Utilization() float64 {
	if w.Cores <= 0 {
		return 0
	}
	if u := w.Used() / w.Cores; !math.IsInf(u, 0) {
		return u
	}
	return 0
}

// schedQuantiles returns the median and 99th percentile of the events
// recorded between the cumulative histograms a and b (nearest rank). Both
// are 0 when none was recorded, when b has no histogram, or when a's does
// not fit b's (other bounds, a count that went back). A histogram a with
// no counts counts as all zeros.
func schedQuantiles(a, b SchedHistogram) (p50, p99 time.Duration) {
	n := len(b.Counts)
	if n == 0 || len(b.Bounds) != n+1 {
		return 0, 0
	}
	if a.Counts != nil && (len(a.Counts) != n || !slices.Equal(a.Bounds, b.Bounds)) {
		return 0, 0
	}
	delta := make([]uint64, n)
	var total uint64
	for i, c := range b.Counts {
		var prev uint64
		if a.Counts != nil {
			prev = a.Counts[i]
		}
		if c < prev {
			return 0, 0
		}
		delta[i] = c - prev
		var carry uint64
		if total, carry = bits.Add64(total, delta[i], 0); carry != 0 {
			return 0, 0
		}
	}
	if total == 0 {
		return 0, 0
	}
	return bucketValue(b.Bounds, delta, rank(total, 50)), bucketValue(b.Bounds, delta, rank(total, 99))
}

// rank is the nearest rank of the pct-th percentile of total events:
// ceil(total*pct/100), at least 1, computed in integers so that no
// rounding moves it across a bucket's edge.
func rank(total, pct uint64) uint64 {
	hi, lo := bits.Mul64(total, pct)
	lo, carry := bits.Add64(lo, 99, 0)
	q, _ := bits.Div64(hi+carry, lo, 100) // hi+carry < 100: total*pct < 100*2^64
	return max(q, 1)
}

// bucketValue returns the value that stands for the bucket holding the
// event of rank r: its upper bound; its lower bound for the last, unbounded
// bucket; no less than 0.
func bucketValue(bounds []float64, counts []uint64, r uint64) time.Duration {
	var cum uint64
	for i, c := range counts {
		cum += c
		if cum < r {
			continue
		}
		v := bounds[i+1]
		if math.IsInf(v, 1) {
			v = bounds[i]
		}
		return durationOf(v)
	}
	return 0
}
