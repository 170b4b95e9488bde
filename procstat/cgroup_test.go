package procstat_test

import (
	"fmt"
	"io/fs"
	"strings"
	"sync/atomic"
	"testing"
	"testing/fstest"
	"time"

	"github.com/otelqueue/otelqueue/procstat"
)

// The process's files in the fake trees.
const (
	cgroupFile    = "proc/self/cgroup"
	mountinfoFile = "proc/self/mountinfo"
)

// mountLine is a line of /proc/self/mountinfo mounting the cgroup
// directory root (escaped as the kernel escapes it) of a file system of
// type fstype at point, with super options opts.
func mountLine(root, point, fstype, opts string) string {
	return fmt.Sprintf("31 30 0:28 %s %s rw,nosuid,nodev,noexec,relatime shared:9 - %s %s %s\n", root, point, fstype, fstype, opts)
}

// Lines of mountinfo that every tree has: not cgroups, or cgroups without
// the cpu controller.
const otherMounts = "22 1 0:21 / / rw,relatime - overlay overlay rw,lowerdir=/a:/b\n" +
	"25 22 0:5 / /proc rw,nosuid - proc proc rw\n" +
	"33 30 0:30 / /sys/fs/cgroup/cpuset rw,relatime shared:11 - cgroup cgroup rw,cpuset\n" +
	"34 30 0:31 / /sys/fs/cgroup/memory rw,relatime shared:12 - cgroup cgroup rw,memory\n"

// v1Mount mounts the v1 cpu and cpuacct controllers together, as most
// distributions do, at /sys/fs/cgroup/cpu,cpuacct.
var v1Mount = mountLine("/", "/sys/fs/cgroup/cpu,cpuacct", "cgroup", "rw,cpu,cpuacct")

// v2Mount mounts the unified hierarchy at /sys/fs/cgroup.
var v2Mount = mountLine("/", "/sys/fs/cgroup", "cgroup2", "rw,nsdelegate")

func v1Stat(periods, throttled, ns uint64) string {
	return fmt.Sprintf("nr_periods %d\nnr_throttled %d\nthrottled_time %d\nnr_bursts 0\nburst_time 0\n", periods, throttled, ns)
}

func v2Stat(periods, throttled, usec uint64) string {
	return fmt.Sprintf("usage_usec 3002\nuser_usec 2001\nsystem_usec 1001\nnr_periods %d\nnr_throttled %d\nthrottled_usec %d\nnr_bursts 0\nburst_usec 0\n", periods, throttled, usec)
}

// tree is a fake file system rooted at "/": file contents by absolute path.
type tree map[string]string

func (t tree) fs() fstest.MapFS {
	m := fstest.MapFS{}
	for p, data := range t {
		m[strings.TrimPrefix(p, "/")] = &fstest.MapFile{Data: []byte(data)}
	}
	return m
}

// merge returns t with the files of others added.
func (t tree) merge(others ...tree) tree {
	out := tree{}
	for _, m := range append([]tree{t}, others...) {
		for k, v := range m {
			out[k] = v
		}
	}
	return out
}

func readCgroup(t *testing.T, fsys fs.FS) procstat.CgroupCPU {
	t.Helper()
	return procstat.NewFSReader(fsys, cgroupFile, mountinfoFile).Read().Cgroup
}

