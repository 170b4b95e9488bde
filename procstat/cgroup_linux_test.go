//go:build linux

package procstat_test

import (
	"bufio"
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/otelqueue/otelqueue/procstat"
)

// burnEnv, set in the environment, makes TestBurnHelper burn CPU: it is
// the child process of TestCgroupQuotaReal, started in the cgroup.
const burnEnv = "OTELQUEUE_PROCSTAT_BURN"

// resultPrefix starts the line of the child's output that holds its
// burnResult.
const resultPrefix = "procstat-result: "

// burnResult is what the child of TestCgroupQuotaReal reports.
type burnResult struct {
	Cgroup      procstat.CgroupCPU
	GOMAXPROCS  int
	NumCPU      int
	Window      procstat.Window
	Used        float64
	Utilization float64
}

// TestCgroupQuotaReal makes a cgroup with a half-core quota, runs a child
// process in it that keeps 2 goroutines on the CPU for 2 s, and checks what
// the child read: the quota, the cores it leaves (though GOMAXPROCS stays
// 2), and the throttling the kernel counted. It needs root and a writable
// cpu controller (cgroup v1's, or cgroup v2's); it skips, saying why,
// without them.
func TestCgroupQuotaReal(t *testing.T) {
	dir, version := makeQuotaCgroup(t)
	sh, err := exec.LookPath("sh")
	if err != nil {
		t.Skipf("no sh to start the child in the cgroup: %v", err)
	}
	// sh writes its pid into the cgroup, then becomes the test binary: the
	// child runs in the cgroup from its first instruction, as a
	// container's process does.
	cmd := exec.Command(sh, "-c", `echo $$ > "$PROCSTAT_CGROUP_PROCS" && exec "$0" "$@"`,
		os.Args[0], "-test.run=^TestBurnHelper$", "-test.count=1", "-test.v")
	cmd.Env = append(os.Environ(), burnEnv+"=1", "PROCSTAT_CGROUP_PROCS="+filepath.Join(dir, "cgroup.procs"))
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("child: %v\nstdout:\n%s\nstderr:\n%s", err, out, stderr.Bytes())
	}
	var res burnResult
	found := false
	for line := range strings.Lines(string(out)) {
		if js, ok := strings.CutPrefix(strings.TrimSpace(line), resultPrefix); ok {
			if err := json.Unmarshal([]byte(js), &res); err != nil {
				t.Fatalf("child's result %q: %v", js, err)
			}
			found = true
		}
	}
	if !found {
		t.Fatalf("the child printed no %q line:\n%s", resultPrefix, out)
	}
	js, _ := json.MarshalIndent(res, "", "  ")
	t.Logf("the child in %s read:\n%s", dir, js)

	cg, w := res.Cgroup, res.Window
	if !cg.Known || cg.Version != version || cg.Path != dir || cg.LimitPath != dir || cg.Limit != 0.5 || !cg.StatKnown {
		t.Errorf("Cgroup = %+v, want Known, Version %d, Path and LimitPath %s, Limit 0.5, StatKnown", cg, version, dir)
	}
	if os.Getenv("GOMAXPROCS") == "" {
		// The runtime's rule: the quota rounded up, at least 2, at most
		// the CPUs.
		if want := min(res.NumCPU, 2); res.GOMAXPROCS != want {
			t.Errorf("GOMAXPROCS = %d with %d CPUs and a half-core quota, want %d", res.GOMAXPROCS, res.NumCPU, want)
		}
	}
	if w.Cores != 0.5 || !w.Limited {
		t.Errorf("Cores %v, Limited %v; want 0.5 from the quota", w.Cores, w.Limited)
	}
	if !w.ThrottledKnown || w.Throttled <= 0.5 || w.ThrottledTime <= 0 {
		t.Errorf("ThrottledKnown %v, Throttled %v, ThrottledTime %v; want more than half the periods throttled", w.ThrottledKnown, w.Throttled, w.ThrottledTime)
	}
	if res.Used < 0.35 || res.Used > 0.6 {
		t.Errorf("Used = %v cores, want about the quota's 0.5 (0.35 to 0.6)", res.Used)
	}
}

// TestBurnHelper is the child of TestCgroupQuotaReal; it skips unless
// burnEnv is set.
func TestBurnHelper(t *testing.T) {
	if os.Getenv(burnEnv) == "" {
		t.Skip("the child process of TestCgroupQuotaReal")
	}
	first := new(procstat.Reader).Read()
	busy(2, 2*time.Second)
	last := new(procstat.Reader).Read()
	w := procstat.Between(first, last)
	js, err := json.Marshal(burnResult{
		Cgroup: last.Cgroup, GOMAXPROCS: last.GOMAXPROCS, NumCPU: last.NumCPU,
		Window: w, Used: w.Used(), Utilization: w.Utilization(),
	})
	if err != nil {
		t.Fatal(err)
	}
	fmt.Println(resultPrefix + string(js))
}

