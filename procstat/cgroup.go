package procstat

import (
	"bytes"
	"errors"
	"io/fs"
	"math"
	"path"
	"strconv"
	"strings"
	"time"
)

// CgroupCPU is the CPU bandwidth limit of the process's cgroup and the
// kernel's count of how often it was enforced (the "cpu" controller of
// cgroup v1, or cgroup v2's cpu.max and cpu.stat).
//
// When Known is false, nothing below it but Version and Path may be set:
// they tell how far the discovery got, for messages.
type CgroupCPU struct {
	// Known is true when the process's cgroup with the cpu controller was
	// found and its limit read: the limit files of the cgroup and of its
	// ancestors up to the mount's root were absent (no limit at that
	// level) or well-formed.
	Known bool
	// Version is the cgroup version of the cpu controller: 1 or 2; 0 when
	// the process is in no cgroup with a cpu controller.
	Version int
	// Path is the directory of the process's cgroup in the cpu hierarchy,
	// such as /sys/fs/cgroup/cpu/kubepods/pod1/ctr (v1) or
	// /sys/fs/cgroup/kubepods.slice/ctr.scope (v2).
	Path string
	// LimitPath is the directory whose quota is the effective one (the
	// smallest over Path and its ancestors up to the mount's root), and
	// whose cpu.stat the counters come from: Path itself unless an
	// ancestor's quota is smaller, and Path when there is no quota.
	LimitPath string
	// Limit is the number of cores the quota allows on average
	// (quota/period); 0 when no quota is set (v1 cfs_quota_us -1, v2
	// "max"), which is not the same as unknown (Known false).
	Limit float64
	// StatKnown is true when LimitPath's cpu.stat was read and had the
	// three counters below. Their values are cumulative since the cgroup
	// was made; the kernel counts periods only while a quota is set and
	// the cgroup runs.
	StatKnown bool
	// Periods is cpu.stat's nr_periods: the enforcement periods (of
	// cfs_period_us) in which the cgroup had runnable threads.
	Periods uint64
	// ThrottledPeriods is cpu.stat's nr_throttled: the periods in which
	// the cgroup used up its quota and its threads were stopped.
	ThrottledPeriods uint64
	// ThrottledTime is how long the cgroup's threads were stopped:
	// cpu.stat's throttled_time (v1, in ns) or throttled_usec (v2). The
	// kernel adds up the stops of each CPU: with threads on 2 CPUs it
	// grows up to twice as fast as the wall clock.
	ThrottledTime time.Duration
}

// Files of the cpu controller.
const (
	v1QuotaFile  = "cpu.cfs_quota_us"  // quota in µs a period, -1 for none
	v1PeriodFile = "cpu.cfs_period_us" // period in µs
	v2MaxFile    = "cpu.max"           // "$QUOTA $PERIOD" in µs, QUOTA "max" for none
	statFile     = "cpu.stat"          // "key value" lines
)

// Paths of the process's files in the Reader's file system (rooted at "/").
const (
	procCgroupFile    = "proc/self/cgroup"
	procMountinfoFile = "proc/self/mountinfo"
)

// errMalformed is a limit or stat file whose contents cannot be parsed.
var errMalformed = errors.New("procstat: malformed cgroup file")

// procCgroup is the process's cgroup of the cpu controller, as
// /proc/self/cgroup names it: a path relative to its hierarchy's root.
type procCgroup struct {
	version int
	path    string // starts with "/"
}

// parseProcCgroup finds the cgroup of the cpu controller in the contents of
// /proc/self/cgroup, whose lines are "hierarchy-ID:controller-list:path".
// A v1 hierarchy with "cpu" in its comma-separated controllers wins over
// the v2 line ("0::path"), since the kernel cannot mount one controller in
// both: on a hybrid system the v2 hierarchy then has no cpu controller. ok
// is false when neither is there, or when a line is malformed (it could
// be the one that matters).
func parseProcCgroup(data []byte) (cg procCgroup, ok bool) {
	var v2 string
	for line := range strings.Lines(string(data)) {
		line = strings.TrimSuffix(line, "\n")
		if line == "" {
			continue
		}
		id, rest, ok1 := strings.Cut(line, ":")
		controllers, p, ok2 := strings.Cut(rest, ":") // the path may hold ':'
		if !ok1 || !ok2 || !strings.HasPrefix(p, "/") {
			return procCgroup{}, false
		}
		if id == "0" && controllers == "" {
			v2 = p
			continue
		}
		if hasOption(controllers, "cpu") {
			return procCgroup{version: 1, path: p}, true
		}
	}
	if v2 == "" {
		return procCgroup{}, false
	}
	return procCgroup{version: 2, path: v2}, true
}

// hasOption reports whether the comma-separated list has opt as one of its
// elements ("cpu" is in "rw,cpu,cpuacct", not in "cpuset").
func hasOption(list, opt string) bool {
	for o := range strings.SplitSeq(list, ",") {
		if o == opt {
			return true
		}
	}
	return false
}

