package examplecluster

import (
	"strings"
	"testing"
	"time"

	"github.com/otelqueue/otelqueue/inspect"

	"github.com/otelqueue/otelqueue/bottleneck"
	"github.com/otelqueue/otelqueue/kubeclient"
	"github.com/otelqueue/otelqueue/scheduler"
)

// win is a bottleneck.Window of 5 s, for the tests of the line.
func win(w bottleneck.Window) Window {
	w.Duration = 5 * time.Second
	return Window{Window: w}
}

func TestWindow(t *testing.T) {
	// One worker busy 4.8 s of 5 with 96 reconciles of 50 ms; 150 adds and
	// 50 coalesced: saturated, so 40 arrivals/s.
	w := win(bottleneck.Window{Workers: 1, Adds: 150, Coalesced: 50, Busy: 4800 * time.Millisecond, Reconciles: 96})
	s := w.String()
	for _, want := range []string{"utilization=0.96", "coalesced/s=10.0", "split=unknown", "bottleneck=workers (Little's law 3 > configured)", "→ recommend -workers 3"} {
		if !strings.Contains(s, want) {
			t.Errorf("%q lacks %q", s, want)
		}
	}
	if strings.Contains(s, "cpu=") || strings.Contains(s, "size:") {
		t.Errorf("no CPU read: %q shows CPU figures", s)
	}

	// The same load, with most of the work waiting for the client's limit.
	w.Client = bottleneck.Client{Work: w.Busy, RateLimiterWait: 3 * time.Second, RequestTime: 240 * time.Millisecond, Used: true}
	s = w.String()
	for _, want := range []string{"split=own 0.33 limiter 0.62 api 0.05 retry-after 0.00", "bottleneck=client-rate-limit (limiter 0.62 of work time >= 0.25", "→ no more than -workers 1"} {
		if !strings.Contains(s, want) {
			t.Errorf("work that is mostly waiting for the client limit: %q lacks %q", s, want)
		}
	}
	if strings.Contains(s, "recommend") {
		t.Errorf("%q recommends workers against a client limit", s)
	}

	// Not saturated: adds alone are the arrivals.
	w = win(bottleneck.Window{Workers: 2, Adds: 100, Coalesced: 50, Busy: 2 * time.Second, Reconciles: 100})
	if s := w.String(); s != "utilization=0.20 coalesced/s=10.0 split=unknown (no instrumented client) bottleneck=none (utilization 0.20)" {
		t.Errorf("unsaturated: %q", s)
	}
	// Half the adds failing and coming back through the backoff.
	w.Retries = 60
	if s := w.String(); !strings.Contains(s, "bottleneck=errors (backoff retries 0.60 of adds > 0.5") || !strings.Contains(s, "→ no more than -workers 1") {
		t.Errorf("retries 60 of 100 adds: %q", s)
	}
	// The same retries asked for by the reconcile (RequeueAfter): polling,
	// no errors.
	w.DelayedAdds = 60
	if s := w.String(); strings.Contains(s, "bottleneck=errors") {
		t.Errorf("60 RequeueAfter of 100 adds: %q, want no errors class", s)
	}
	// Keys came and none finished: no class (bottleneck.Window.Classify).
	if s := win(bottleneck.Window{Workers: 2, Adds: 10, Duration: time.Second}).String(); strings.Contains(s, "bottleneck=") {
		t.Errorf("keys came and nothing finished: %q, want no class", s)
	}
	// Idle: the line says no class.
	if s := win(bottleneck.Window{Workers: 2}).String(); s != "utilization=0.00 coalesced/s=0.0" {
		t.Errorf("idle: %q", s)
	}
}

