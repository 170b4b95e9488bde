package cpulimit

import (
	"testing"
	"time"
)

// The parsers, on lines the app prints: a misread class, bound or count
// would make TestCPULimit judge something else than what the app said.

func TestParseSummary(t *testing.T) {
	ref := time.Date(2026, 12, 4, 22, 30, 0, 0, time.Local)
	for _, tc := range []struct {
		line string
		want summary
	}{{
		// A fixed count under the quota: cpu, a lower bound of the cores.
		line: "22:31:07.159306 queue configmaps: depth=19 delayed=0 in_flight=4 oldest=2.175s adds/s=8.0 retries/s=0.8 reconciles/s=7.6 errors/s=0.8 utilization=1.00 coalesced/s=4.8 cpu=0.50/0.50 cores throttled=1.00 sched-p99=100.663296ms split=own 0.93 limiter 0.00 api 0.07 retry-after 0.00 bottleneck=cpu (cpu 0.98 >= 0.9: more CPU (the pod's CPU limit) or cheaper reconciles (-reconcile-cpu), not workers) → no more than -workers 8 size: cpu/reconcile=64.66ms cores-needed>=0.72 memory=14.2MiB (291KiB/object) writes/s=8.0/12.0 behind: the process's CPU: the workload shares it with the controller",
		want: summary{at: time.Date(2026, 12, 4, 22, 31, 7, 159306000, time.Local), class: "cpu", signal: "cpu", cpuUsed: 0.5, cpuCores: 0.5, cpuKnown: true, throttled: "1.00",
			rec: "→ no more than -workers 8", size: "cpu/reconcile=64.66ms cores-needed>=0.72", atLeast: true, cores: 0.72},
	}, {
		// An adaptive pool, once the quota is lifted: no throttling, the
		// recommendation of more workers within the pool's bounds.
		line: "22:36:27.500081 queue configmaps: depth=21 delayed=0 in_flight=1 oldest=2.249s workers=1 (adaptive 1..32, ceiling 1, last: cpu, 2 changes) adds/s=8.4 retries/s=0.4 reconciles/s=7.4 errors/s=0.4 utilization=1.00 coalesced/s=4.0 cpu=0.48/2.00 cores sched-p99=1.572864ms split=own 1.00 limiter 0.00 api 0.00 retry-after 0.00 bottleneck=workers (Little's law 3 > configured): 12.4 arrivals/s × 135ms mean work / 0.7 → recommend 3 workers, within -adaptive-workers 1:32 size: cpu/reconcile=64.71ms cores-needed=1.15 memory=15.2MiB (311KiB/object) writes/s=12.0/12.0",
		want: summary{at: time.Date(2026, 12, 4, 22, 36, 27, 500081000, time.Local), class: "workers", signal: "Little's", cpuUsed: 0.48, cpuCores: 2, cpuKnown: true,
			pool: "workers=1 (adaptive 1..32, ceiling 1, last: cpu, 2 changes)", workers: 1,
			rec: "→ recommend 3 workers, within -adaptive-workers 1:32", size: "cpu/reconcile=64.71ms cores-needed=1.15", cores: 1.15},
	}, {
		// Nothing finished: no class, no size; past midnight, the next day.
		line: "00:00:02.000001 queue configmaps: depth=0 delayed=0 in_flight=0 oldest=0s workers=4 (adaptive 1..32, no change yet) adds/s=0.0 retries/s=0.0 reconciles/s=0.0 errors/s=0.0 utilization=0.00 coalesced/s=0.0 cpu=0.01/0.50 cores throttled=0.00 sched-p99=0s writes/s=0.0/0.0",
		want: summary{at: time.Date(2026, 12, 5, 0, 0, 2, 1000, time.Local), cpuUsed: 0.01, cpuCores: 0.5, cpuKnown: true, throttled: "0.00",
			pool: "workers=4 (adaptive 1..32, no change yet)", workers: 4},
	}, {
		// A busy node: the threads waited for a CPU, no quota.
		line: "11:02:03.100000 queue configmaps: depth=9 delayed=0 in_flight=4 oldest=1.2s adds/s=12.0 retries/s=0.0 reconciles/s=11.8 errors/s=0.0 utilization=1.00 coalesced/s=0.0 cpu=0.69/2.00 cores starved=0.76 sched-p99=67.108864ms bottleneck=cpu (cpu-wait 0.56 of work time >= 0.25: the node's other processes take the CPU it wants; a larger CPU request, or a quieter node, not workers) → no more than -workers 4 size: cpu/reconcile=63.00ms cores-needed>=1.06",
		want: summary{at: time.Date(2026, 12, 4, 11, 2, 3, 100000000, time.Local), class: "cpu", signal: "cpu-wait", cpuUsed: 0.69, cpuCores: 2, cpuKnown: true,
			rec: "→ no more than -workers 4", size: "cpu/reconcile=63.00ms cores-needed>=1.06", atLeast: true, cores: 1.06},
	}} {
		got, ok := parseSummary(tc.line, ref)
		tc.want.line = tc.line
		if !ok || got != tc.want {
			t.Errorf("parseSummary(%q) =\n%+v, %v; want\n%+v", tc.line, got, ok, tc.want)
		}
	}
	for _, line := range []string{
		"22:31:07.184659 INFO adaptive workers queue=configmaps from=4 to=2 reason=cpu detail=\"4.0 running\" needed=11 busy=4 usable=4.07 wait=3.22s ceiling=1",
		"22:33:27.196057 controller \"configmaps\" running against the embedded API server at http://127.0.0.1:37405, namespace \"otelqueue-demo\", 8 workers",
		"==== e2e: A exited at 2026-12-04T22:34:42.2Z: exit status 0",
	} {
		if s, ok := parseSummary(line, ref); ok {
			t.Errorf("parseSummary(%q) = %+v; want no summary", line, s)
		}
	}
}