// mount is a cgroup hierarchy of /proc/self/mountinfo that can hold the
// cpu controller.
type mount struct {
	version int    // 1: a cgroup (v1) mount with "cpu" among its super options; 2: cgroup2
	root    string // the directory of the hierarchy mounted, such as "/" or "/kubepods/pod1"
	point   string // where it is mounted, such as "/sys/fs/cgroup/cpu,cpuacct"
}

// parseMountinfo returns the cgroup mounts of the contents of
// /proc/self/mountinfo, in their order. Its lines are
//
//	36 35 98:0 /root /mount/point rw,noatime master:1 - cgroup cgroup rw,cpu,cpuacct
//
// with the mount's root (4th field), its mount point (5th), optional fields
// up to "-", then the file system type, the source and the super options;
// a space, tab, newline or backslash in a path is escaped as \040, \011,
// \012, \134 (see proc_pid_mountinfo(5)). Lines that cannot be parsed are
// skipped: they cannot be used, and may be unrelated to cgroups.
func parseMountinfo(data []byte) []mount {
	var mounts []mount
	for line := range strings.Lines(string(data)) {
		f := strings.Split(strings.TrimSuffix(line, "\n"), " ")
		sep := -1
		for i := 6; i < len(f); i++ {
			if f[i] == "-" {
				sep = i
				break
			}
		}
		if sep < 0 || sep+3 >= len(f) {
			continue
		}
		var m mount
		switch f[sep+1] {
		case "cgroup2":
			m.version = 2
		case "cgroup":
			if !hasOption(f[sep+3], "cpu") {
				continue
			}
			m.version = 1
		default:
			continue
		}
		var ok1, ok2 bool
		m.root, ok1 = unescapeMountPath(f[3])
		m.point, ok2 = unescapeMountPath(f[4])
		if !ok1 || !ok2 || !strings.HasPrefix(m.root, "/") || !strings.HasPrefix(m.point, "/") {
			continue
		}
		mounts = append(mounts, m)
	}
	return mounts
}

