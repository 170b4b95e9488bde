package procstat_test

import (
	"math"
	"testing"
	"time"

	"github.com/otelqueue/otelqueue/procstat"
)

// t0 is the time of the first sample of the synthetic windows.
var t0 = time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)

// quota is a cgroup with a quota of limit cores and the given counters.
func quota(limit float64, periods, throttled uint64, throttledTime time.Duration) procstat.CgroupCPU {
	return procstat.CgroupCPU{
		Known: true, Version: 2, Path: "/sys/fs/cgroup/app", LimitPath: "/sys/fs/cgroup/app", Limit: limit,
		StatKnown: true, Periods: periods, ThrottledPeriods: throttled, ThrottledTime: throttledTime,
	}
}

// sample is a Sample at t0+at with CPU time user+system, GOMAXPROCS procs
// and NumCPU cpus.
func sample(at, user, system time.Duration, procs, cpus int, cg procstat.CgroupCPU) procstat.Sample {
	return procstat.Sample{
		At: t0.Add(at), CPUKnown: true, User: user, System: system,
		GOMAXPROCS: procs, NumCPU: cpus, Cgroup: cg,
		HeapLive: uint64(at), MemoryUsed: 2 * uint64(at),
	}
}

func TestBetween(t *testing.T) {
	s := time.Second
	ms := time.Millisecond
	noCgroup := procstat.CgroupCPU{}
	tests := []struct {
		name       string
		a, b       procstat.Sample
		want       procstat.Window
		used, util float64
	}{
		{
			name: "no cgroup: GOMAXPROCS is the least",
			a:    sample(0, 1*s, 500*ms, 4, 8, noCgroup),
			b:    sample(2*s, 3*s, 1*s, 4, 8, noCgroup),
			want: procstat.Window{Duration: 2 * s, CPUKnown: true, CPU: 2500 * ms, Cores: 4, HeapLive: uint64(2 * s), MemoryUsed: uint64(4 * s)},
			used: 1.25, util: 0.3125,
		},
		{
			name: "NumCPU is the least",
			a:    sample(0, 0, 0, 8, 2, noCgroup),
			b:    sample(s, 2*s, 0, 8, 2, noCgroup),
			want: procstat.Window{Duration: s, CPUKnown: true, CPU: 2 * s, Cores: 2, HeapLive: uint64(s), MemoryUsed: uint64(2 * s)},
			used: 2, util: 1,
		},
		{
			name: "a half-core quota under GOMAXPROCS 2, throttled",
			a:    sample(0, 0, 0, 2, 2, quota(0.5, 100, 10, s)),
			b:    sample(2*s, 800*ms, 200*ms, 2, 2, quota(0.5, 120, 25, 1500*ms)),
			want: procstat.Window{
				Duration: 2 * s, CPUKnown: true, CPU: s, Cores: 0.5, Limited: true,
				ThrottledKnown: true, Throttled: 0.75, ThrottledTime: 500 * ms,
				HeapLive: uint64(2 * s), MemoryUsed: uint64(4 * s),
			},
			used: 0.5, util: 1,
		},
		{
			name: "a quota equal to GOMAXPROCS limits",
			a:    sample(0, 0, 0, 2, 4, quota(2, 0, 0, 0)),
			b:    sample(s, s, 0, 2, 4, quota(2, 10, 0, 0)),
			want: procstat.Window{Duration: s, CPUKnown: true, CPU: s, Cores: 2, Limited: true, ThrottledKnown: true, HeapLive: uint64(s), MemoryUsed: uint64(2 * s)},
			used: 1, util: 0.5,
		},
		{
			name: "a quota above GOMAXPROCS: not limited by it, still counted",
			a:    sample(0, 0, 0, 4, 4, quota(8, 0, 0, 0)),
			b:    sample(s, s, 0, 4, 4, quota(8, 10, 1, ms)),
			want: procstat.Window{Duration: s, CPUKnown: true, CPU: s, Cores: 4, ThrottledKnown: true, Throttled: 0.1, ThrottledTime: ms, HeapLive: uint64(s), MemoryUsed: uint64(2 * s)},
			used: 1, util: 0.25,
		},
		{
			name: "no period elapsed: throttling unknown",
			a:    sample(0, 0, 0, 2, 2, quota(0.5, 100, 10, s)),
			b:    sample(s, 0, 0, 2, 2, quota(0.5, 100, 10, s)),
			want: procstat.Window{Duration: s, CPUKnown: true, Cores: 0.5, Limited: true, HeapLive: uint64(s), MemoryUsed: uint64(2 * s)},
		},
		{
			name: "counters went back (the cgroup was made again)",
			a:    sample(0, 0, 0, 2, 2, quota(0.5, 100, 10, s)),
			b:    sample(s, 0, 0, 2, 2, quota(0.5, 5, 1, ms)),
			want: procstat.Window{Duration: s, CPUKnown: true, Cores: 0.5, Limited: true, HeapLive: uint64(s), MemoryUsed: uint64(2 * s)},
		},
		{
			name: "more throttled periods than periods: at most 1",
			a:    sample(0, 0, 0, 2, 2, quota(0.5, 0, 0, 0)),
			b:    sample(s, 0, 0, 2, 2, quota(0.5, 4, 9, ms)),
			want: procstat.Window{Duration: s, CPUKnown: true, Cores: 0.5, Limited: true, ThrottledKnown: true, Throttled: 1, ThrottledTime: ms, HeapLive: uint64(s), MemoryUsed: uint64(2 * s)},
		},
		{
			name: "moved to another cgroup: counters not comparable",
			a:    sample(0, 0, 0, 2, 2, func() procstat.CgroupCPU { c := quota(0.5, 0, 0, 0); c.LimitPath = "/sys/fs/cgroup/old"; return c }()),
			b:    sample(s, 0, 0, 2, 2, quota(0.5, 10, 5, ms)),
			want: procstat.Window{Duration: s, CPUKnown: true, Cores: 0.5, Limited: true, HeapLive: uint64(s), MemoryUsed: uint64(2 * s)},
		},
		{
			name: "cpu.stat unknown",
			a:    sample(0, 0, 0, 2, 2, quota(0.5, 0, 0, 0)),
			b:    sample(s, 0, 0, 2, 2, func() procstat.CgroupCPU { c := quota(0.5, 0, 0, 0); c.StatKnown = false; return c }()),
			want: procstat.Window{Duration: s, CPUKnown: true, Cores: 0.5, Limited: true, HeapLive: uint64(s), MemoryUsed: uint64(2 * s)},
		},
		{
			// The window spans the change: it is judged by the fewer cores.
			name: "the quota was lifted: counters are not counted, the tighter cores are",
			a:    sample(0, 0, 0, 2, 2, quota(0.5, 0, 0, 0)),
			b:    sample(s, 0, 0, 2, 2, quota(0, 10, 5, ms)),
			want: procstat.Window{Duration: s, CPUKnown: true, Cores: 0.5, Limited: true, HeapLive: uint64(s), MemoryUsed: uint64(2 * s)},
		},
		{
			name: "a quota set in the window: the tighter cores",
			a:    sample(0, 0, 0, 2, 2, noCgroup),
			b:    sample(s, 0, 0, 2, 2, quota(0.5, 10, 5, ms)),
			want: procstat.Window{Duration: s, CPUKnown: true, Cores: 0.5, Limited: true, HeapLive: uint64(s), MemoryUsed: uint64(2 * s)},
		},
		{
			name: "a cgroup limit that is not known is not used",
			a:    sample(0, 0, 0, 2, 2, noCgroup),
			b:    sample(s, 0, 0, 2, 2, func() procstat.CgroupCPU { c := quota(0.5, 10, 5, ms); c.Known = false; return c }()),
			want: procstat.Window{Duration: s, CPUKnown: true, Cores: 2, HeapLive: uint64(s), MemoryUsed: uint64(2 * s)},
		},
		{
			name: "CPU time went back: 0, not negative",
			a:    sample(0, 5*s, 5*s, 2, 2, noCgroup),
			b:    sample(s, s, s, 2, 2, noCgroup),
			want: procstat.Window{Duration: s, CPUKnown: true, Cores: 2, HeapLive: uint64(s), MemoryUsed: uint64(2 * s)},
		},
		{
			name: "CPU time unknown in one sample",
			a:    func() procstat.Sample { x := sample(0, 0, 0, 2, 2, noCgroup); x.CPUKnown = false; return x }(),
			b:    sample(s, s, s, 2, 2, noCgroup),
			want: procstat.Window{Duration: s, Cores: 2, HeapLive: uint64(s), MemoryUsed: uint64(2 * s)},
		},
		{
			name: "no cores known",
			a:    sample(0, 0, 0, 0, 0, noCgroup),
			b:    sample(s, s, 0, -1, 0, noCgroup),
			want: procstat.Window{Duration: s, CPUKnown: true, CPU: s, HeapLive: uint64(s), MemoryUsed: uint64(2 * s)},
			used: 1,
		},
		{
			name: "only the quota known",
			a:    sample(0, 0, 0, 0, 0, quota(0.25, 0, 0, 0)),
			b:    sample(s, 250*ms, 0, 0, 0, quota(0.25, 10, 0, 0)),
			want: procstat.Window{Duration: s, CPUKnown: true, CPU: 250 * ms, Cores: 0.25, Limited: true, ThrottledKnown: true, HeapLive: uint64(s), MemoryUsed: uint64(2 * s)},
			used: 0.25, util: 1,
		},
		{name: "a zero a", a: procstat.Sample{}, b: sample(s, s, s, 2, 2, noCgroup)},
		{name: "a zero b", a: sample(s, s, s, 2, 2, noCgroup), b: procstat.Sample{}},
		{name: "b before a", a: sample(2*s, 2*s, 0, 2, 2, noCgroup), b: sample(s, s, 0, 2, 2, noCgroup)},
		{name: "b at a", a: sample(s, 0, 0, 2, 2, noCgroup), b: sample(s, s, 0, 2, 2, noCgroup)},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			w := procstat.Between(tt.a, tt.b)
			// MaxProcs and Available: TestBetweenAvailable.
			w.MaxProcs, w.Available = 0, 0
			if w != tt.want {
				t.Errorf("Between =\n%+v\nwant\n%+v", w, tt.want)
			}
			if got := w.Used(); got != tt.used {
				t.Errorf("Used() = %v, want %v", got, tt.used)
			}
			if got := w.Utilization(); got != tt.util {
				t.Errorf("Utilization() = %v, want %v", got, tt.util)
			}
			checkSane(t, w)
		})
	}
}