// TestCgroupDiscovery reads fake cgroup trees of the layouts the kernel,
// container runtimes and Kubernetes make.
func TestCgroupDiscovery(t *testing.T) {
	const (
		v1Dir = "/sys/fs/cgroup/cpu,cpuacct/kubepods/burstable/pod1/ctr"
		v2Dir = "/sys/fs/cgroup/kubepods.slice/pod1.slice/ctr.scope"
	)
	v1Procs := "12:cpu,cpuacct:/kubepods/burstable/pod1/ctr\n11:memory:/kubepods/burstable/pod1/ctr\n3:cpuset:/\n1:name=systemd:/kubepods/burstable/pod1/ctr\n0::/\n"
	v1Files := tree{
		"/" + cgroupFile:    v1Procs,
		"/" + mountinfoFile: otherMounts + v1Mount,
		// Every level of a v1 hierarchy has the files; -1 is no quota.
		"/sys/fs/cgroup/cpu,cpuacct/cpu.cfs_quota_us":                          "-1\n",
		"/sys/fs/cgroup/cpu,cpuacct/cpu.cfs_period_us":                         "100000\n",
		"/sys/fs/cgroup/cpu,cpuacct/kubepods/cpu.cfs_quota_us":                 "-1\n",
		"/sys/fs/cgroup/cpu,cpuacct/kubepods/cpu.cfs_period_us":                "100000\n",
		"/sys/fs/cgroup/cpu,cpuacct/kubepods/burstable/cpu.cfs_quota_us":       "-1\n",
		"/sys/fs/cgroup/cpu,cpuacct/kubepods/burstable/cpu.cfs_period_us":      "100000\n",
		"/sys/fs/cgroup/cpu,cpuacct/kubepods/burstable/pod1/cpu.cfs_quota_us":  "-1\n",
		"/sys/fs/cgroup/cpu,cpuacct/kubepods/burstable/pod1/cpu.cfs_period_us": "100000\n",
		v1Dir + "/cpu.cfs_quota_us":                                            "50000\n",
		v1Dir + "/cpu.cfs_period_us":                                           "100000\n",
		v1Dir + "/cpu.stat":                                                    v1Stat(120, 90, 4_500_000_000),
	}
	v2Files := tree{
		"/" + cgroupFile:    "0::/kubepods.slice/pod1.slice/ctr.scope\n",
		"/" + mountinfoFile: otherMounts + v2Mount,
		// The root of a v2 hierarchy has no cpu.max.
		"/sys/fs/cgroup/cpu.stat":                           v2Stat(0, 0, 0),
		"/sys/fs/cgroup/kubepods.slice/cpu.max":             "max 100000\n",
		"/sys/fs/cgroup/kubepods.slice/cpu.stat":            v2Stat(0, 0, 0),
		"/sys/fs/cgroup/kubepods.slice/pod1.slice/cpu.max":  "max 100000\n",
		"/sys/fs/cgroup/kubepods.slice/pod1.slice/cpu.stat": v2Stat(0, 0, 0),
		v2Dir + "/cpu.max":                                  "150000 100000\n",
		v2Dir + "/cpu.stat":                                 v2Stat(40, 10, 250_000),
	}
	v1Limited := procstat.CgroupCPU{
		Known: true, Version: 1, Path: v1Dir, LimitPath: v1Dir, Limit: 0.5,
		StatKnown: true, Periods: 120, ThrottledPeriods: 90, ThrottledTime: 4500 * time.Millisecond,
	}
	v2Limited := procstat.CgroupCPU{
		Known: true, Version: 2, Path: v2Dir, LimitPath: v2Dir, Limit: 1.5,
		StatKnown: true, Periods: 40, ThrottledPeriods: 10, ThrottledTime: 250 * time.Millisecond,
	}
	with := func(base procstat.CgroupCPU, f func(*procstat.CgroupCPU)) procstat.CgroupCPU {
		f(&base)
		return base
	}
	unknown := func(version int, path string) procstat.CgroupCPU {
		return procstat.CgroupCPU{Version: version, Path: path}
	}

	tests := []struct {
		name  string
		files tree
		want  procstat.CgroupCPU
	}{
		{"v1 cpu,cpuacct", v1Files, v1Limited},
		{"v1 cpu alone", v1Files.merge(tree{
			"/" + cgroupFile:    "4:cpu:/kubepods/burstable/pod1/ctr\n2:cpuacct:/\n",
			"/" + mountinfoFile: otherMounts + mountLine("/", "/sys/fs/cgroup/cpu,cpuacct", "cgroup", "rw,cpu"),
		}), v1Limited},
		{"v2", v2Files, v2Limited},
		{"hybrid: v1 cpu wins over the unified hierarchy", v1Files.merge(tree{
			"/" + mountinfoFile:               otherMounts + mountLine("/", "/sys/fs/cgroup/unified", "cgroup2", "rw") + v1Mount,
			"/sys/fs/cgroup/unified/cpu.max":  "10000 100000\n", // not read
			"/sys/fs/cgroup/unified/cpu.stat": v2Stat(1, 1, 1),
		}), v1Limited},
		{"hybrid: the v2 line before the v1 one", v1Files.merge(tree{
			"/" + cgroupFile:    "0::/\n12:cpu,cpuacct:/kubepods/burstable/pod1/ctr\n",
			"/" + mountinfoFile: otherMounts + mountLine("/", "/sys/fs/cgroup/unified", "cgroup2", "rw") + v1Mount,
		}), v1Limited},
		{"v1 cpuset is not cpu: the v2 hierarchy has it", v2Files.merge(tree{
			"/" + cgroupFile: "3:cpuset:/x\n2:cpuacct:/x\n0::/kubepods.slice/pod1.slice/ctr.scope\n",
		}), v2Limited},
		{"no /proc/self/cgroup", tree{"/" + mountinfoFile: v2Mount}, unknown(0, "")},
		{"no cgroup with a cpu controller", tree{
			"/" + cgroupFile:    "1:name=systemd:/\n3:cpuset:/\n",
			"/" + mountinfoFile: otherMounts,
		}, unknown(0, "")},
		{"malformed /proc/self/cgroup", v2Files.merge(tree{
			"/" + cgroupFile: "0::/kubepods.slice/pod1.slice/ctr.scope\ngarbage\n",
		}), unknown(0, "")},
		{"v1 cpu in /proc/self/cgroup but not mounted", v1Files.merge(tree{
			"/" + mountinfoFile: otherMounts + v2Mount,
		}), unknown(1, "")},
		{"no /proc/self/mountinfo", tree{"/" + cgroupFile: "0::/x\n", "/sys/fs/cgroup/x/cpu.max": "max 100000\n"}, unknown(2, "")},
		{"the cgroup's directory is missing", v2Files.merge(tree{
			"/" + cgroupFile: "0::/gone\n",
		}), unknown(2, "/sys/fs/cgroup/gone")},

		{"a smaller quota on an ancestor", v2Files.merge(tree{
			"/sys/fs/cgroup/kubepods.slice/cpu.max":             "100000 100000\n",
			"/sys/fs/cgroup/kubepods.slice/pod1.slice/cpu.max":  "25000 100000\n",
			"/sys/fs/cgroup/kubepods.slice/pod1.slice/cpu.stat": v2Stat(300, 200, 7_000_000),
		}), with(v2Limited, func(c *procstat.CgroupCPU) {
			c.Limit, c.LimitPath = 0.25, "/sys/fs/cgroup/kubepods.slice/pod1.slice"
			c.Periods, c.ThrottledPeriods, c.ThrottledTime = 300, 200, 7*time.Second
		})},
		{"a larger quota on an ancestor", v2Files.merge(tree{
			"/sys/fs/cgroup/kubepods.slice/cpu.max": "400000 100000\n",
		}), v2Limited},
		{"equal quotas: the nearest one", v2Files.merge(tree{
			"/sys/fs/cgroup/kubepods.slice/cpu.max": "150000 100000\n",
		}), v2Limited},
		{"a quota on an ancestor only (v1)", v1Files.merge(tree{
			v1Dir + "/cpu.cfs_quota_us":                                       "-1\n",
			"/sys/fs/cgroup/cpu,cpuacct/kubepods/burstable/cpu.cfs_quota_us":  "200000\n",
			"/sys/fs/cgroup/cpu,cpuacct/kubepods/burstable/cpu.cfs_period_us": "50000\n",
			"/sys/fs/cgroup/cpu,cpuacct/kubepods/burstable/cpu.stat":          v1Stat(7, 3, 999),
		}), with(v1Limited, func(c *procstat.CgroupCPU) {
			c.Limit, c.LimitPath = 4, "/sys/fs/cgroup/cpu,cpuacct/kubepods/burstable"
			c.Periods, c.ThrottledPeriods, c.ThrottledTime = 7, 3, 999
		})},
		{"v1 quota -1 everywhere", v1Files.merge(tree{
			v1Dir + "/cpu.cfs_quota_us": "-1\n",
			v1Dir + "/cpu.stat":         v1Stat(0, 0, 0),
		}), with(v1Limited, func(c *procstat.CgroupCPU) {
			c.Limit, c.Periods, c.ThrottledPeriods, c.ThrottledTime = 0, 0, 0, 0
		})},
		{"v1 without CFS bandwidth control (no quota files)", tree{
			"/" + cgroupFile:      v1Procs,
			"/" + mountinfoFile:   v1Mount,
			v1Dir + "/cpu.shares": "1024\n",
		}, procstat.CgroupCPU{Known: true, Version: 1, Path: v1Dir, LimitPath: v1Dir}},
		{"v2 max everywhere", v2Files.merge(tree{
			v2Dir + "/cpu.max":  "max 100000\n",
			v2Dir + "/cpu.stat": v2Stat(0, 0, 0),
		}), with(v2Limited, func(c *procstat.CgroupCPU) {
			c.Limit, c.Periods, c.ThrottledPeriods, c.ThrottledTime = 0, 0, 0, 0
		})},
		{"v2 without the cpu controller (no cpu.max, usage-only cpu.stat)", tree{
			"/" + cgroupFile:                     "0::/user.slice\n",
			"/" + mountinfoFile:                  v2Mount,
			"/sys/fs/cgroup/user.slice/cpu.stat": "usage_usec 10\nuser_usec 5\nsystem_usec 5\n",
		}, procstat.CgroupCPU{Known: true, Version: 2, Path: "/sys/fs/cgroup/user.slice", LimitPath: "/sys/fs/cgroup/user.slice"}},
		{"the root cgroup of v2", tree{
			"/" + cgroupFile:          "0::/\n",
			"/" + mountinfoFile:       v2Mount,
			"/sys/fs/cgroup/cpu.stat": v2Stat(0, 0, 0),
		}, procstat.CgroupCPU{Known: true, Version: 2, Path: "/sys/fs/cgroup", LimitPath: "/sys/fs/cgroup", StatKnown: true}},

		{"malformed v1 quota", v1Files.merge(tree{v1Dir + "/cpu.cfs_quota_us": "lots\n"}), unknown(1, v1Dir)},
		{"v1 quota overflows", v1Files.merge(tree{v1Dir + "/cpu.cfs_quota_us": "99999999999999999999\n"}), unknown(1, v1Dir)},
		{"v1 period 0", v1Files.merge(tree{v1Dir + "/cpu.cfs_period_us": "0\n"}), unknown(1, v1Dir)},
		{"v1 quota 0", v1Files.merge(tree{v1Dir + "/cpu.cfs_quota_us": "0\n"}), unknown(1, v1Dir)},
		{"v1 quota without a period", v1Files.without(v1Dir + "/cpu.cfs_period_us"), unknown(1, v1Dir)},
		{"malformed v1 quota on an ancestor", v1Files.merge(tree{"/sys/fs/cgroup/cpu,cpuacct/kubepods/cpu.cfs_quota_us": "-1 x\n"}), unknown(1, v1Dir)},
		{"v2 cpu.max without a period", v2Files.merge(tree{v2Dir + "/cpu.max": "50000\n"}), unknown(2, v2Dir)},
		{"v2 cpu.max negative", v2Files.merge(tree{v2Dir + "/cpu.max": "-50000 100000\n"}), unknown(2, v2Dir)},
		{"v2 cpu.max empty", v2Files.merge(tree{v2Dir + "/cpu.max": ""}), unknown(2, v2Dir)},
		{"v2 cpu.max of floats", v2Files.merge(tree{v2Dir + "/cpu.max": "0.5 1\n"}), unknown(2, v2Dir)},
		{"missing cpu.stat", v2Files.without(v2Dir + "/cpu.stat"), with(v2Limited, func(c *procstat.CgroupCPU) {
			c.StatKnown, c.Periods, c.ThrottledPeriods, c.ThrottledTime = false, 0, 0, 0
		})},
		{"cpu.stat without nr_throttled", v2Files.merge(tree{v2Dir + "/cpu.stat": "nr_periods 4\nthrottled_usec 3\n"}), with(v2Limited, func(c *procstat.CgroupCPU) {
			c.StatKnown, c.Periods, c.ThrottledPeriods, c.ThrottledTime = false, 0, 0, 0
		})},
		{"malformed cpu.stat", v2Files.merge(tree{v2Dir + "/cpu.stat": "nr_periods 4\nnr_throttled -1\nthrottled_usec 3\n"}), with(v2Limited, func(c *procstat.CgroupCPU) {
			c.StatKnown, c.Periods, c.ThrottledPeriods, c.ThrottledTime = false, 0, 0, 0
		})},
		{"v1 cpu.stat has throttled_time, not throttled_usec", v1Files.merge(tree{v1Dir + "/cpu.stat": "nr_periods 4\nnr_throttled 1\nthrottled_usec 3\n"}), with(v1Limited, func(c *procstat.CgroupCPU) {
			c.StatKnown, c.Periods, c.ThrottledPeriods, c.ThrottledTime = false, 0, 0, 0
		})},
		{"cpu.stat's throttled time beyond a Duration", v2Files.merge(tree{v2Dir + "/cpu.stat": v2Stat(1, 1, 1<<62)}), with(v2Limited, func(c *procstat.CgroupCPU) {
			c.StatKnown, c.Periods, c.ThrottledPeriods, c.ThrottledTime = false, 0, 0, 0
		})},

		{"a namespaced mount: its root is the container's cgroup", tree{
			"/" + cgroupFile:          "0::/kubepods.slice/pod1.slice/ctr.scope\n",
			"/" + mountinfoFile:       mountLine("/kubepods.slice/pod1.slice/ctr.scope", "/sys/fs/cgroup", "cgroup2", "rw"),
			"/sys/fs/cgroup/cpu.max":  "20000 100000\n",
			"/sys/fs/cgroup/cpu.stat": v2Stat(5, 4, 3),
			"/sys/fs/cpu.max":         "1000 100000\n", // above the mount point: never read
		}, procstat.CgroupCPU{
			Known: true, Version: 2, Path: "/sys/fs/cgroup", LimitPath: "/sys/fs/cgroup", Limit: 0.2,
			StatKnown: true, Periods: 5, ThrottledPeriods: 4, ThrottledTime: 3 * time.Microsecond,
		}},
		{"a namespaced mount, the process in a child of its root", tree{
			"/" + cgroupFile:              "0::/kubepods.slice/pod1.slice/ctr.scope/app\n",
			"/" + mountinfoFile:           mountLine("/kubepods.slice/pod1.slice/ctr.scope", "/sys/fs/cgroup", "cgroup2", "rw"),
			"/sys/fs/cgroup/cpu.max":      "20000 100000\n",
			"/sys/fs/cgroup/cpu.stat":     v2Stat(5, 4, 3),
			"/sys/fs/cgroup/app/cpu.max":  "max 100000\n",
			"/sys/fs/cgroup/app/cpu.stat": v2Stat(0, 0, 0),
			"/sys/fs/cpu.max":             "1000 100000\n",
		}, procstat.CgroupCPU{
			Known: true, Version: 2, Path: "/sys/fs/cgroup/app", LimitPath: "/sys/fs/cgroup", Limit: 0.2,
			StatKnown: true, Periods: 5, ThrottledPeriods: 4, ThrottledTime: 3 * time.Microsecond,
		}},
		{"a cgroup namespace: the process sees its cgroup as /", tree{
			"/" + cgroupFile:          "0::/\n",
			"/" + mountinfoFile:       v2Mount,
			"/sys/fs/cgroup/cpu.max":  "20000 100000\n", // a container's namespace root has one
			"/sys/fs/cgroup/cpu.stat": v2Stat(5, 4, 3),
		}, procstat.CgroupCPU{
			Known: true, Version: 2, Path: "/sys/fs/cgroup", LimitPath: "/sys/fs/cgroup", Limit: 0.2,
			StatKnown: true, Periods: 5, ThrottledPeriods: 4, ThrottledTime: 3 * time.Microsecond,
		}},
		{"a cgroup outside the namespace (/../) cannot be reached", v2Files.merge(tree{
			"/" + cgroupFile: "0::/../../init.scope\n",
		}), unknown(2, "")},
		{"a cgroup outside the namespace whose path cleans into the mount", v2Files.merge(tree{
			// The namespace's root is /a/ns; the process is in /a/cgroup/x.
			"/" + cgroupFile:            "0::/../cgroup/x\n",
			"/sys/fs/cgroup/x/cpu.max":  "10000 100000\n", // the namespace's /x: another cgroup
			"/sys/fs/cgroup/x/cpu.stat": v2Stat(0, 0, 0),
		}), unknown(2, "")},
		{"the first mount whose root holds the cgroup", v2Files.merge(tree{
			"/" + mountinfoFile: otherMounts +
				mountLine("/other.slice", "/mnt/other", "cgroup2", "rw") +
				mountLine("/kubepods.slice/pod1.slice", "/mnt/pod", "cgroup2", "rw") +
				v2Mount,
			"/mnt/pod/ctr.scope/cpu.max":  "30000 100000\n",
			"/mnt/pod/ctr.scope/cpu.stat": v2Stat(1, 0, 0),
		}), procstat.CgroupCPU{
			Known: true, Version: 2, Path: "/mnt/pod/ctr.scope", LimitPath: "/mnt/pod/ctr.scope", Limit: 0.3,
			StatKnown: true, Periods: 1,
		}},
		{"a mount root that is a prefix of the cgroup's name, not a parent", v2Files.merge(tree{
			"/" + mountinfoFile: mountLine("/kubepods", "/mnt/wrong", "cgroup2", "rw") + v2Mount,
			"/mnt/wrong/.slice/pod1.slice/ctr.scope/cpu.max": "1000 100000\n",
		}), v2Limited},
		{"escapes in mountinfo: a space in the mount point and the root", tree{
			"/" + cgroupFile:                             "7:cpuacct,cpu:/my pod\\x/ctr\n",
			"/" + mountinfoFile:                          mountLine(`/my\040pod\134x`, `/cgroup\040v1/cpu\011acct`, "cgroup", "rw,cpuacct,cpu"),
			"/cgroup v1/cpu\tacct/ctr/cpu.cfs_quota_us":  "100000\n",
			"/cgroup v1/cpu\tacct/ctr/cpu.cfs_period_us": "100000\n",
			"/cgroup v1/cpu\tacct/ctr/cpu.stat":          v1Stat(2, 1, 5),
			"/cgroup v1/cpu\tacct/cpu.cfs_quota_us":      "-1\n",
			"/cgroup v1/cpu\tacct/cpu.cfs_period_us":     "100000\n",
		}, procstat.CgroupCPU{
			Known: true, Version: 1, Path: "/cgroup v1/cpu\tacct/ctr", LimitPath: "/cgroup v1/cpu\tacct/ctr", Limit: 1,
			StatKnown: true, Periods: 2, ThrottledPeriods: 1, ThrottledTime: 5,
		}},
		{"a colon in the cgroup's path", v2Files.merge(tree{
			"/" + cgroupFile:              "0::/a:b\n",
			"/sys/fs/cgroup/a:b/cpu.max":  "100000 100000\n",
			"/sys/fs/cgroup/a:b/cpu.stat": v2Stat(0, 0, 0),
		}), procstat.CgroupCPU{Known: true, Version: 2, Path: "/sys/fs/cgroup/a:b", LimitPath: "/sys/fs/cgroup/a:b", Limit: 1, StatKnown: true}},
		{"a bad escape skips the mount", v2Files.merge(tree{
			"/" + mountinfoFile: mountLine("/", `/sys/fs/cgroup\04`, "cgroup2", "rw"),
		}), unknown(2, "")},
		{"a truncated mountinfo line is skipped", v2Files.merge(tree{
			"/" + mountinfoFile: "31 30 0:28 / /sys/fs/cgroup rw - cgroup2\n" + v2Mount,
		}), v2Limited},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := readCgroup(t, tt.files.fs()); got != tt.want {
				t.Errorf("Cgroup =\n%+v\nwant\n%+v", got, tt.want)
			}
		})
	}
}