// unescapeMountPath undoes the kernel's octal escapes (\ooo) of a path of
// mountinfo. ok is false for a backslash not followed by three octal digits
// of a byte.
func unescapeMountPath(s string) (string, bool) {
	if !strings.Contains(s, `\`) {
		return s, true
	}
	var b strings.Builder
	for i := 0; i < len(s); i++ {
		if s[i] != '\\' {
			b.WriteByte(s[i])
			continue
		}
		if i+3 >= len(s) {
			return "", false
		}
		n, err := strconv.ParseUint(s[i+1:i+4], 8, 8)
		if err != nil {
			return "", false
		}
		b.WriteByte(byte(n))
		i += 3
	}
	return b.String(), true
}

// place returns where cg is in the file system: dir, its directory, and
// top, the mount point, beyond which its ancestors cannot be seen; both
// absolute. The first mount of cg's version whose root holds cg's path is
// used. A mount whose root is not "/" is a part of the hierarchy, as a
// container sees it from its cgroup namespace's mount or a bind mount:
// cg's path then starts with that root, which the mount point stands for.
// A path that climbs above the cgroup namespace's root ("/../x") is out of
// reach of every mount of the namespace.
func place(mounts []mount, cg procCgroup) (dir, top string, ok bool) {
	for _, m := range mounts {
		if m.version != cg.version || !underPath(cg.path, m.root) {
			continue
		}
		rel := strings.TrimPrefix(cg.path, m.root)
		if m.root == "/" {
			rel = cg.path
		}
		if underPath(rel, "/..") {
			continue
		}
		dir, top = path.Clean(m.point+"/"+rel), path.Clean(m.point)
		if !underPath(dir, top) { // a ".." in the path: never from the kernel
			continue
		}
		return dir, top, true
	}
	return "", "", false
}

// underPath reports whether p is dir or below it; dir "/" holds every
// absolute path.
func underPath(p, dir string) bool {
	if dir == "/" {
		return strings.HasPrefix(p, "/")
	}
	return p == dir || strings.HasPrefix(p, dir) && p[len(dir)] == '/'
}

// fsName turns an absolute path into a name of an fs.FS rooted at "/".
func fsName(abs string) string {
	if name := strings.TrimPrefix(path.Clean(abs), "/"); name != "" {
		return name
	}
	return "."
}

// readCgroup reads the cpu controller's limit and counters of the
// process's cgroup from fsys. mounts returns the cgroup mounts, cached or
// (refresh true) read again; fresh is true when they were just read.
func readCgroup(fsys fs.FS, cgroupFile string, mounts func(refresh bool) (m []mount, fresh bool)) CgroupCPU {
	data, err := fs.ReadFile(fsys, cgroupFile)
	if err != nil {
		return CgroupCPU{}
	}
	cg, ok := parseProcCgroup(data)
	if !ok {
		return CgroupCPU{}
	}
	out := CgroupCPU{Version: cg.version}
	m, fresh := mounts(false)
	dir, top, ok := place(m, cg)
	found := ok && isDir(fsys, dir)
	if !found && !fresh {
		// The mount table may have changed since it was cached.
		m, _ = mounts(true)
		dir, top, ok = place(m, cg)
		found = ok && isDir(fsys, dir)
	}
	if !ok {
		return out
	}
	out.Path = dir
	if !found {
		return out
	}

	// The smallest quota from dir up to the mount point; the nearest to
	// dir when two are equal.
	out.LimitPath = dir
	for d := dir; ; d = path.Dir(d) {
		limit, err := readLimit(fsys, d, cg.version)
		if err != nil {
			return CgroupCPU{Version: cg.version, Path: dir}
		}
		if limit > 0 && (out.Limit == 0 || limit < out.Limit) {
			out.Limit, out.LimitPath = limit, d
		}
		if d == top || !underPath(d, top) {
			break
		}
	}
	out.Known = true
	out.Periods, out.ThrottledPeriods, out.ThrottledTime, out.StatKnown = readStat(fsys, out.LimitPath, cg.version)
	return out
}

func isDir(fsys fs.FS, dir string) bool {
	fi, err := fs.Stat(fsys, fsName(dir))
	return err == nil && fi.IsDir()
}

// readLimit returns the cores the quota of the cgroup directory dir
// allows, 0 when it sets none or has no limit file (the cpu controller is
// not enabled at that level, or the kernel has no CFS bandwidth control),
// and an error when a limit file cannot be read or parsed.
func readLimit(fsys fs.FS, dir string, version int) (float64, error) {
	read := func(file string) (string, error) {
		b, err := fs.ReadFile(fsys, fsName(dir+"/"+file))
		return string(bytes.TrimSpace(b)), err
	}
	var quota, period int64
	if version == 1 {
		q, err := read(v1QuotaFile)
		if errors.Is(err, fs.ErrNotExist) {
			return 0, nil
		} else if err != nil {
			return 0, err
		}
		if quota, err = strconv.ParseInt(q, 10, 64); err != nil {
			return 0, errMalformed
		}
		if quota < 0 { // -1: no quota (the kernel shows any negative one so)
			return 0, nil
		}
		p, err := read(v1PeriodFile)
		if err != nil {
			return 0, err // a quota without a period cannot be placed
		}
		if period, err = strconv.ParseInt(p, 10, 64); err != nil {
			return 0, errMalformed
		}
	} else {
		s, err := read(v2MaxFile)
		if errors.Is(err, fs.ErrNotExist) {
			return 0, nil
		} else if err != nil {
			return 0, err
		}
		q, p, _ := strings.Cut(s, " ")
		if q == "max" {
			return 0, nil
		}
		if quota, err = strconv.ParseInt(q, 10, 64); err != nil {
			return 0, errMalformed
		}
		if period, err = strconv.ParseInt(p, 10, 64); err != nil {
			return 0, errMalformed
		}
	}
	if quota <= 0 || period <= 0 {
		return 0, errMalformed
	}
	return float64(quota) / float64(period), nil
}

// readStat returns the throttling counters of cpu.stat in dir: nr_periods,
// nr_throttled, and throttled_time (v1, ns) or throttled_usec (v2). ok is
// false when the file cannot be read or lacks one of them, as v2's does
// where the cpu controller is not enabled (it then has only the usage).
func readStat(fsys fs.FS, dir string, version int) (periods, throttled uint64, throttledTime time.Duration, ok bool) {
	data, err := fs.ReadFile(fsys, fsName(dir+"/"+statFile))
	if err != nil {
		return 0, 0, 0, false
	}
	timeKey, unit := "throttled_time", time.Nanosecond
	if version == 2 {
		timeKey, unit = "throttled_usec", time.Microsecond
	}
	var found [3]bool
	for line := range strings.Lines(string(data)) {
		k, v, _ := strings.Cut(strings.TrimSpace(line), " ")
		var i int
		switch k {
		case "nr_periods":
			i = 0
		case "nr_throttled":
			i = 1
		case timeKey:
			i = 2
		default:
			continue
		}
		n, err := strconv.ParseUint(v, 10, 64)
		if err != nil {
			return 0, 0, 0, false
		}
		found[i] = true
		switch i {
		case 0:
			periods = n
		case 1:
			throttled = n
		case 2:
			if n > math.MaxInt64/uint64(unit) {
				return 0, 0, 0, false
			}
			throttledTime = time.Duration(n) * unit
		}
	}
	if found != [3]bool{true, true, true} {
		return 0, 0, 0, false
	}
	return periods, throttled, throttledTime, true
}