// TestWindowCPU checks the line of a process that uses the CPU it has: the
// class cpu, no more workers however much Little's law asks, and the size.
func TestWindowCPU(t *testing.T) {
	w := win(bottleneck.Window{Workers: 8, Adds: 150, Busy: 40 * time.Second, Reconciles: 25,
		CPU: bottleneck.CPUUse{Known: true, Used: 0.49, Cores: 0.5, Throttled: 0.97, ThrottledKnown: true, SchedLatencyP99: 3 * time.Millisecond}})
	s := w.String()
	for _, want := range []string{
		"cpu=0.49/0.50 cores throttled=0.97 sched-p99=3ms",
		"bottleneck=cpu (cpu 0.98 >= 0.9: more CPU",
		"→ no more than -workers 8",
		// 0.49 cores × 5 s / 25 reconciles = 98 ms each; 30 arrivals/s
		// need 30 × 0.098 / 0.7 = 4.2 cores.
		// A lower bound while the CPU limits: events come in more slowly.
		"size: cpu/reconcile=98ms cores-needed>=4.20",
	} {
		if !strings.Contains(s, want) {
			t.Errorf("%q lacks %q", s, want)
		}
	}
	if strings.Contains(s, "recommend") {
		t.Errorf("%q recommends workers against the CPU", s)
	}
	// Throttled in most periods at a lower use.
	w.CPU.Used = 0.3
	if s := w.String(); !strings.Contains(s, "bottleneck=cpu (throttled 0.97 >= 0.5") {
		t.Errorf("throttled: %q", s)
	}
	// GOMAXPROCS 1 of 2 CPUs, no quota: raise GOMAXPROCS.
	w.CPU = bottleneck.CPUUse{Known: true, Used: 0.95, Cores: 1, MaxProcs: 1, Available: 2}
	if s := w.String(); !strings.Contains(s, "bottleneck=cpu (gomaxprocs 0.95 >= 0.9: GOMAXPROCS is below the cores the process may use; raise it") {
		t.Errorf("GOMAXPROCS: %q", s)
	}
	// A busy node: 0.4 of 2 cores got, 0.6 of a core waited for (3 s in
	// the 5 s), beside 2 workers busy (10 s of work): 0.3 of the work time.
	w.Busy = 10 * time.Second
	w.CPU = bottleneck.CPUUse{Known: true, Used: 0.4, Cores: 2, MaxProcs: 2, Available: 2, RunDelay: 0.6, RunDelayKnown: true, GCIdle: 0.05}
	if s := w.String(); !strings.Contains(s, "cpu=0.40/2.00 cores starved=0.60 gc-idle=0.05") || !strings.Contains(s, "bottleneck=cpu (cpu-wait 0.30 of work time >= 0.25: the node's other processes take the CPU") {
		t.Errorf("a busy node: %q", s)
	}
}

// TestPod checks the pod part of the line: the workers against those run,
// the CPU and memory as request/limit, the objects, and the history.
func TestPod(t *testing.T) {
	at := time.Date(2026, 12, 6, 12, 0, 0, 0, time.UTC)
	r := bottleneck.Recommendation{
		At: at, Over: 2*time.Minute + 10*time.Second, Span: 2*time.Minute + 10*time.Second,
		Queues: []bottleneck.QueueRecommendation{{Name: "configmaps", Workers: 4, Run: 2, Known: true}},
		CPU:    bottleneck.CPURecommendation{Known: true, Request: 0.15, Limit: 0.3},
		Memory: bottleneck.MemoryRecommendation{Known: true, Request: 24 << 20, Limit: 30 << 20, GOMEMLIMIT: 27 << 20, Objects: 200, PerObject: 5324},
	}
	if got, want := Pod(r), "pod: workers=2 (4 run: more than enough) cpu=0.15/0.30 memory=24Mi/30Mi GOMEMLIMIT=27MiB (200 objects × 5.2KiB) over 2m10s"; got != want {
		t.Errorf("Pod =\n%s, want\n%s", got, want)
	}
	r.Span, r.Over = bottleneck.PeakSpan, 47*time.Minute
	r.Queues[0].Run = 6
	r.CPU.LowerBound = true
	if got, want := Pod(r), "pod: workers=6 (4 run: too few) cpu=>=0.15/0.30 memory=24Mi/30Mi GOMEMLIMIT=27MiB (200 objects × 5.2KiB) busiest 5m0s of 47m0s"; got != want {
		t.Errorf("Pod =\n%s, want\n%s", got, want)
	}
	r.Queues[0].Known = false
	if got := Pod(r); !strings.HasPrefix(got, "pod: workers=unknown cpu=") {
		t.Errorf("Pod = %s", got)
	}
	if got := Pod(bottleneck.Recommendation{}); got != "pod: measuring" {
		t.Errorf("Pod of nothing = %s", got)
	}
}

func TestBytesText(t *testing.T) {
	for n, want := range map[float64]string{0: "0B", 1000: "1e+03B", 2048: "2KiB", 1.5 * (1 << 30): "1.5GiB", 3 << 40: "3.07e+03GiB"} {
		if got := bytesText(n); got != want {
			t.Errorf("bytesText(%v) = %q, want %q", n, got, want)
		}
	}
}