// without returns t without the files at paths.
func (t tree) without(paths ...string) tree {
	out := t.merge()
	for _, p := range paths {
		delete(out, p)
	}
	return out
}

// faultyFS fails to open the files of fail with their error, and counts
// the opens of each name.
type faultyFS struct {
	fs.FS
	fail  map[string]error
	opens map[string]*atomic.Int64
}

func (f faultyFS) Open(name string) (fs.File, error) {
	if n := f.opens[name]; n != nil {
		n.Add(1)
	}
	if err := f.fail[name]; err != nil {
		return nil, &fs.PathError{Op: "open", Path: name, Err: err}
	}
	return f.FS.Open(name)
}

// TestCgroupUnreadable checks that a limit file that exists but cannot be
// read makes the limit unknown: it is not the same as no file (no limit
// at that level).
func TestCgroupUnreadable(t *testing.T) {
	files := tree{
		"/" + cgroupFile:              "0::/a/b\n",
		"/" + mountinfoFile:           v2Mount,
		"/sys/fs/cgroup/a/cpu.max":    "50000 100000\n",
		"/sys/fs/cgroup/a/b/cpu.max":  "max 100000\n",
		"/sys/fs/cgroup/a/b/cpu.stat": v2Stat(0, 0, 0),
		"/sys/fs/cgroup/a/cpu.stat":   v2Stat(9, 8, 7),
	}
	for _, tc := range []struct {
		file string
		want procstat.CgroupCPU
	}{
		{"sys/fs/cgroup/a/cpu.max", procstat.CgroupCPU{Version: 2, Path: "/sys/fs/cgroup/a/b"}},
		{"sys/fs/cgroup/a/b/cpu.max", procstat.CgroupCPU{Version: 2, Path: "/sys/fs/cgroup/a/b"}},
		{cgroupFile, procstat.CgroupCPU{}},
		{mountinfoFile, procstat.CgroupCPU{Version: 2}},
		{"sys/fs/cgroup/a/cpu.stat", procstat.CgroupCPU{Known: true, Version: 2, Path: "/sys/fs/cgroup/a/b", LimitPath: "/sys/fs/cgroup/a", Limit: 0.5}},
	} {
		t.Run(tc.file, func(t *testing.T) {
			fsys := faultyFS{FS: files.fs(), fail: map[string]error{tc.file: fs.ErrPermission}}
			if got := readCgroup(t, fsys); got != tc.want {
				t.Errorf("with %s unreadable: Cgroup =\n%+v\nwant\n%+v", tc.file, got, tc.want)
			}
		})
	}
}

