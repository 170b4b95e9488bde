package procstat_test

import (
	"fmt"
	"runtime"
	"runtime/debug"
	"sync"
	"sync/atomic"
	"testing"
	"testing/fstest"
	"time"

	"github.com/otelqueue/otelqueue/procstat"
)

// busy keeps n goroutines on the CPU for d. They yield now and then
// (runtime.Gosched), so that the runtime records scheduling latencies: it
// samples one transition to runnable in 8.
func busy(n int, d time.Duration) {
	deadline := time.Now().Add(d)
	var wg sync.WaitGroup
	var sink atomic.Uint64
	for range n {
		wg.Go(func() {
			x := uint64(1)
			for time.Now().Before(deadline) {
				for range 10000 {
					x = x*6364136223846793005 + 1442695040888963407
				}
				runtime.Gosched()
			}
			sink.Add(x)
		})
	}
	wg.Wait()
}

func TestRead(t *testing.T) {
	s := new(procstat.Reader).Read()
	if s.At.IsZero() || s.GOMAXPROCS != runtime.GOMAXPROCS(0) || s.NumCPU != runtime.NumCPU() {
		t.Errorf("At %v, GOMAXPROCS %d, NumCPU %d", s.At, s.GOMAXPROCS, s.NumCPU)
	}
	if runtime.GOOS == "linux" || runtime.GOOS == "darwin" || runtime.GOOS == "windows" {
		if !s.CPUKnown || s.User <= 0 {
			t.Errorf("CPUKnown %v, User %v, System %v: want the CPU time on %s", s.CPUKnown, s.User, s.System, runtime.GOOS)
		}
	}
	if s.MemoryUsed == 0 {
		t.Error("MemoryUsed = 0")
	}
	runtime.GC()
	if s := new(procstat.Reader).Read(); s.HeapLive == 0 || s.HeapLive > s.MemoryUsed {
		t.Errorf("after a GC: HeapLive %d, MemoryUsed %d", s.HeapLive, s.MemoryUsed)
	}
	h := s.SchedLatency
	if len(h.Counts) == 0 || len(h.Bounds) != len(h.Counts)+1 {
		t.Errorf("SchedLatency: %d bounds, %d counts", len(h.Bounds), len(h.Counts))
	}
	if runtime.GOOS != "linux" && s.Cgroup != (procstat.CgroupCPU{}) {
		t.Errorf("Cgroup = %+v on %s, want unknown", s.Cgroup, runtime.GOOS)
	}
	t.Logf("%+v", s.Cgroup)
}

// TestMemoryNeeded checks that the memory needed is the top of the
// sawtooth: with a large live heap just collected, the heap may grow to
// its goal (GOGC=100: twice the live heap) before the next collection,
// which MemoryUsed, read right after the collection, does not hold yet.
func TestMemoryNeeded(t *testing.T) {
	defer debug.SetGCPercent(debug.SetGCPercent(100))
	live := make([][]byte, 64)
	for i := range live {
		live[i] = make([]byte, 1<<20) // 64 MiB live
	}
	runtime.GC()
	s := new(procstat.Reader).Read()
	runtime.KeepAlive(live)
	if s.HeapLive < 64<<20 {
		t.Fatalf("HeapLive %d after keeping 64 MiB live", s.HeapLive)
	}
	if s.HeapGoal < s.HeapLive*19/10 {
		t.Errorf("HeapGoal %d, want about twice HeapLive %d at GOGC=100", s.HeapGoal, s.HeapLive)
	}
	if s.MemoryNeeded < s.MemoryUsed {
		t.Errorf("MemoryNeeded %d under MemoryUsed %d", s.MemoryNeeded, s.MemoryUsed)
	}
	// What the runtime holds beyond its heap's spans, plus the goal.
	if s.MemoryNeeded < s.HeapGoal {
		t.Errorf("MemoryNeeded %d under HeapGoal %d", s.MemoryNeeded, s.HeapGoal)
	}
	if s.MemoryUsed >= s.HeapGoal {
		t.Logf("MemoryUsed %d already at the goal %d: the check above is weak on this run", s.MemoryUsed, s.HeapGoal)
	}
	t.Logf("live %d, used %d, goal %d, needed %d", s.HeapLive, s.MemoryUsed, s.HeapGoal, s.MemoryNeeded)
}

