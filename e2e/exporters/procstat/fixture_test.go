package procstat_test

import (
	"testing"
	"testing/fstest"

	"github.com/otelqueue/otelqueue/internal/procstatfs"
	"github.com/otelqueue/otelqueue/internal/testutil"
	"github.com/otelqueue/otelqueue/procstat"
)

func TestMain(m *testing.M) {
	testutil.Main(m)
}

// quotaReader makes the instruments read a fake cgroup v2 with a quota of half a core, 90 of
// its 120 periods throttled for 4.5 s in all (the fixture of procstat's
// own tests, written out).
func quotaReader() procstat.Option {
	fsys := fstest.MapFS{
		"proc/self/cgroup":          {Data: []byte("0::/app\n")},
		"proc/self/mountinfo":       {Data: []byte("30 23 0:26 / /sys/fs/cgroup rw,nosuid,nodev,noexec,relatime shared:4 - cgroup2 cgroup2 rw,nsdelegate\n")},
		"sys/fs/cgroup/app/cpu.max": {Data: []byte("50000 100000\n")},
		"sys/fs/cgroup/app/cpu.stat": {Data: []byte("usage_usec 3002\nuser_usec 2001\nsystem_usec 1001\n" +
			"nr_periods 120\nnr_throttled 90\nthrottled_usec 4500000\nnr_bursts 0\nburst_usec 0\n")},
	}
	return procstatfs.Option(fsys, "proc/self/cgroup", "proc/self/mountinfo").(procstat.Option)
}

func instrument(t *testing.T, opts ...procstat.Option) *procstat.Instrumentation {
	t.Helper()
	inst, err := procstat.Instrument(opts...)
	if err != nil {
		t.Fatalf("Instrument: %v", err)
	}
	t.Cleanup(func() { _ = inst.Stop() })
	return inst
}