// TestCgroupMovedAndRemounted checks what a Reader keeps between Reads:
// the cgroup is found again from /proc/self/cgroup every time, the mounts
// are parsed once and again only when they do not hold the cgroup.
func TestCgroupMovedAndRemounted(t *testing.T) {
	mapFS := tree{
		"/" + cgroupFile:            "0::/a\n",
		"/" + mountinfoFile:         v2Mount,
		"/sys/fs/cgroup/a/cpu.max":  "50000 100000\n",
		"/sys/fs/cgroup/a/cpu.stat": v2Stat(1, 1, 1),
		"/sys/fs/cgroup/b/cpu.max":  "200000 100000\n",
		"/sys/fs/cgroup/b/cpu.stat": v2Stat(2, 2, 2),
		"/mnt/cgroup2/b/cpu.max":    "300000 100000\n",
		"/mnt/cgroup2/b/cpu.stat":   v2Stat(3, 3, 3),
	}.fs()
	opens := map[string]*atomic.Int64{cgroupFile: {}, mountinfoFile: {}}
	r := procstat.NewFSReader(faultyFS{FS: mapFS, opens: opens}, cgroupFile, mountinfoFile)
	check := func(step, wantPath string, wantLimit float64, wantCgroupReads, wantMountinfoReads int64) {
		t.Helper()
		cg := r.Read().Cgroup
		if !cg.Known || cg.Path != wantPath || cg.Limit != wantLimit {
			t.Errorf("%s: Cgroup = %+v, want Known, Path %s, Limit %v", step, cg, wantPath, wantLimit)
		}
		if got := opens[cgroupFile].Load(); got != wantCgroupReads {
			t.Errorf("%s: %s read %d times, want %d", step, cgroupFile, got, wantCgroupReads)
		}
		if got := opens[mountinfoFile].Load(); got != wantMountinfoReads {
			t.Errorf("%s: %s read %d times, want %d", step, mountinfoFile, got, wantMountinfoReads)
		}
	}
	check("first Read", "/sys/fs/cgroup/a", 0.5, 1, 1)
	check("second Read", "/sys/fs/cgroup/a", 0.5, 2, 1)

	mapFS[cgroupFile].Data = []byte("0::/b\n")
	check("moved to b", "/sys/fs/cgroup/b", 2, 3, 1)

	// The hierarchy is mounted elsewhere now: the cached mount point has
	// no directory b any more.
	mapFS[mountinfoFile].Data = []byte(mountLine("/", "/mnt/cgroup2", "cgroup2", "rw"))
	for name := range mapFS {
		if strings.HasPrefix(name, "sys/fs/cgroup/b/") {
			delete(mapFS, name)
		}
	}
	check("remounted", "/mnt/cgroup2/b", 3, 4, 2)
	check("after the remount", "/mnt/cgroup2/b", 3, 5, 2)

	// A cgroup that no mount holds: mountinfo is read again on every
	// Read (it may be mounted later), but once a Read.
	mapFS[cgroupFile].Data = []byte("0::/c\n")
	mapFS[mountinfoFile].Data = []byte(mountLine("/elsewhere", "/mnt/cgroup2", "cgroup2", "rw"))
	for i := range int64(3) {
		if cg := r.Read().Cgroup; cg != (procstat.CgroupCPU{Version: 2}) {
			t.Errorf("not mounted: Cgroup = %+v", cg)
		}
		if got, want := opens[mountinfoFile].Load(), 3+i; got != want {
			t.Errorf("not mounted, Read %d: %s read %d times, want %d", i+1, mountinfoFile, got, want)
		}
	}
	// The same for a new Reader.
	opens[mountinfoFile].Store(0)
	r = procstat.NewFSReader(faultyFS{FS: mapFS, opens: opens}, cgroupFile, mountinfoFile)
	r.Read()
	if got := opens[mountinfoFile].Load(); got != 1 {
		t.Errorf("not mounted, a new Reader's first Read: %s read %d times, want 1", mountinfoFile, got)
	}
}

