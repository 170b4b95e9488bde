package bottleneck

import (
	"math"
	"strings"
	"testing"
	"time"
)

// neutral are figures where no rule holds: the base each case changes one
// signal of.
func neutral() Figures {
	return Figures{
		CPU:    CPUUse{Known: true, Used: 0.5, Cores: 2, Throttled: 0, ThrottledKnown: true, MaxProcs: 2, Available: 2},
		Client: true, CPUWaitKnown: true, AddsKnown: true, WorkKnown: true,
		Workers: 10, LittlesLaw: 10, Utilization: 0.5,
		APIServer: APIServerUse{Known: true, LatencyKnown: true, Latency: 10 * time.Millisecond},
	}
}

// set returns f with signal s at v.
func set(f Figures, s Signal, v float64) Figures {
	switch s {
	case signalAPIServerUnavailable:
		f.APIServer.Unavailable = v
	case signalAPIServerLatency:
		f.APIServer.Latency = time.Duration(math.Round(v * float64(time.Second)))
	case signalCPUUtilization:
		f.CPU.Used = v * f.CPU.Cores
	case signalCPUThrottled:
		f.CPU.Throttled = v
	case signalCPUMaxProcs:
		// GOMAXPROCS 1 on 2 CPUs: the process has 1 core, and used v.
		f.CPU.MaxProcs, f.CPU.Available, f.CPU.Cores, f.CPU.Used = 1, 2, 1, v
	case signalCPUWaitShare:
		f.CPUWaitShare = v
	case signalRetryAfterShare:
		f.RetryAfterShare = v
	case signalRateLimiterShare:
		f.RateLimiterShare = v
	case signalErrorRetries:
		f.ErrorRetries = v
	case signalWorkersNeeded:
		f.LittlesLaw = int(math.Round(v * float64(f.Workers)))
	}
	return f
}

// TestRuleBoundaries checks every rule of the table on both sides of its
// threshold and at it, alone: at the threshold it holds exactly when it is
// inclusive.
func TestRuleBoundaries(t *testing.T) {
	for _, r := range Rules() {
		step := 0.01
		if r.Signal == signalWorkersNeeded {
			step = 0.1 // one worker of ten
		}
		for _, tc := range []struct {
			name string
			v    float64
			want bool
		}{
			{"below", r.Threshold - step, false},
			{"at", r.Threshold, r.Inclusive},
			{"above", r.Threshold + step, true},
		} {
			f := set(neutral(), r.Signal, tc.v)
			if got, ok := f.Value(r.Signal); !ok || math.Abs(got-tc.v) > 1e-12 {
				t.Fatalf("%v %s: Value = %v, %v; want %v", r, tc.name, got, ok, tc.v)
			}
			v := Classify(f)
			if held := v.Class == r.Class; held != tc.want {
				t.Errorf("%v %s (%v): class %s, want the rule to hold: %v", r, tc.name, tc.v, v.Class, tc.want)
			}
			if !tc.want && v.Class != None {
				t.Errorf("%v %s: class %s, want none (every other signal is neutral)", r, tc.name, v.Class)
			}
		}
	}
}

// TestPrecedence checks that when every rule holds the first wins, and
// that dropping the rules one by one from the front gives each class in
// the table's order.
func TestPrecedence(t *testing.T) {
	table := Rules()
	f := neutral()
	for _, r := range table {
		f = set(f, r.Signal, r.Threshold+0.2)
	}
	for i, r := range table {
		v := Classify(f)
		if v.Class != r.Class {
			t.Fatalf("with rules %d.. holding: class %s, want %s (%v)", i, v.Class, r.Class, r)
		}
		if v.Rule.Signal != r.Signal && v.Rule.Class == r.Class {
			t.Fatalf("rule %v held, want %v (the first of its class that holds)", v.Rule, r)
		}
		if r.Signal == signalCPUMaxProcs {
			// GOMAXPROCS no longer below the cores: the utilization, of
			// the same CPU, is the next rule's.
			f.CPU.Available = float64(f.CPU.MaxProcs)
			continue
		}
		f = set(f, r.Signal, r.Threshold-0.2)
	}
	if v := Classify(f); v.Class != None || v.Figure != f.Utilization {
		t.Errorf("no rule holds: %+v, want none with the utilization", v)
	}
}