// makeQuotaCgroup makes the cgroup otelqueue-procstat-<pid> with a quota
// of half a core (50000 µs a 100000 µs period) under the cgroup v1 cpu
// controller or, without one, the cgroup v2 hierarchy, and removes it when
// the test ends. It returns its directory and the cgroup version. It skips
// the test when no cgroup can be made, saying why.
func makeQuotaCgroup(t *testing.T) (dir string, version int) {
	t.Helper()
	v1, v2 := cpuMounts(t)
	name := fmt.Sprintf("otelqueue-procstat-%d", os.Getpid())
	switch {
	case v1 != "":
		dir = filepath.Join(v1, name)
		mkdirCgroup(t, dir, "the cgroup v1 cpu controller")
		writeFile(t, filepath.Join(dir, "cpu.cfs_period_us"), "100000")
		writeFile(t, filepath.Join(dir, "cpu.cfs_quota_us"), "50000")
		// The largest weight, so that the child gets its half core on a
		// busy machine (go test runs packages in parallel): with the
		// default weight it could get less than its quota from the
		// scheduler, and not be throttled.
		writeFile(t, filepath.Join(dir, "cpu.shares"), "262144")
		return dir, 1
	case v2 != "":
		controllers, err := os.ReadFile(filepath.Join(v2, "cgroup.controllers"))
		if err != nil {
			t.Skipf("no cgroup v1 cpu controller is mounted, and the cgroup v2 hierarchy at %s has no readable cgroup.controllers: %v", v2, err)
		}
		if !slices.Contains(strings.Fields(string(controllers)), "cpu") {
			t.Skipf("no cgroup v1 cpu controller is mounted, and the cgroup v2 hierarchy at %s does not offer cpu (cgroup.controllers: %q): the cpu controller is bound to a v1 hierarchy, or not built", v2, strings.TrimSpace(string(controllers)))
		}
		subtree := filepath.Join(v2, "cgroup.subtree_control")
		enabled, err := os.ReadFile(subtree)
		if err != nil {
			t.Skipf("cannot read %s: %v", subtree, err)
		}
		if !slices.Contains(strings.Fields(string(enabled)), "cpu") {
			if err := os.WriteFile(subtree, []byte("+cpu"), 0); err != nil {
				t.Skipf("cannot enable the cpu controller for the children of %s (echo +cpu > %s): %v (not root, or a cgroup with processes of its own: cgroup v2 enables controllers only below cgroups without processes)", v2, subtree, err)
			}
			t.Cleanup(func() { _ = os.WriteFile(subtree, []byte("-cpu"), 0) })
		}
		dir = filepath.Join(v2, name)
		mkdirCgroup(t, dir, "the cgroup v2 hierarchy")
		writeFile(t, filepath.Join(dir, "cpu.max"), "50000 100000")
		writeFile(t, filepath.Join(dir, "cpu.weight"), "10000") // as cpu.shares above
		return dir, 2
	}
	t.Skip("neither a cgroup v1 cpu controller nor a cgroup v2 hierarchy is mounted (/proc/self/mountinfo)")
	return "", 0
}

// cpuMounts returns the mount points, from /proc/self/mountinfo, of the
// cgroup v1 hierarchy with the cpu controller and of the cgroup v2
// hierarchy; "" for none. (A small parser of its own: the test must not
// rely on the code it tests to set itself up.)
func cpuMounts(t *testing.T) (v1, v2 string) {
	t.Helper()
	f, err := os.Open("/proc/self/mountinfo")
	if err != nil {
		t.Skipf("no /proc/self/mountinfo: %v", err)
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		pre, post, ok := strings.Cut(sc.Text(), " - ")
		fields, tail := strings.Fields(pre), strings.Fields(post)
		if !ok || len(fields) < 5 || len(tail) < 3 || strings.Contains(fields[4], `\`) {
			continue
		}
		switch {
		case tail[0] == "cgroup" && v1 == "" && slices.Contains(strings.Split(tail[2], ","), "cpu"):
			v1 = fields[4]
		case tail[0] == "cgroup2" && v2 == "":
			v2 = fields[4]
		}
	}
	return v1, v2
}

// mkdirCgroup makes the cgroup dir and removes it when the test ends (the
// processes in it have exited by then: the kernel may take a moment to
// let go of them).
func mkdirCgroup(t *testing.T, dir, what string) {
	t.Helper()
	if err := os.Mkdir(dir, 0o755); err != nil {
		t.Skipf("cannot make a cgroup under %s (mkdir %s: %v); the test needs root (euid is %d) and a writable cgroup file system", what, dir, err, os.Geteuid())
	}
	t.Cleanup(func() {
		deadline := time.Now().Add(5 * time.Second)
		for {
			err := syscall.Rmdir(dir)
			if err == nil || errors.Is(err, os.ErrNotExist) {
				return
			}
			if !errors.Is(err, syscall.EBUSY) || time.Now().After(deadline) {
				t.Errorf("removing the cgroup %s: %v", dir, err)
				return
			}
			time.Sleep(10 * time.Millisecond)
		}
	})
}

func writeFile(t *testing.T, file, data string) {
	t.Helper()
	if err := os.WriteFile(file, []byte(data), 0); err != nil {
		t.Fatalf("echo %s > %s: %v", data, file, err)
	}
}