func TestWritesBehind(t *testing.T) {
	for _, tc := range []struct {
		name string
		w    Writes
		want string // "" when not behind
	}{
		{"kept up", Writes{Seconds: 5, Requested: 100, Done: 99, Slack: 10}, ""},
		{"a burst due at the end of the interval", Writes{Seconds: 5, Requested: 140, Done: 100, Backlog: 40, Slack: 50}, ""},
		{"client limit", Writes{Seconds: 5, Requested: 100, Done: 25, Backlog: 75, Slack: 10, LimiterWaited: 4 * time.Second, WorkloadQPS: 5, WorkloadBurst: 10},
			"behind: client rate limit (-workload-qps 5 -workload-burst 10)"},
		{"server limit", Writes{Seconds: 5, Requested: 100, Done: 25, Backlog: 75, Slack: 10, Busy: 20 * time.Second, Rejected: 60, ServerQPS: 5},
			"behind: the API server rejected 60 writes with 429 (-server-qps 5)"},
		{"server limit and the client's waits for it", Writes{Seconds: 5, Requested: 100, Done: 25, Backlog: 75, Slack: 10, LimiterWaited: 4 * time.Second, WorkloadQPS: 50, WorkloadBurst: 50, Rejected: 60, ServerQPS: 5},
			"behind: the API server rejected 60 writes with 429 (-server-qps 5)"},
		{"rejections but kept up", Writes{Seconds: 5, Requested: 100, Done: 99, Slack: 10, Rejected: 3, ServerQPS: 20}, ""},
		{"failures", Writes{Seconds: 5, Requested: 100, Done: 50, Failed: 50, Slack: 10}, "behind: 50 writes failed"},
		{"slow server", Writes{Seconds: 5, Requested: 100, Done: 50, Backlog: 50, Slack: 10, Busy: 5 * time.Second}, "behind: each write takes 100ms"},
		{"the process's CPU", Writes{Seconds: 5, Requested: 100, Done: 50, Backlog: 50, Slack: 10, Busy: 5 * time.Second, CPUBound: true}, "behind: the process's CPU"},
		{"nothing", Writes{Seconds: 5, Requested: 100, Backlog: 100, Slack: 10}, "behind: no write finished"},
		{"catching up", Writes{Seconds: 5, Requested: 100, Done: 140, Slack: 50},
			"writes/s=28.0/20.0 catching up: 40 more writes than requested, overdue from earlier intervals"},
		{"catching up, still behind", Writes{Seconds: 5, Requested: 100, Done: 120, Backlog: 80, Slack: 50, Busy: 5 * time.Second},
			"writes/s=24.0/20.0 behind: each write takes 41.7ms (a slow API server?); catching up: 20 more writes than requested"},
		{"blind", Writes{Seconds: 5, Requested: 100, Done: 99, Slack: 10, Events: 0}, ""},
	} {
		if tc.name != "blind" && tc.w.Done > 0 {
			tc.w.Events = tc.w.Done // the queue saw the writes
		}
		s := tc.w.String()
		if blind := strings.Contains(s, " blind: "); blind != (tc.name == "blind") {
			t.Errorf("%s: %q says blind: %v; want it for writes done and no event only", tc.name, s, blind)
		}
		if tc.want == "" && strings.Contains(s, "behind") || tc.want != "" && !strings.Contains(s, tc.want) {
			t.Errorf("%s: %q, want %q", tc.name, s, tc.want)
		}
		if catching := strings.Contains(s, "catching up"); catching != (tc.w.Done > tc.w.Requested) {
			t.Errorf("%s: %q says catching up: %v, with %d writes done of %d requested", tc.name, s, catching, tc.w.Done, tc.w.Requested)
		}
		if !strings.HasPrefix(s, "writes/s=") {
			t.Errorf("%s: %q does not start with writes/s=", tc.name, s)
		}
	}
}