// TestUnknownHoldsNothing checks that a signal not measured holds no rule,
// whatever its value: a queue without an instrumented client is never
// client-rate-limit, a process whose CPU was not read never cpu.
func TestUnknownHoldsNothing(t *testing.T) {
	f := neutral()
	for _, r := range Rules() {
		f = set(f, r.Signal, r.Threshold+0.5)
	}
	f.CPU.Known, f.Client, f.AddsKnown, f.WorkKnown, f.APIServer.Known, f.CPUWaitKnown = false, false, false, false, false, false
	if v := Classify(f); v.Class != None {
		t.Errorf("nothing measured: %v, want none", v)
	}
	f = neutral()
	f.APIServer.LatencyKnown, f.APIServer.Latency = false, time.Minute
	if v := Classify(f); v.Class != None {
		t.Errorf("no single-object round trip: %v, want none", v)
	}
	f = neutral()
	f.CPU.ThrottledKnown, f.CPU.Throttled = false, 1
	if v := Classify(f); v.Class != None {
		t.Errorf("throttling unknown: %v, want none", v)
	}
	f = neutral()
	f.Workers, f.LittlesLaw = 0, 50
	if v := Classify(f); v.Class != None {
		t.Errorf("configured workers unknown: %v, want none", v)
	}
	f = neutral()
	f.CPU.Cores, f.CPU.Used = 0, 5
	if v := Classify(f); v.Class != None {
		t.Errorf("no cores known: %v, want none", v)
	}
	f = neutral()
	f.RetryAfterShare = math.NaN()
	if v := Classify(f); v.Class != None {
		t.Errorf("a NaN share: %v, want none", v)
	}
}

// TestRecommend checks that only the workers class and none follow Little's
// law, and that every other class keeps the count at or under the
// configured one.
func TestRecommend(t *testing.T) {
	for _, r := range Rules() {
		v := Verdict{Class: r.Class, Rule: r}
		got := v.Recommend(4, 9)
		if r.MoreWorkers != (got == 9) || (!r.MoreWorkers && got != 4) {
			t.Errorf("%v: Recommend(4 configured, law 9) = %d", r, got)
		}
		if got := v.Recommend(4, 2); got != 2 {
			t.Errorf("%v: Recommend(4, law 2) = %d, want 2", r, got)
		}
		if v.MoreWorkers() != r.MoreWorkers {
			t.Errorf("%v: MoreWorkers %v", r, v.MoreWorkers())
		}
	}
	if got := (Verdict{Class: None}).Recommend(4, 3); got != 3 {
		t.Errorf("none: %d, want Little's law 3", got)
	}
	if got := (Verdict{Class: CPU, Rule: rules[0]}).Recommend(0, 7); got != 7 {
		t.Errorf("no configured count: %d, want Little's law", got)
	}
}

// TestTable checks the table's shape: every class but none has a rule,
// only Workers asks for more workers, Rules returns a copy, and each rule
// says what to change.
func TestTable(t *testing.T) {
	seen := map[Class]bool{}
	for _, r := range Rules() {
		seen[r.Class] = true
		if r.Holds == "" || r.Change == "" || r.Threshold <= 0 {
			t.Errorf("%v: incomplete: %+v", r, r)
		}
		if r.MoreWorkers != (r.Class == Workers) {
			t.Errorf("%v: MoreWorkers %v", r, r.MoreWorkers)
		}
	}
	for _, c := range []Class{CPU, ServerThrottling, ClientRateLimit, Errors, Workers} {
		if !seen[c] {
			t.Errorf("no rule for %s", c)
		}
	}
	a := Rules()
	a[0].Threshold = 42
	if Rules()[0].Threshold == 42 {
		t.Error("Rules returned the table itself, not a copy")
	}
}

func TestVerdictString(t *testing.T) {
	for _, tc := range []struct {
		v    Verdict
		want string
	}{
		{Classify(set(neutral(), signalCPUUtilization, 0.95)), "bottleneck=cpu (cpu_utilization 0.95 >= 0.9: give the controller more CPU"},
		{Classify(set(neutral(), signalRateLimiterShare, 0.62)), "bottleneck=client-rate-limit (rate_limiter_share 0.62 >= 0.25: raise the client's QPS/Burst"},
		{Classify(set(neutral(), signalErrorRetries, 0.6)), "bottleneck=errors (error_retries 0.60 > 0.5: fix the reconcile's errors"},
		{Classify(set(neutral(), signalWorkersNeeded, 1.2)), "bottleneck=workers (Little's law 12 > configured)"},
		{Classify(neutral()), "bottleneck=none (utilization 0.50)"},
	} {
		if s := tc.v.String(); !strings.HasPrefix(s, tc.want) {
			t.Errorf("%q, want the prefix %q", s, tc.want)
		}
	}
}