func TestParseDecision(t *testing.T) {
	ref := time.Date(2026, 12, 4, 22, 30, 0, 0, time.Local)
	line := `22:36:02.792657 INFO adaptive workers queue=configmaps from=4 to=2 reason=cpu detail="4.1 running, the CPU serves 0.5 at once (0.50 of 0.50 cores used, 63.92ms of CPU per reconcile; work time 524.87ms); ceiling 1 held 2m0s" needed=11 busy=4 usable=4.07 wait=3.22s ceiling=1`
	d, ok := parseDecision(line, ref)
	if !ok || d.from != 4 || d.to != 2 || d.reason != "cpu" || d.detail[:12] != "4.1 running," || !d.at.Equal(time.Date(2026, 12, 4, 22, 36, 2, 792657000, time.Local)) {
		t.Errorf("parseDecision(%q) = %+v, %v", line, d, ok)
	}
	if _, ok := parseDecision("22:36:07.500654 queue configmaps: depth=23 delayed=0 in_flight=2 oldest=2.5s workers=2 (adaptive 1..32, ceiling 1, last: cpu, 1 change) adds/s=8.4", ref); ok {
		t.Error("a summary line parsed as a decision")
	}
}

func TestTimeOfDay(t *testing.T) {
	loc := time.FixedZone("test", 3600)
	for _, tc := range []struct {
		ref  time.Time
		hms  string
		want time.Time
	}{
		{time.Date(2026, 12, 4, 23, 59, 50, 0, loc), "00:00:05.000000", time.Date(2026, 12, 5, 0, 0, 5, 0, loc)},
		{time.Date(2026, 12, 5, 0, 0, 5, 0, loc), "23:59:50.000000", time.Date(2026, 12, 4, 23, 59, 50, 0, loc)},
		{time.Date(2026, 12, 4, 12, 0, 0, 0, loc), "12:01:15.250000", time.Date(2026, 12, 4, 12, 1, 15, 250000000, loc)},
	} {
		if got, ok := timeOfDay(tc.hms, tc.ref); !ok || !got.Equal(tc.want) {
			t.Errorf("timeOfDay(%q, %v) = %v, %v; want %v", tc.hms, tc.ref, got, ok, tc.want)
		}
	}
}

func TestMedian(t *testing.T) {
	for _, tc := range []struct {
		xs   []float64
		want float64
	}{{[]float64{3, 1, 2}, 2}, {[]float64{0.4, 1.2, 0.6, 0.8}, 0.7}, {[]float64{5}, 5}} {
		if got := median(tc.xs); got != tc.want {
			t.Errorf("median(%v) = %v, want %v", tc.xs, got, tc.want)
		}
	}
}
