package main

import (
	"errors"
	"fmt"
	"math"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"time"
)

// cgroupPeriod is the CFS period of the quota: the kernel's default,
// 100 ms.
const cgroupPeriod = 100 * time.Millisecond

// cpuCgroup is a cgroup v1 of the cpu controller with a CFS quota, made for
// one run: the demo runs in it, its children are moved back out (the
// embedded API server stands for the cluster's, which is no part of the
// controller's pod).
type cpuCgroup struct {
	dir   string
	quota float64 // cores
	// home is the cgroup.procs of the cgroup this program runs in, where the
	// demo's children and whatever is left at the end are moved.
	home string
}

// geteuid is os.Geteuid, replaced by the tests.
var geteuid = os.Geteuid

// makeCPUCgroup makes the cgroup otelqueue-vpa-<pid> under root (the cgroup
// v1 cpu controller's mount, /sys/fs/cgroup/cpu) with a quota of cores. It
// needs root and a writable cgroup v1 cpu controller, and says which is
// missing.
func makeCPUCgroup(root, selfCgroup string, cores float64) (*cpuCgroup, error) {
	if cores <= 0 {
		return nil, fmt.Errorf("a quota of %g cores: want more than 0", cores)
	}
	if uid := geteuid(); uid != 0 {
		return nil, fmt.Errorf("-cpu-quota makes a cgroup under %s and needs root (running as uid %d)", root, uid)
	}
	for _, f := range []string{"cpu.cfs_quota_us", "cpu.cfs_period_us", "cgroup.procs"} {
		if _, err := os.Stat(filepath.Join(root, f)); err != nil {
			return nil, fmt.Errorf("-cpu-quota needs the cgroup v1 cpu controller at %s: %v", root, err)
		}
	}
	home, err := homeProcs(root, selfCgroup)
	if err != nil {
		return nil, err
	}
	dir := filepath.Join(root, fmt.Sprintf("otelqueue-vpa-%d", os.Getpid()))
	if err := os.Mkdir(dir, 0o755); err != nil {
		return nil, fmt.Errorf("-cpu-quota: the cgroup v1 cpu controller at %s is not writable: %v", root, err)
	}
	c := &cpuCgroup{dir: dir, quota: cores, home: home}
	period := cgroupPeriod.Microseconds()
	quota := int64(math.Round(cores * float64(period)))
	if err := write(filepath.Join(dir, "cpu.cfs_period_us"), strconv.FormatInt(period, 10)); err != nil {
		return nil, errors.Join(err, c.remove())
	}
	if err := write(filepath.Join(dir, "cpu.cfs_quota_us"), strconv.FormatInt(quota, 10)); err != nil {
		return nil, errors.Join(err, c.remove())
	}
	return c, nil
}

// homeProcs returns the cgroup.procs, under root, of the cpu cgroup that
// selfCgroup (a /proc/self/cgroup) names.
func homeProcs(root, selfCgroup string) (string, error) {
	b, err := os.ReadFile(selfCgroup)
	if err != nil {
		return "", err
	}
	for line := range strings.SplitSeq(string(b), "\n") {
		// hierarchy-ID:controller-list:path
		f := strings.SplitN(line, ":", 3)
		if len(f) != 3 {
			continue
		}
		for ctl := range strings.SplitSeq(f[1], ",") {
			if ctl == "cpu" {
				return filepath.Join(root, f[2], "cgroup.procs"), nil
			}
		}
	}
	return "", fmt.Errorf("%s names no cgroup v1 cpu controller", selfCgroup)
}

// procs is the file a pid is written to, to move that process (all its
// threads) into the cgroup.
func (c *cpuCgroup) procs() string { return filepath.Join(c.dir, "cgroup.procs") }

// moveOut moves pid back to the cgroup this program runs in.
func (c *cpuCgroup) moveOut(pid int) error {
	return write(c.home, strconv.Itoa(pid))
}

// remove moves what is left in the cgroup out and removes it.
func (c *cpuCgroup) remove() error {
	if b, err := os.ReadFile(c.procs()); err == nil {
		for f := range strings.FieldsSeq(string(b)) {
			if pid, err := strconv.Atoi(f); err == nil {
				c.moveOut(pid) // a process that exited meanwhile cannot be moved
			}
		}
	}
	var err error
	for range 50 { // the kernel frees a cgroup a moment after its last task
		if err = os.Remove(c.dir); err == nil || os.IsNotExist(err) {
			return nil
		}
		time.Sleep(100 * time.Millisecond)
	}
	return fmt.Errorf("removing the cgroup %s: %v", c.dir, err)
}

func (c *cpuCgroup) String() string {
	return fmt.Sprintf("cgroup v1 %s, cpu.cfs_quota_us %d every cpu.cfs_period_us %d (%g cores)",
		c.dir, int64(math.Round(c.quota*float64(cgroupPeriod.Microseconds()))), cgroupPeriod.Microseconds(), c.quota)
}

func write(path, value string) error {
	f, err := os.OpenFile(path, os.O_WRONLY, 0)
	if err != nil {
		return err
	}
	_, err = f.WriteString(value)
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		return fmt.Errorf("writing %q to %s: %v", value, path, err)
	}
	return nil
}

// descendants returns the processes under pid: its children, theirs, ...
// (from the parent pid, field 4, of every /proc/N/stat).
func descendants(proc string, pid int) []int {
	entries, err := os.ReadDir(proc)
	if err != nil {
		return nil
	}
	parent := map[int][]int{}
	for _, e := range entries {
		n, err := strconv.Atoi(e.Name())
		if err != nil {
			continue
		}
		b, err := os.ReadFile(filepath.Join(proc, e.Name(), "stat"))
		if err != nil {
			continue
		}
		s := string(b)
		i := strings.LastIndexByte(s, ')')
		if i < 0 {
			continue
		}
		f := strings.Fields(s[i+1:])
		if len(f) < 2 {
			continue
		}
		if pp, err := strconv.Atoi(f[1]); err == nil {
			parent[pp] = append(parent[pp], n)
		}
	}
	var out []int
	queue := []int{pid}
	for len(queue) > 0 {
		p := queue[0]
		queue = queue[1:]
		for _, c := range parent[p] {
			out = append(out, c)
			queue = append(queue, c)
		}
	}
	return out
}
