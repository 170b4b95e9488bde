package examplecluster

import (
	"strings"
	"testing"
	"time"
)

func TestRecommendedWorkers(t *testing.T) {
	for _, tc := range []struct {
		arrivals float64
		work     time.Duration
		want     int
	}{
		{40, 50 * time.Millisecond, 3}, // 2 busy workers' worth / 0.7 = 2.86
		{7, 100 * time.Millisecond, 1}, // exactly 0.7 of one worker
		{7.01, 100 * time.Millisecond, 2},
		{100, 20 * time.Millisecond, 3},
		{1000, time.Second, 1429},
		{0, time.Second, 1},
		{10, 0, 1},
	} {
		if got := RecommendedWorkers(tc.arrivals, tc.work); got != tc.want {
			t.Errorf("RecommendedWorkers(%v/s, %v) = %d, want %d", tc.arrivals, tc.work, got, tc.want)
		}
	}
}

func TestWindow(t *testing.T) {
	// One worker busy 4.8 s of 5 with 96 reconciles of 50 ms; 150 adds and
	// 50 coalesced: saturated, so 40 arrivals/s.
	w := Window{Seconds: 5, Workers: 1, Adds: 150, Coalesced: 50, Busy: 4800 * time.Millisecond, Reconciles: 96}
	if u := w.Utilization(); u < 0.959 || u > 0.961 {
		t.Errorf("utilization %v, want 0.96", u)
	}
	if a := w.Arrivals(); a != 40 {
		t.Errorf("arrivals %v/s, want 40 (saturated: coalesced adds count)", a)
	}
	if m := w.MeanWork(); m != 50*time.Millisecond {
		t.Errorf("mean work %v, want 50ms", m)
	}
	s := w.String()
	for _, want := range []string{"utilization=0.96", "coalesced/s=10.0", "split=unknown", "bottleneck=workers (Little's law 3 > configured)", "→ recommend -workers 3"} {
		if !strings.Contains(s, want) {
			t.Errorf("%q lacks %q", s, want)
		}
	}

	// The same load, with most of the work waiting for the client's limiter.
	w.Client = Split{Work: w.Busy, LimiterWait: 3 * time.Second, RequestTime: 240 * time.Millisecond, Client: true}
	s = w.String()
	for _, want := range []string{"split=own 0.33 limiter 0.62 api 0.05 retry-after 0.00", "bottleneck=client-rate-limit (limiter 0.62", "→ no more than -workers 1"} {
		if !strings.Contains(s, want) {
			t.Errorf("work that is mostly waiting for the client limit: %q lacks %q", s, want)
		}
	}
	if strings.Contains(s, "recommend") {
		t.Errorf("%q recommends workers against a client limit", s)
	}

	// Not saturated: adds alone are the arrivals.
	w = Window{Seconds: 5, Workers: 2, Adds: 100, Coalesced: 50, Busy: 2 * time.Second, Reconciles: 100}
	if a := w.Arrivals(); a != 20 {
		t.Errorf("arrivals %v/s below saturation, want 20 (adds only)", a)
	}
	if s := w.String(); s != "utilization=0.20 coalesced/s=10.0 split=unknown (no instrumented client) bottleneck=none (utilization 0.20)" {
		t.Errorf("unsaturated: %q", s)
	}
	// Half the adds failing and coming back.
	w.Retries = 60
	if s := w.String(); !strings.Contains(s, "bottleneck=errors (retries 0.60 of adds > 0.50") || !strings.Contains(s, "→ no more than -workers 1") {
		t.Errorf("retries 60 of 100 adds: %q", s)
	}
	if s := (Window{Seconds: 5, Workers: 2}).String(); s != "utilization=0.00 coalesced/s=0.0" {
		t.Errorf("nothing finished: %q", s)
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
		{"nothing", Writes{Seconds: 5, Requested: 100, Backlog: 100, Slack: 10}, "behind: no write finished"},
	} {
		s := tc.w.String()
		if tc.want == "" && strings.Contains(s, "behind") || tc.want != "" && !strings.Contains(s, tc.want) {
			t.Errorf("%s: %q, want %q", tc.name, s, tc.want)
		}
		if !strings.HasPrefix(s, "writes/s=") {
			t.Errorf("%s: %q does not start with writes/s=", tc.name, s)
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