// checkSane fails the test for a negative, infinite or NaN figure of w.
func checkSane(t *testing.T, w procstat.Window) {
	t.Helper()
	for name, v := range map[string]float64{
		"Duration": float64(w.Duration), "CPU": float64(w.CPU), "Cores": w.Cores,
		"Throttled": w.Throttled, "ThrottledTime": float64(w.ThrottledTime),
		"SchedP50": float64(w.SchedP50), "SchedP99": float64(w.SchedP99),
		"Used()": w.Used(), "Utilization()": w.Utilization(),
	} {
		if v < 0 || math.IsNaN(v) || math.IsInf(v, 0) {
			t.Errorf("%s = %v in %+v", name, v, w)
		}
	}
	if w.Throttled > 1 {
		t.Errorf("Throttled = %v > 1", w.Throttled)
	}
}

// TestBetweenNeverNegative crosses samples with odd figures: every Window
// is sane.
func TestBetweenNeverNegative(t *testing.T) {
	durations := []time.Duration{math.MinInt64, -time.Second, 0, 1, time.Second, math.MaxInt64}
	var samples []procstat.Sample
	for _, at := range []time.Duration{0, time.Nanosecond, time.Hour} {
		for _, cpu := range durations {
			for _, limit := range []float64{0, 1e-300, 0.5, math.MaxFloat64} {
				for _, procs := range []int{math.MinInt, 0, 1} {
					cg := quota(limit, uint64(cpu), uint64(cpu)/2, cpu)
					samples = append(samples, sample(at, cpu, cpu, procs, procs, cg))
				}
			}
		}
	}
	samples = append(samples, procstat.Sample{})
	for _, a := range samples {
		for _, b := range samples {
			checkSane(t, procstat.Between(a, b))
		}
	}
}

