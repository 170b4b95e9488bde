package cpulimit

import (
	"bufio"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"syscall"
	"testing"
	"time"
)

// The quota of the test's cgroup: half a core.
const (
	periodMicros = 100000
	quotaMicros  = 50000
	quotaCores   = float64(quotaMicros) / periodMicros
)

// cgroup is a cgroup with a CPU quota, made for the test: its processes
// get quotaMicros of CPU every periodMicros until lift.
type cgroup struct {
	dir     string
	version int // 1 or 2
}

// procs is the file a pid is written to to move that process into the
// cgroup.
func (c *cgroup) procs() string { return filepath.Join(c.dir, "cgroup.procs") }

// quotaFile is the file that holds the quota: cpu.cfs_quota_us (v1) or
// cpu.max (v2).
func (c *cgroup) quotaFile() string {
	if c.version == 1 {
		return filepath.Join(c.dir, "cpu.cfs_quota_us")
	}
	return filepath.Join(c.dir, "cpu.max")
}

// limit sets the quota of half a core.
func (c *cgroup) limit() error {
	if c.version == 1 {
		return write(c.quotaFile(), fmt.Sprint(quotaMicros))
	}
	return write(c.quotaFile(), fmt.Sprintf("%d %d", quotaMicros, periodMicros))
}

// lift removes the quota: the cgroup's processes may use every core.
func (c *cgroup) lift() error {
	if c.version == 1 {
		return write(c.quotaFile(), "-1")
	}
	return write(c.quotaFile(), fmt.Sprintf("max %d", periodMicros))
}

// liftText says how lift lifts the quota.
func (c *cgroup) liftText() string {
	if c.version == 1 {
		return "-1 written to cpu.cfs_quota_us"
	}
	return fmt.Sprintf("\"max %d\" written to cpu.max", periodMicros)
}

// String is the cgroup as the report shows it.
func (c *cgroup) String() string {
	return fmt.Sprintf("cgroup v%d %s", c.version, c.dir)
}

// makeCgroup makes the cgroup otelqueue-e2e-cpulimit-<pid> with the quota
// of half a core under the cgroup v1 cpu controller or, without one, the
// cgroup v2 hierarchy, and removes it when the test ends (after the
// cleanups registered later, which stop its processes). It skips the test
// when no such cgroup can be made, saying why: the path it tried and the
// error.
func makeCgroup(t *testing.T) *cgroup {
	t.Helper()
	// The largest weight, so that the app gets its half core on a busy
	// machine (go test runs packages in parallel, and another build may
	// run): with the default weight it could get less than its quota from
	// the scheduler and show a machine short of CPU rather than a quota.
	return newCgroup(t, "",
		[][2]string{
			{"cpu.cfs_period_us", fmt.Sprint(periodMicros)},
			{"cpu.cfs_quota_us", fmt.Sprint(quotaMicros)},
			{"cpu.shares", "262144"},
		},
		[][2]string{
			{"cpu.max", fmt.Sprintf("%d %d", quotaMicros, periodMicros)},
			{"cpu.weight", "10000"},
		})
}