// TestCgroupNoPanic feeds the parsers every prefix of real files, and
// bytes that are not text: no panic, and whatever is read is consistent.
func TestCgroupNoPanic(t *testing.T) {
	procs := "12:cpu,cpuacct:/kubepods/pod1/ctr\n0::/kubepods/pod1/ctr\n"
	mounts := otherMounts + mountLine(`/kube\040pods`, "/sys/fs/cgroup/cpu,cpuacct", "cgroup", "rw,cpu,cpuacct") + v1Mount + v2Mount
	files := []string{"12:cpu\x00:/\xff\n", "\\\\\\", "0::", "::", "\n\n", "- - - - - - - -", `\777`}
	for i := range len(procs) + 1 {
		files = append(files, procs[:i])
	}
	for i := range len(mounts) + 1 {
		files = append(files, mounts[:i])
	}
	base := tree{
		"/sys/fs/cgroup/cpu,cpuacct/kubepods/pod1/ctr/cpu.cfs_quota_us":  "50000\n",
		"/sys/fs/cgroup/cpu,cpuacct/kubepods/pod1/ctr/cpu.cfs_period_us": "100000\n",
		"/sys/fs/cgroup/cpu,cpuacct/kubepods/pod1/ctr/cpu.stat":          v1Stat(1, 1, 1),
	}
	for _, procsData := range files {
		for _, mountsData := range []string{mounts, procsData} {
			cg := readCgroup(t, base.merge(tree{"/" + cgroupFile: procsData, "/" + mountinfoFile: mountsData}).fs())
			if cg.Known && (cg.Path == "" || cg.LimitPath == "" || cg.Limit < 0) {
				t.Errorf("cgroup %q, mountinfo %q: inconsistent %+v", procsData, mountsData, cg)
			}
			if !cg.Known && (cg.Limit != 0 || cg.StatKnown || cg.LimitPath != "") {
				t.Errorf("cgroup %q, mountinfo %q: unknown but %+v", procsData, mountsData, cg)
			}
		}
	}
	for _, stat := range []string{"", "nr_periods", "nr_periods \nnr_throttled \nthrottled_time ", "nr_periods 1 2\n", "\x00\xff"} {
		cg := readCgroup(t, base.merge(tree{
			"/" + cgroupFile:    procs,
			"/" + mountinfoFile: v1Mount,
			"/sys/fs/cgroup/cpu,cpuacct/kubepods/pod1/ctr/cpu.stat": stat,
		}).fs())
		if !cg.Known || cg.StatKnown {
			t.Errorf("cpu.stat %q: %+v, want Known and not StatKnown", stat, cg)
		}
	}
}