// hist is a cumulative scheduling-latency histogram with the bounds
// -Inf, 0, 1ms, 2ms, 4ms, +Inf (seconds).
func hist(counts ...uint64) procstat.SchedHistogram {
	return procstat.SchedHistogram{
		Bounds: []float64{math.Inf(-1), 0, 0.001, 0.002, 0.004, math.Inf(1)},
		Counts: counts,
	}
}

func TestBetweenSchedQuantiles(t *testing.T) {
	ms := time.Millisecond
	tests := []struct {
		name     string
		a, b     procstat.SchedHistogram
		p50, p99 time.Duration
	}{
		{"both quantiles on bucket edges: the lower bucket", hist(0, 10, 0, 0, 0), hist(0, 10, 50, 50, 0), 2 * ms, 4 * ms},
		{"p99 in the last of 100", hist(0, 0, 0, 0, 0), hist(0, 0, 98, 1, 1), 2 * ms, 4 * ms},
		{"p99 at rank 99 of 100 exactly", hist(0, 0, 0, 0, 0), hist(0, 0, 99, 1, 0), 2 * ms, 2 * ms},
		{"p99 past a bucket of 98 of 100", hist(0, 0, 0, 0, 0), hist(0, 0, 98, 2, 0), 2 * ms, 4 * ms},
		{"one event", hist(0, 1, 1, 1, 1), hist(0, 1, 1, 2, 1), 4 * ms, 4 * ms},
		{"the unbounded bucket: its lower bound", hist(0, 0, 0, 0, 5), hist(0, 0, 0, 0, 9), 4 * ms, 4 * ms},
		{"the first bucket (below 0): 0", hist(0, 0, 0, 0, 0), hist(3, 0, 0, 0, 0), 0, 0},
		{"the [0, 1ms) bucket: 1ms", hist(0, 0, 0, 0, 0), hist(0, 7, 0, 0, 0), ms, ms},
		{"nothing in the window", hist(1, 2, 3, 4, 5), hist(1, 2, 3, 4, 5), 0, 0},
		{"a without counts counts from 0", procstat.SchedHistogram{}, hist(0, 1, 0, 0, 1), ms, 4 * ms},
		{"counts went back", hist(0, 5, 0, 0, 0), hist(0, 4, 9, 0, 0), 0, 0},
		{"other bounds", procstat.SchedHistogram{Bounds: []float64{math.Inf(-1), 0, 1, 2, 4, math.Inf(1)}, Counts: []uint64{0, 0, 0, 0, 0}}, hist(0, 1, 0, 0, 0), 0, 0},
		{"other lengths", hist(0, 0, 0, 0), hist(0, 1, 0, 0, 0), 0, 0},
		{"b without a histogram", hist(0, 0, 0, 0, 0), procstat.SchedHistogram{}, 0, 0},
		{"b with too few bounds", hist(0, 0, 0, 0, 0), procstat.SchedHistogram{Bounds: []float64{0, 1}, Counts: []uint64{1, 2}}, 0, 0},
		{"a total beyond uint64", hist(0, 0, 0, 0, 0), hist(0, math.MaxUint64, 1, 0, 0), 0, 0},
		{"huge counts", hist(0, 0, 0, 0, 0), hist(0, math.MaxUint64/2, math.MaxUint64/2, 0, 1), 2 * ms, 2 * ms},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			a := sample(0, 0, 0, 1, 1, procstat.CgroupCPU{})
			b := sample(time.Second, 0, 0, 1, 1, procstat.CgroupCPU{})
			a.SchedLatency, b.SchedLatency = tt.a, tt.b
			w := procstat.Between(a, b)
			if w.SchedP50 != tt.p50 || w.SchedP99 != tt.p99 {
				t.Errorf("SchedP50, SchedP99 = %v, %v; want %v, %v", w.SchedP50, w.SchedP99, tt.p50, tt.p99)
			}
		})
	}
}