// newCgroup makes the cgroup otelqueue-e2e-cpulimit-<pid><suffix> under
// the cgroup v1 cpu controller or, without one, the cgroup v2 hierarchy,
// writes its files (v1's or v2's), and removes it when the test ends. It
// skips the test when no such cgroup can be made, saying why.
func newCgroup(t *testing.T, suffix string, v1Files, v2Files [][2]string) *cgroup {
	t.Helper()
	v1, v2 := cpuMounts(t)
	name := fmt.Sprintf("otelqueue-e2e-cpulimit-%d%s", os.Getpid(), suffix)
	switch {
	case v1 != "":
		c := &cgroup{dir: filepath.Join(v1, name), version: 1}
		mkdirCgroup(t, c.dir, "the cgroup v1 cpu controller mounted at "+v1)
		setUp(t, c, v1Files...)
		return c
	case v2 != "":
		controllers, err := os.ReadFile(filepath.Join(v2, "cgroup.controllers"))
		if err != nil {
			cannotRun(t, "no cgroup v1 cpu controller is mounted, and the cgroup v2 hierarchy at %s has no readable cgroup.controllers: %v", v2, err)
		}
		if !slices.Contains(strings.Fields(string(controllers)), "cpu") {
			cannotRun(t, "no cgroup v1 cpu controller is mounted, and the cgroup v2 hierarchy at %s does not offer cpu (cgroup.controllers: %q): the cpu controller is bound to a v1 hierarchy, or not built", v2, strings.TrimSpace(string(controllers)))
		}
		subtree := filepath.Join(v2, "cgroup.subtree_control")
		enabled, err := os.ReadFile(subtree)
		if err != nil {
			cannotRun(t, "cannot read %s: %v", subtree, err)
		}
		if !slices.Contains(strings.Fields(string(enabled)), "cpu") {
			if err := write(subtree, "+cpu"); err != nil {
				cannotRun(t, "cannot enable the cpu controller for the children of %s: %v (not root, or a cgroup with processes of its own: cgroup v2 enables controllers only below cgroups without processes)", v2, err)
			}
			t.Cleanup(func() { _ = write(subtree, "-cpu") })
		}
		c := &cgroup{dir: filepath.Join(v2, name), version: 2}
		mkdirCgroup(t, c.dir, "the cgroup v2 hierarchy mounted at "+v2)
		setUp(t, c, v2Files...)
		return c
	}
	cannotRun(t, "neither a cgroup v1 cpu controller nor a cgroup v2 hierarchy is mounted (/proc/self/mountinfo)")
	return nil
}

// setUp writes each file of c with its value, and skips the test at the
// first it cannot write: the cgroup then cannot hold what the test needs.
func setUp(t *testing.T, c *cgroup, files ...[2]string) {
	t.Helper()
	for _, f := range files {
		path := filepath.Join(c.dir, f[0])
		if err := write(path, f[1]); err != nil {
			cannotRun(t, "cannot set up the %s: %v", c, err)
		}
	}
}

// cpuMounts returns the mount points, from /proc/self/mountinfo, of the
// cgroup v1 hierarchy with the cpu controller and of the cgroup v2
// hierarchy; "" for none.
func cpuMounts(t *testing.T) (v1, v2 string) {
	t.Helper()
	f, err := os.Open("/proc/self/mountinfo")
	if err != nil {
		cannotRun(t, "cannot find the cgroup hierarchies: %v", err)
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		// "36 35 98:0 / /mnt rw,noatime master:1 - cgroup cgroup rw,cpu":
		// the mount point is the fifth field; after " - ", the type, the
		// source and the super options (the controllers of a v1
		// hierarchy).
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

// mkdirCgroup makes the cgroup dir, skipping the test when it cannot, and
// removes it when the test ends: its processes have exited by then (the
// cleanups registered later have stopped them), though the kernel may take
// a moment to let go of them.
func mkdirCgroup(t *testing.T, dir, under string) {
	t.Helper()
	if err := os.Mkdir(dir, 0o755); err != nil {
		cannotRun(t, "cannot make a cgroup under %s: %v (the test needs root, euid %d here, and a writable cgroup file system)", under, err, os.Geteuid())
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

// write writes data to a cgroup file, as echo data > file does.
func write(file, data string) error {
	if err := os.WriteFile(file, []byte(data), 0); err != nil {
		return fmt.Errorf("echo %s > %s: %w", data, file, err)
	}
	return nil
}

// cannotRun skips the test for why, a machine that cannot give it a
// cgroup; with OTELQUEUE_REQUIRE_CGROUP set (make e2e under CI, on a
// machine that can) it fails instead, so that a broken set-up does not
// keep the regression it guards hidden.
func cannotRun(t *testing.T, format string, args ...any) {
	t.Helper()
	if os.Getenv("OTELQUEUE_REQUIRE_CGROUP") != "" {
		t.Fatalf("OTELQUEUE_REQUIRE_CGROUP is set, but "+format, args...)
	}
	t.Skipf(format, args...)
}
