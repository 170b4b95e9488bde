package bottleneck

import (
	"testing"
	"time"

	"github.com/otelqueue/otelqueue/internal/sizing"
	"github.com/otelqueue/otelqueue/procstat"
)

func TestWindow(t *testing.T) {
	// One worker busy 4.8 s of 5 with 96 reconciles of 50 ms; 150 adds and
	// 50 coalesced: saturated, so 40 arrivals/s.
	w := Window{Duration: 5 * time.Second, Workers: 1, Adds: 150, Coalesced: 50, Busy: 4800 * time.Millisecond, Reconciles: 96}
	if u := w.Utilization(); u < 0.959 || u > 0.961 {
		t.Errorf("utilization %v, want 0.96", u)
	}
	if a := w.Arrivals(); a != 40 {
		t.Errorf("arrivals %v/s, want 40 (saturated: coalesced adds count)", a)
	}
	if m := w.MeanWork(); m != 50*time.Millisecond {
		t.Errorf("mean work %v, want 50ms", m)
	}
	if v := w.Classify(); v.Class != Workers || v.Figure != 3 {
		t.Errorf("%v, want workers with Little's law 3", v)
	}
	// Not saturated: the adds alone are the arrivals.
	w2 := Window{Duration: 5 * time.Second, Workers: 2, Adds: 100, Coalesced: 50, Busy: 2 * time.Second, Reconciles: 100}
	if a := w2.Arrivals(); a != 20 {
		t.Errorf("arrivals %v/s below saturation, want 20 (adds only)", a)
	}

	// Most of the work waiting for the client's limiter.
	w.Client = Client{Used: true, Work: w.Busy, RateLimiterWait: 3 * time.Second, RequestTime: 240 * time.Millisecond}
	if v := w.Classify(); v.Class != ClientRateLimit || v.Recommend(w.Workers, w.LittlesLaw()) != 1 {
		t.Errorf("%v recommending %d, want client-rate-limit and no more than 1", v, v.Recommend(w.Workers, w.LittlesLaw()))
	}
	if own := w.Client.Own(); own < 0.32 || own > 0.34 {
		t.Errorf("own share %v, want 0.33", own)
	}
	if got := (Client{Used: true, Work: time.Second, RequestTime: 2 * time.Second}).Own(); got != 0 {
		t.Errorf("own share %v when the client took more than the work (concurrent requests): want 0", got)
	}
	// A client used, but no work finished: the shares are unknown.
	w.Client = Client{Used: true, RateLimiterWait: time.Second}
	if f := w.Figures(); f.Client {
		t.Errorf("client shares known with no work: %+v", f)
	}
}

// TestPollingIsNoError checks that requeues a reconcile asked for
// (RequeueAfter: DelayedAdds) are no errors, while backoff retries are.
func TestPollingIsNoError(t *testing.T) {
	w := Window{Duration: 5 * time.Second, Workers: 4, Adds: 100, Retries: 95, DelayedAdds: 95, Busy: time.Second, Reconciles: 100}
	if v := w.Classify(); v.Class == Errors {
		t.Errorf("95 RequeueAfter of 100 adds: %v, want no errors class", v)
	}
	if r, ok := w.ErrorRetries(); !ok || r != 0 {
		t.Errorf("ErrorRetries = %v, %v; want 0", r, ok)
	}
	w.DelayedAdds = 40
	if v := w.Classify(); v.Class != Errors || v.Figure != 0.55 {
		t.Errorf("55 backoff retries of 100 adds: %v, want errors 0.55", v)
	}
	// A reading of DelayedAdds ahead of Retries (two reads that raced) is
	// no negative count.
	w.DelayedAdds = 200
	if r, _ := w.ErrorRetries(); r != 0 {
		t.Errorf("DelayedAdds above Retries: %v, want 0", r)
	}
	if _, ok := (Window{}).ErrorRetries(); ok {
		t.Error("no adds: ErrorRetries known")
	}
	// One add, a retry through the backoff (a reconcile failing once while
	// the API server restarts): too few adds for a class.
	one := Window{Duration: time.Second, Workers: 4, Adds: 1, Retries: 1, Busy: time.Second, Reconciles: 1}
	if _, ok := one.ErrorRetries(); ok {
		t.Error("one add: ErrorRetries known")
	}
	if v := one.Classify(); v.Class == Errors {
		t.Errorf("one failed add: %v, want no errors class", v)
	}
	one.Adds, one.Retries = sizing.MinReconciles, sizing.MinReconciles
	if v := one.Classify(); v.Class != Errors {
		t.Errorf("%d failed adds: %v, want errors", sizing.MinReconciles, v)
	}
}