// TestBetweenRealSamples reads the process twice around some work that
// makes goroutines wait for a CPU: the window has the work's CPU time and
// scheduling latencies.
func TestBetweenRealSamples(t *testing.T) {
	a := new(procstat.Reader).Read()
	busy(4, 100*time.Millisecond)
	b := new(procstat.Reader).Read()
	w := procstat.Between(a, b)
	checkSane(t, w)
	if w.Duration < 100*time.Millisecond {
		t.Errorf("Duration = %v, want at least the 100ms of work", w.Duration)
	}
	if len(b.SchedLatency.Counts) == 0 || len(b.SchedLatency.Bounds) != len(b.SchedLatency.Counts)+1 {
		t.Fatalf("SchedLatency has %d bounds and %d counts", len(b.SchedLatency.Bounds), len(b.SchedLatency.Counts))
	}
	if w.SchedP50 == 0 || w.SchedP99 < w.SchedP50 {
		t.Errorf("SchedP50 %v, SchedP99 %v: want 0 < p50 <= p99 after 4 goroutines shared the CPUs", w.SchedP50, w.SchedP99)
	}
	if b.MemoryUsed == 0 || w.MemoryUsed != b.MemoryUsed || w.HeapLive != b.HeapLive {
		t.Errorf("MemoryUsed %d, HeapLive %d; Window's %d, %d", b.MemoryUsed, b.HeapLive, w.MemoryUsed, w.HeapLive)
	}
	if w.Cores <= 0 || w.Cores > float64(b.GOMAXPROCS) {
		t.Errorf("Cores = %v with GOMAXPROCS %d", w.Cores, b.GOMAXPROCS)
	}
	if w.CPUKnown && w.CPU < 20*time.Millisecond {
		t.Errorf("CPU = %v after 100ms of busy work on %d goroutines", w.CPU, 4)
	}
}