// TestReadConcurrently reads from many goroutines at once, through one
// Reader, the package's, and a Reader of a fake tree (run with -race):
// every Sample is whole, and the histograms are not shared.
func TestReadConcurrently(t *testing.T) {
	fake := procstat.NewFSReader(tree{
		"/" + cgroupFile:            "0::/a\n",
		"/" + mountinfoFile:         v2Mount,
		"/sys/fs/cgroup/a/cpu.max":  "50000 100000\n",
		"/sys/fs/cgroup/a/cpu.stat": v2Stat(3, 2, 1),
	}.fs(), cgroupFile, mountinfoFile)
	var r procstat.Reader
	readers := []func() procstat.Sample{(*procstat.Reader)(nil).Read, r.Read, fake.Read}
	var wg sync.WaitGroup
	samples := make([][]procstat.Sample, 24)
	for g := range samples {
		wg.Go(func() {
			for i := range 30 {
				samples[g] = append(samples[g], readers[(g+i)%len(readers)]())
			}
		})
	}
	wg.Wait()
	seen := map[*uint64]bool{}
	for g, ss := range samples {
		for i, s := range ss {
			if s.GOMAXPROCS <= 0 || len(s.SchedLatency.Counts) == 0 {
				t.Fatalf("goroutine %d, sample %d: %+v", g, i, s)
			}
			if p := &s.SchedLatency.Counts[0]; seen[p] {
				t.Fatalf("goroutine %d, sample %d shares its Counts with another sample", g, i)
			} else {
				seen[p] = true
			}
			if (g+i)%len(readers) == 2 && (!s.Cgroup.Known || s.Cgroup.Limit != 0.5 || s.Cgroup.Periods != 3) {
				t.Fatalf("goroutine %d, sample %d of the fake tree: %+v", g, i, s.Cgroup)
			}
			if i > 0 && procstat.Between(ss[i-1], s).Duration < 0 {
				t.Fatal("negative duration")
			}
		}
	}
}

// BenchmarkRead is the cost of a Read of this process: on Linux, its
// cgroup's files (its depth below the mount point decides how many) and
// /proc/self/cgroup.
func BenchmarkRead(b *testing.B) {
	var r procstat.Reader
	b.ReportAllocs()
	for b.Loop() {
		r.Read()
	}
}

// TestRunDelay checks the threads' run delay: summed over
// /proc/self/task/*/schedstat, kept when a thread exits (the total never
// goes back), unknown without the files; and read on this machine.
func TestRunDelay(t *testing.T) {
	schedstat := func(wait int64) *fstest.MapFile {
		return &fstest.MapFile{Data: []byte(fmt.Sprintf("123456 %d 7\n", wait))}
	}
	fsys := fstest.MapFS{
		"proc/self/task/10/schedstat": schedstat(1e9),
		"proc/self/task/11/schedstat": schedstat(2e9),
	}
	r := procstat.NewFSReader(fsys, "proc/self/cgroup", "proc/self/mountinfo")
	if s := r.Read(); !s.RunDelayKnown || s.RunDelay != 3*time.Second {
		t.Fatalf("two threads of 1s and 2s: %v %v", s.RunDelay, s.RunDelayKnown)
	}
	delete(fsys, "proc/self/task/11/schedstat") // thread 11 exits
	fsys["proc/self/task/10/schedstat"] = schedstat(1.5e9)
	fsys["proc/self/task/12/schedstat"] = schedstat(0.25e9)
	if s := r.Read(); s.RunDelay != 3750*time.Millisecond {
		t.Errorf("after 11 exited, 10 grew by 0.5s and 12 came with 0.25s: %v, want 3.75s", s.RunDelay)
	}
	if s := procstat.NewFSReader(fstest.MapFS{}, "proc/self/cgroup", "proc/self/mountinfo").Read(); s.RunDelayKnown {
		t.Error("run delay known without schedstat files")
	}
	if runtime.GOOS == "linux" {
		if s := new(procstat.Reader).Read(); !s.RunDelayKnown {
			t.Error("no run delay read on Linux (is /proc/self/task/*/schedstat there?)")
		}
	}
}