// TestWritesCounted follows the workload's counts over summary intervals
// of 5 s with -churn 20 and bursts of 40 every 10 s (slack 50: a reading's
// settled writes are those requested less 50): the requested writes of an
// interval are those done, a burst due at the end of one included, unless
// the workload falls behind; then the overdue ones count as requested, and
// the interval that does them says it catches up.
func TestWritesCounted(t *testing.T) {
	const slack = 50
	settle := func(readings []WorkloadStats) []WorkloadStats {
		for i := range readings {
			readings[i].Settled = readings[i].Requested - min(readings[i].Requested, slack)
		}
		return readings
	}
	for _, tc := range []struct {
		name      string
		readings  []WorkloadStats // at 0, 5, 10, ... s
		done, req []uint64        // per interval
	}{
		{"a burst due as an interval ends, written in the next", settle([]WorkloadStats{
			{Requested: 0},
			{Requested: 100, Started: 100, Done: 100, Finished: 100},
			{Requested: 240, Started: 201, Done: 200, Finished: 200}, // the burst: due, not started
			{Requested: 340, Started: 340, Done: 340, Finished: 340},
		}), []uint64{100, 100, 140}, []uint64{100, 100, 140}},
		{"a failure", settle([]WorkloadStats{
			{Requested: 0},
			{Requested: 100, Started: 100, Done: 99, Failed: 1, Finished: 100},
		}), []uint64{99}, []uint64{100}},
		{"behind, then catching up", settle([]WorkloadStats{
			{Requested: 0},
			{Requested: 100, Started: 100, Done: 100, Finished: 100},
			{Requested: 240, Started: 121, Done: 120, Finished: 120}, // a slow API server: 120 overdue
			{Requested: 340, Started: 300, Done: 300, Finished: 300}, // 40 due, within the slack
			{Requested: 440, Started: 440, Done: 440, Finished: 440},
		}), []uint64{100, 20, 180, 140}, []uint64{100, 90, 110, 140}},
	} {
		for i := 1; i < len(tc.readings); i++ {
			prev, cur := tc.readings[i-1], tc.readings[i]
			done, req := cur.Done-prev.Done, cur.Counted()-prev.Counted()
			if done != tc.done[i-1] || req != tc.req[i-1] {
				t.Errorf("%s, interval %d: %d done of %d requested, want %d of %d", tc.name, i, done, req, tc.done[i-1], tc.req[i-1])
			}
			if done > req && prev.Settled <= prev.Finished {
				t.Errorf("%s, interval %d: %d done of %d requested, with no write overdue at its start", tc.name, i, done, req)
			}
			if s := cur.Slack(); s != min(cur.Requested, slack) {
				t.Errorf("%s, interval %d: slack %d, want %d", tc.name, i, s, min(cur.Requested, slack))
			}
		}
	}
}

func TestBusyCountsRunningReconciles(t *testing.T) {
	var b Busy
	end := b.Start()
	b.Start() // still running at the end of the test
	end()
	t0 := time.Now()
	b0, n := b.Load(t0)
	if n != 1 {
		t.Errorf("%d reconciles finished, want 1", n)
	}
	b1, _ := b.Load(t0.Add(time.Second))
	if d := b1 - b0; d != time.Second {
		t.Errorf("one reconcile running for one more second adds %v of busy time, want 1s", d)
	}
}

func TestAdaptiveSummary(t *testing.T) {
	for _, tc := range []struct {
		st   inspect.Pool
		want string
	}{
		{inspect.Pool{Limit: 2, Min: 1, Max: 32}, "workers=2 (adaptive 1..32, no change yet)"},
		{inspect.Pool{Limit: 12, Min: 1, Max: 32, Changes: 3, Reason: "demand"}, "workers=12 (adaptive 1..32, last: demand, 3 changes)"},
		{inspect.Pool{Limit: 4, Min: 1, Max: 32, Changes: 1, Reason: "low-utilization"}, "workers=4 (adaptive 1..32, last: low-utilization, 1 change)"},
		{inspect.Pool{Limit: 2, Min: 1, Max: 32, Ceiling: 2, Changes: 2, Reason: "client-rate-limit"}, "workers=2 (adaptive 1..32, ceiling 2, last: client-rate-limit, 2 changes)"},
		// A decision that kept the count (the downstream got slower for
		// everyone) is the last one, with no change counted.
		{inspect.Pool{Limit: 8, Min: 2, Max: 8, Reason: "slower-for-all"}, "workers=8 (adaptive 2..8, last: slower-for-all, 0 changes)"},
	} {
		if got := AdaptiveSummary(tc.st); got != tc.want {
			t.Errorf("AdaptiveSummary(%+v) = %q, want %q", tc.st, got, tc.want)
		}
	}
}

