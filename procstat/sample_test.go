package procstat_test

import (
	"os"
	"path/filepath"
	"regexp"
	"runtime"
	"sync"
	"sync/atomic"
	"testing"
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
	s := procstat.Read()
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
	if s := procstat.Read(); s.HeapLive == 0 || s.HeapLive > s.MemoryUsed {
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
	readers := []func() procstat.Sample{procstat.Read, r.Read, fake.Read}
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

// TestVersionIsOtelqueues checks that Version is otelqueue.Version, read
// from otelqueue/version.go as release/release.sh writes it (package
// otelqueue imports this one: the test cannot import it).
func TestVersionIsOtelqueues(t *testing.T) {
	data, err := os.ReadFile(filepath.Join("..", "otelqueue", "version.go"))
	if err != nil {
		t.Fatal(err)
	}
	m := regexp.MustCompile(`(?m)^const Version = "([^"]*)"$`).FindSubmatch(data)
	if m == nil {
		t.Fatal(`otelqueue/version.go has no line 'const Version = "..."'`)
	}
	if string(m[1]) != procstat.Version {
		t.Errorf("procstat.Version = %q, otelqueue.Version = %q: release/release.sh must set both", procstat.Version, m[1])
	}
	data, err = os.ReadFile("version.go")
	if err != nil {
		t.Fatal(err)
	}
	if !regexp.MustCompile(`(?m)^const Version = "` + regexp.QuoteMeta(procstat.Version) + `"$`).Match(data) {
		t.Error(`procstat/version.go has no line 'const Version = "..."' for release/release.sh to rewrite`)
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