// TestCPUClass checks the CPU class against a process that uses the cores
// it has, and that it never recommends more workers than configured even
// when Little's law (inflated by work waiting for the CPU) asks for more.
func TestCPUClass(t *testing.T) {
	w := Window{Duration: 10 * time.Second, Workers: 8, Adds: 300, Busy: 80 * time.Second, Reconciles: 50,
		CPU: CPUUse{Known: true, Used: 0.49, Cores: 0.5, Throttled: 0.97, ThrottledKnown: true}}
	v := w.Classify()
	if v.Class != CPU {
		t.Fatalf("%v, want cpu", v)
	}
	if law := w.LittlesLaw(); law <= w.Workers || v.Recommend(w.Workers, law) > w.Workers {
		t.Errorf("Little's law %d, recommended %d: want a law above 8 and no more than 8 recommended", law, v.Recommend(w.Workers, law))
	}
	s := w.Size()
	// 0.49 cores × 10 s / 50 reconciles = 98 ms each; 30 arrivals/s need
	// 30 × 0.098 / 0.7 = 4.2 cores.
	if !s.Known || s.CPUPerReconcile != 98*time.Millisecond || s.Cores < 4.19 || s.Cores > 4.21 {
		t.Errorf("size %+v, want 98ms per reconcile and 4.2 cores", s)
	}
	// Throttled in most periods, at a lower mean use: cpu all the same.
	w.CPU.Used, w.CPU.Throttled = 0.3, 0.6
	if v := w.Classify(); v.Class != CPU || v.Rule.Signal != signalCPUThrottled {
		t.Errorf("throttled 0.6: %v, want cpu by throttling", v)
	}
	if got := s.String(); got != "cpu/reconcile=98ms cores-needed=4.20" {
		t.Errorf("Size.String() = %q", got)
	}
	w.CPU = CPUUse{}
	if s := w.Size(); s.Known || s.String() != "size unknown" {
		t.Errorf("no CPU read: size %+v known", s)
	}
	w.CPU = CPUUse{Known: true, Used: 1, Cores: 2}
	w.ProcessReconciles = 100
	if s := w.Size(); s.CPUPerReconcile != 100*time.Millisecond {
		t.Errorf("CPU over the process's 100 reconciles: %v, want 100ms", s.CPUPerReconcile)
	}
	if s := (Window{CPU: CPUUse{Known: true, Used: 1, Cores: 2}}).Size(); s.Known {
		t.Errorf("an empty window: size %+v known", s)
	}
}

// TestProcessCPU checks the CPU figures of a procstat window, and that a
// window with no CPU read or no cores known is not Known.
func TestProcessCPU(t *testing.T) {
	w := procstat.Window{Duration: 2 * time.Second, CPUKnown: true, CPU: time.Second, Cores: 0.5, Limited: true,
		ThrottledKnown: true, Throttled: 0.9, SchedP99: time.Millisecond}
	c := ProcessCPU(w)
	if !c.Known || c.Used != 0.5 || c.Cores != 0.5 || c.Utilization() != 1 || !c.ThrottledKnown || c.Throttled != 0.9 || c.SchedLatencyP99 != time.Millisecond {
		t.Errorf("ProcessCPU(%+v) = %+v", w, c)
	}
	for _, bad := range []procstat.Window{{}, {Duration: time.Second, CPU: time.Second, Cores: 2}, {Duration: time.Second, CPUKnown: true, CPU: time.Second}} {
		if c := ProcessCPU(bad); c.Known {
			t.Errorf("ProcessCPU(%+v) = %+v, want unknown", bad, c)
		}
	}
	// Two real reads of this process.
	a := new(procstat.Reader).Read()
	if c := ProcessCPU(procstat.Between(a, new(procstat.Reader).Read())); !c.Known || c.Cores <= 0 || c.Used < 0 {
		t.Errorf("two reads of this process: %+v, want known figures", c)
	}
}

// TestWindowFewReconciles: Little's law reads the mean work time of at
// least sizing.MinReconciles reconciles: one attempt of 12.6 s that waited out a
// throttled API server, alone in a 3 s window, recommends no 55 workers;
// the same mean over sizing.MinReconciles does.
func TestWindowFewReconciles(t *testing.T) {
	w := Window{Duration: 3 * time.Second, Workers: 16, Adds: 9, Reconciles: 1, Busy: 12600 * time.Millisecond}
	if v := w.Classify(); v.Class == Workers || v.MoreWorkers() && v.Class != None {
		t.Errorf("one reconcile: %v, want no workers class", v)
	}
	if f := w.Figures(); f.WorkKnown {
		t.Errorf("one reconcile: the work time known for Little's law")
	}
	w.Reconciles, w.Busy = sizing.MinReconciles, sizing.MinReconciles*12600*time.Millisecond
	if v := w.Classify(); v.Class != Workers {
		t.Errorf("%d reconciles of 12.6 s at 3 arrivals/s with 16 workers: %v, want workers", sizing.MinReconciles, v)
	}
}