func TestLittlesLaw(t *testing.T) {
	for _, tc := range []struct {
		arrivals float64
		work     time.Duration
		want     int
	}{
		{40, 50 * time.Millisecond, 3}, // 2 busy workers' worth / 0.7 = 2.86
		{7, 100 * time.Millisecond, 1}, // exactly 0.7 of one worker
		{7.01, 100 * time.Millisecond, 2},
		{1000, time.Second, 1429},
		{0, time.Second, 1},
		{10, 0, 1},
		{math.NaN(), time.Second, 1},
		{math.Inf(1), time.Second, math.MaxInt32},
	} {
		if got := littlesLaw(tc.arrivals, tc.work); got != tc.want {
			t.Errorf("littlesLaw(%v/s, %v) = %d, want %d", tc.arrivals, tc.work, got, tc.want)
		}
	}
}

// FuzzClassify states the classifier's invariants for any figures: the
// class is None or that of a rule that holds and every earlier rule does
// not; a class other than Workers never recommends more than the
// configured count.
func FuzzClassify(f *testing.F) {
	f.Add(0.95, 0.1, 0.3, 0.1, 0.6, 12, 10, 0.5, uint8(0xff))
	f.Add(0.1, 0.9, 0.0, 0.3, 0.0, 3, 10, 0.2, uint8(0x0f))
	f.Fuzz(func(t *testing.T, cpu, throttled, ra, rl, errs float64, law, workers int, util float64, known uint8) {
		fig := Figures{
			CPU:    CPUUse{Known: known&1 != 0, Used: cpu * 2, Cores: 2, Throttled: throttled, ThrottledKnown: known&2 != 0},
			Client: known&4 != 0, RetryAfterShare: ra, RateLimiterShare: rl,
			ErrorRetries: errs, AddsKnown: known&8 != 0,
			Workers: workers, LittlesLaw: law, WorkKnown: known&16 != 0, Utilization: util,
		}
		v := Classify(fig)
		for _, r := range rules {
			val, ok := fig.Value(r.Signal)
			holds := ok && r.holds(val)
			if r.Class == v.Class && r.Signal == v.Rule.Signal {
				if !holds {
					t.Fatalf("%v: class %s from %v, which does not hold (%v, %v)", fig, v.Class, r, val, ok)
				}
				break
			}
			if holds {
				t.Fatalf("%v: class %s, but the earlier %v holds", fig, v.Class, r)
			}
		}
		if v.Class != Workers && v.Class != None && workers > 0 && v.Recommend(workers, law) > workers {
			t.Fatalf("%s recommends %d with %d configured", v.Class, v.Recommend(workers, law), workers)
		}
	})
}

