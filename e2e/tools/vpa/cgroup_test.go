package main

import (
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"
)

// TestCgroupRefusals checks that -cpu-quota says what it lacks: root, a
// cgroup v1 cpu controller, a writable one.
func TestCgroupRefusals(t *testing.T) {
	self := filepath.Join(t.TempDir(), "cgroup")
	if err := os.WriteFile(self, []byte("4:memory:/x\n1:cpu,cpuacct:/\n0::/\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	defer func(f func() int) { geteuid = f }(geteuid)

	geteuid = func() int { return 1000 }
	if _, err := makeCPUCgroup(t.TempDir(), self, 0.3); err == nil || !strings.Contains(err.Error(), "needs root") {
		t.Errorf("not root: %v, want an error saying it needs root", err)
	}

	geteuid = func() int { return 0 }
	if _, err := makeCPUCgroup(t.TempDir(), self, 0.3); err == nil || !strings.Contains(err.Error(), "cgroup v1 cpu controller") {
		t.Errorf("no controller: %v, want an error naming the cgroup v1 cpu controller", err)
	}

	// A directory that looks like the controller but is not: its new
	// cgroup has no files to write the quota to. The error says so and the
	// directory made is removed.
	root := t.TempDir()
	for _, f := range []string{"cpu.cfs_quota_us", "cpu.cfs_period_us", "cgroup.procs"} {
		os.WriteFile(filepath.Join(root, f), nil, 0o644)
	}
	if _, err := makeCPUCgroup(root, self, 0.3); err == nil || !strings.Contains(err.Error(), "cpu.cfs_period_us") {
		t.Errorf("a fake controller: %v, want an error writing cpu.cfs_period_us", err)
	}
	if m, _ := filepath.Glob(filepath.Join(root, "otelqueue-vpa-*")); len(m) != 0 {
		t.Errorf("left behind: %v", m)
	}
	if _, err := makeCPUCgroup(root, self, 0); err == nil {
		t.Error("a quota of 0 cores accepted")
	}

	got, err := homeProcs("/sys/fs/cgroup/cpu", self)
	if err != nil || got != "/sys/fs/cgroup/cpu/cgroup.procs" {
		t.Errorf("homeProcs = %q, %v", got, err)
	}
}

// TestCgroupQuota runs a busy shell and its busy child in a real cgroup of
// 0.2 cores (root and a writable cgroup v1 cpu controller only): the shell
// gets about 0.2 cores, its child, moved out, more.
func TestCgroupQuota(t *testing.T) {
	const root = "/sys/fs/cgroup/cpu"
	cg, err := makeCPUCgroup(root, "/proc/self/cgroup", 0.2)
	if err != nil {
		t.Skipf("no cgroup for the test: %v", err)
	}
	t.Cleanup(func() {
		if err := cg.remove(); err != nil {
			t.Error(err)
		}
		if _, err := os.Stat(cg.dir); !os.IsNotExist(err) {
			t.Errorf("the cgroup %s is still there: %v", cg.dir, err)
		}
	})
	cmd := exec.Command("sh", "-c", `echo $$ > "$0" && exec sh -c '(while :; do :; done) & while :; do :; done'`, cg.procs())
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	pid := cmd.Process.Pid
	stop := moveChildrenOut(cg, pid)
	t.Cleanup(func() {
		stop()
		for _, c := range descendants("/proc", pid) {
			if p, err := os.FindProcess(c); err == nil {
				p.Kill()
			}
		}
		cmd.Process.Kill()
		cmd.Wait()
	})
	time.Sleep(500 * time.Millisecond)
	kids := descendants("/proc", pid)
	if len(kids) != 1 {
		t.Fatalf("the shell's children: %v, want 1", kids)
	}
	if b, _ := os.ReadFile(cg.procs()); strings.TrimSpace(string(b)) != strconv.Itoa(pid) {
		t.Errorf("the cgroup holds %q, want the shell %d only", strings.TrimSpace(string(b)), pid)
	}
	if b, _ := os.ReadFile("/proc/" + strconv.Itoa(kids[0]) + "/cgroup"); strings.Contains(string(b), filepath.Base(cg.dir)) {
		t.Errorf("the child %d is still in the quota's cgroup:\n%s", kids[0], b)
	}
	a, err := readProc("/proc", pid)
	if err != nil {
		t.Fatal(err)
	}
	ka, err := readProc("/proc", kids[0])
	if err != nil {
		t.Fatal(err)
	}
	time.Sleep(3 * time.Second)
	b, _ := readProc("/proc", pid)
	kb, _ := readProc("/proc", kids[0])
	in, out := sampleOf(a, b).CPU, sampleOf(ka, kb).CPU
	if in < 0.1 || in > 0.25 {
		t.Errorf("the shell under 0.2 cores used %.3f cores", in)
	}
	if out < 0.3 {
		t.Logf("the child moved out used %.3f cores: a busy machine?", out)
	}
	t.Logf("under the quota %.3f cores, moved out %.3f", in, out)
}