// TestBetweenAvailable checks the cores a process may use whatever its
// GOMAXPROCS (the least of NumCPU and the quota) beside GOMAXPROCS itself,
// and the run delay and the idle GC's CPU of the window.
func TestBetweenAvailable(t *testing.T) {
	s := time.Second
	for _, tc := range []struct {
		name      string
		procs     int
		cpus      int
		cg        procstat.CgroupCPU
		available float64
	}{
		{"GOMAXPROCS below the CPUs", 1, 2, procstat.CgroupCPU{}, 2},
		{"a quota under the CPUs", 2, 4, quota(1.5, 0, 0, 0), 1.5},
		{"the CPUs under the quota", 2, 2, quota(3, 0, 0, 0), 2},
	} {
		w := procstat.Between(sample(0, 0, 0, tc.procs, tc.cpus, tc.cg), sample(s, s, 0, tc.procs, tc.cpus, tc.cg))
		if w.MaxProcs != tc.procs || w.Available != tc.available {
			t.Errorf("%s: MaxProcs %d, Available %v; want %d, %v", tc.name, w.MaxProcs, w.Available, tc.procs, tc.available)
		}
	}

	a, b := sample(0, 0, 0, 2, 2, procstat.CgroupCPU{}), sample(2*s, 700*time.Millisecond, 100*time.Millisecond, 2, 2, procstat.CgroupCPU{})
	a.RunDelay, a.RunDelayKnown, a.GCIdle = s, true, 100*time.Millisecond
	b.RunDelay, b.RunDelayKnown, b.GCIdle = 2200*time.Millisecond, true, 300*time.Millisecond
	w := procstat.Between(a, b)
	if !w.RunDelayKnown || w.RunDelay != 1200*time.Millisecond || w.GCIdle != 200*time.Millisecond {
		t.Errorf("RunDelay %v (known %v), GCIdle %v; want 1.2s, 200ms", w.RunDelay, w.RunDelayKnown, w.GCIdle)
	}
	b.RunDelayKnown = false
	if w := procstat.Between(a, b); w.RunDelayKnown {
		t.Error("RunDelay known with the second sample's unknown")
	}
}