// TestCPUSignals checks what tells the three CPU limits apart: the idle
// GC's marking is no use of the process's (a quiet process with a large
// heap read 0.95); GOMAXPROCS below the cores the process may use is its
// own rule, with its own advice (a GOMAXPROCS of 1 on 2 CPUs read "raise
// the CPU limit", which there was none of); a node that gives the threads
// much less than they want is cpu with no quota (a busy node read none).
func TestCPUSignals(t *testing.T) {
	f := neutral()
	f.CPU.Used, f.CPU.GCIdle = 1.9, 0.4
	if v := Classify(f); v.Class != None {
		t.Errorf("1.9 of 2 cores used, 0.4 of them idle GC: %v, want none (1.5 of 2)", v)
	}

	f = neutral()
	f.CPU.MaxProcs, f.CPU.Available, f.CPU.Cores, f.CPU.Used = 1, 2, 1, 0.95
	v := Classify(f)
	if v.Class != CPU || v.Rule.Signal != signalCPUMaxProcs || !strings.Contains(v.Rule.Change, "raise GOMAXPROCS") {
		t.Errorf("GOMAXPROCS 1 of 2 CPUs, 0.95 used: %v, want cpu by GOMAXPROCS, saying to raise it", v)
	}
	for _, c := range []CPUUse{
		{Known: true, MaxProcs: 2, Available: 1.5, Used: 1.4, Cores: 1.5}, // the runtime's ceil of a 1.5 quota
		{Known: true, MaxProcs: 2, Available: 2, Used: 1.9, Cores: 2},
		{Known: true, MaxProcs: 1, Available: 0, Used: 0.95, Cores: 1}, // unknown
	} {
		if _, ok := c.maxProcsBound(); ok {
			t.Errorf("%+v: bound by GOMAXPROCS, want not", c)
		}
	}

	// A busy node: the threads waited 1.2 cores' worth of the 4 s a second
	// the workers worked (0.3 of the work time), and got 0.4 of 2 cores.
	w := Window{Duration: 10 * time.Second, Workers: 4, Adds: 200, Reconciles: 200, Busy: 40 * time.Second,
		CPU: CPUUse{Known: true, Used: 0.4, Cores: 2, MaxProcs: 2, Available: 2, RunDelay: 1.2, RunDelayKnown: true}}
	if v := w.Classify(); v.Class != CPU || v.Rule.Signal != signalCPUWaitShare || math.Abs(v.Figure-0.3) > 1e-9 || !strings.Contains(v.Rule.Change, "CPU request") {
		t.Errorf("a busy node: %v, want cpu by the CPU wait, 0.3 of the work time, saying to raise the request", v)
	}
	if st, ok := w.CPU.Starved(); !ok || math.Abs(st-0.75) > 1e-9 {
		t.Errorf("Starved = %v, %v; want 1.2 of 1.6 wanted", st, ok)
	}
	// The same wait beside reconciles that mostly sleep (10 s of work a
	// second): the node's CPU holds little of it back, Little's law speaks.
	w.Busy = 100 * time.Second
	if v := w.Classify(); v.Class == CPU {
		t.Errorf("a CPU wait of 0.12 of the work time: %v, want no cpu", v)
	}
	// A quiet process's wakeups: its threads waited 0.05 of a core beside
	// 5 reconciles of 1 ms a second. A tenth of a core of wait is the
	// least read: under it, a short work time would magnify any wakeup.
	q := Window{Duration: 10 * time.Second, Workers: 4, Adds: 50, Reconciles: 50, Busy: 50 * time.Millisecond,
		CPU: CPUUse{Known: true, Used: 0.05, Cores: 2, MaxProcs: 2, Available: 2, RunDelay: 0.05, RunDelayKnown: true}}
	if f := q.Figures(); f.CPUWaitKnown {
		t.Errorf("a wait of 0.05 cores: CPU wait share %v known, want unknown", f.CPUWaitShare)
	}
	// A tenth of a core of wait, 20 times that work time: the workers are
	// busy 0.00125 of their time, and the wait is the rest of the
	// process's. An almost idle queue on a busy node read cpu here, before
	// the errors its retries showed (e2e TestBottleneck on a loaded CI
	// machine, utilization 0.0096).
	q.CPU.RunDelay = 0.1
	if f := q.Figures(); f.CPUWaitKnown {
		t.Errorf("a queue busy %.5f of its time: CPU wait share %v known, want unknown", f.Utilization, f.CPUWaitShare)
	}
	// Busy a quarter of the time, the same queue is judged by the wait.
	q.Busy, q.CPU.RunDelay = 10*time.Second, 0.5
	if v := q.Classify(); v.Class != CPU || v.Rule.Signal != signalCPUWaitShare || math.Abs(v.Figure-0.5) > 1e-9 {
		t.Errorf("a queue busy a quarter of its time, the wait half its work time: %v, want cpu by the CPU wait, 0.5", v)
	}
	// A queue that is a small part of a busy process: its workers are busy
	// 1 s a second, the process's threads wanted 3.2 cores and waited 0.8
	// of them. The work waited at most 0.25 of what it wanted, not the
	// 0.8 of its work time that all of the process's wait would be.
	s := Window{Duration: 10 * time.Second, Workers: 2, Adds: 100, Reconciles: 100, Busy: 10 * time.Second,
		CPU: CPUUse{Known: true, Used: 2.4, Cores: 4, MaxProcs: 4, Available: 4, RunDelay: 0.8, RunDelayKnown: true}}
	if f := s.Figures(); !f.CPUWaitKnown || math.Abs(f.CPUWaitShare-0.25) > 1e-9 {
		t.Errorf("a queue beside a busy process: CPU wait share %v (known %v), want 0.25, the share of what the threads wanted", f.CPUWaitShare, f.CPUWaitKnown)
	}
	s.CPU.Used = 2.5
	if v := s.Classify(); v.Class == CPU {
		t.Errorf("a queue beside a busy process, its threads waiting 0.24 of what they wanted: %v, want no cpu", v)
	}
	f = w.Figures()
	f.CPUWaitShare, f.CPUWaitKnown = 0.5, false
	if v := Classify(f); v.Class == CPU {
		t.Errorf("the CPU wait unknown: %v, want no cpu", v)
	}
}