// TestLineWithAdaptiveWorkers: with an adaptive pool, the line starts with
// its count, and the utilization and the recommendation are for the count
// at the reading, not for -workers; without, the line is as it was.
func TestLineWithAdaptiveWorkers(t *testing.T) {
	rng := AdaptiveRange{Min: 1, Max: 32, set: true}
	var busy time.Duration // the workers' busy time at the reading
	m := &Meter{Workers: 2, Range: rng, Busy: func(time.Time) (time.Duration, uint64) { return busy, 0 }}
	t0 := time.Now()
	prev := Reading{At: t0}
	// 8 workers' worth busy over 5 s, 40 reconciles of 1 s: 16 workers
	// busy at 0.5, Little's law 8/s × 1 s / 0.7 = 12.
	cur := Reading{At: t0.Add(5 * time.Second), Busy: 40 * time.Second, Reconciles: 40,
		Queue:    scheduler.Stats{Adds: 40},
		Adaptive: inspect.Pool{Limit: 16, Min: 1, Max: 32, Changes: 3, Reason: "demand"}, AdaptiveOK: true}
	l := m.Line(prev, cur)
	if !strings.HasPrefix(l, "workers=16 (adaptive 1..32, last: demand, 3 changes) adds/s=8.0 ") || !strings.Contains(l, " utilization=0.50 ") {
		t.Errorf("adaptive at 16: %q", l)
	}
	// At 8 workers, saturated: recommend more, within the pool's range.
	cur.Adaptive.Limit = 8
	cur.Busy = 39 * time.Second
	l = m.Line(prev, cur)
	if !strings.Contains(l, " utilization=0.97 ") || !strings.Contains(l, "→ recommend 12 workers, within -adaptive-workers 1:32") {
		t.Errorf("adaptive at 8, saturated: %q", l)
	}
	m.Range = AdaptiveRange{Min: 1, Max: 8, set: true}
	cur.Adaptive.Max = 8
	if l = m.Line(prev, cur); !strings.Contains(l, "→ recommend 12 workers: above -adaptive-workers 1:8, raise its MAX") {
		t.Errorf("adaptive at its MAX 8, saturated: %q", l)
	}
	// The pool not running (yet): the line is a fixed count's.
	cur.AdaptiveOK = false
	if l = m.Line(prev, cur); strings.Contains(l, "workers=") || !strings.Contains(l, " utilization=3.90 ") {
		t.Errorf("no pool running: %q", l)
	}
	// A downstream limit: no more than the pool's count.
	w := win(bottleneck.Window{Workers: 4, Adds: 100, Busy: 19 * time.Second, Reconciles: 25,
		Client: bottleneck.Client{Work: 19 * time.Second, RateLimiterWait: 15 * time.Second, Used: true}})
	w.Adaptive = rng
	if s := w.String(); !strings.Contains(s, "bottleneck=client-rate-limit") || !strings.HasSuffix(s, "→ no more than 4 workers") {
		t.Errorf("adaptive, client-limited: %q", s)
	}
}

// TestLineStandby: a standby queue's line says so and has no class, though
// its figures, read as an active queue's, would recommend more workers; the
// same figures once active do.
func TestLineStandby(t *testing.T) {
	standby := true
	m := &Meter{Workers: 2, Busy: func(time.Time) (time.Duration, uint64) { return 10 * time.Second, 10 },
		Standby: func() bool { return standby }}
	t0 := time.Now()
	prev := Reading{At: t0}
	cur := Reading{At: t0.Add(5 * time.Second), Busy: 10 * time.Second, Reconciles: 10, Queue: scheduler.Stats{Adds: 40}}
	l := m.Line(prev, cur)
	if !strings.Contains(l, " utilization=1.00 standby: the workers wait for leadership (no class)") || strings.Contains(l, "bottleneck=") || strings.Contains(l, "recommend") {
		t.Errorf("standby: %q", l)
	}
	standby = false
	if l = m.Line(prev, cur); strings.Contains(l, "standby") || !strings.Contains(l, "bottleneck=workers") {
		t.Errorf("active: %q", l)
	}
}

// TestWatchesText checks the line's watches part: open streams, stale ones
// beside them, and the two ways a controller is blind: none open (since
// when), or only stale ones.
func TestWatchesText(t *testing.T) {
	at := time.Date(2026, 12, 6, 12, 0, 0, 0, time.UTC)
	for _, tc := range []struct {
		ws   *kubeclient.WatchStats
		want string
	}{
		{nil, ""},
		{&kubeclient.WatchStats{}, ""},
		{&kubeclient.WatchStats{Open: 2, Opened: 2}, " watches=2"},
		{&kubeclient.WatchStats{Open: 1, Stale: 1, Opened: 2}, " watches=1 stale=1"},
		{&kubeclient.WatchStats{Stale: 1, Opened: 1}, " watches=0 (1 open, stale: no event or bookmark for minutes; the informers see no change)"},
		{&kubeclient.WatchStats{Opened: 1, Ended: 1, LastEnded: at.Add(-12 * time.Second)}, " watches=0 (12s none open: the informers see no change)"},
	} {
		if got := (Window{Watches: tc.ws, At: at}).watchesText(); got != tc.want {
			t.Errorf("%+v: %q, want %q", tc.ws, got, tc.want)
		}
	}
}
