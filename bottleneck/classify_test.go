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
		CPU:    CPUUse{Known: true, Used: 0.5, Cores: 2, Throttled: 0, ThrottledKnown: true},
		Client: true, AddsKnown: true, WorkKnown: true,
		Workers: 10, LittlesLaw: 10, Utilization: 0.5,
		APIServer: APIServerUse{Known: true, LatencyKnown: true, Latency: 10 * time.Millisecond},
	}
}

// set returns f with signal s at v.
func set(f Figures, s Signal, v float64) Figures {
	switch s {
	case SignalAPIServerUnavailable:
		f.APIServer.Unavailable = v
	case SignalAPIServerLatency:
		f.APIServer.Latency = time.Duration(math.Round(v * float64(time.Second)))
	case SignalCPUUtilization:
		f.CPU.Used = v * f.CPU.Cores
	case SignalCPUThrottled:
		f.CPU.Throttled = v
	case SignalRetryAfterShare:
		f.RetryAfterShare = v
	case SignalRateLimiterShare:
		f.RateLimiterShare = v
	case SignalErrorRetries:
		f.ErrorRetries = v
	case SignalWorkersNeeded:
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
		if r.Signal == SignalWorkersNeeded {
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
	f.CPU.Known, f.Client, f.AddsKnown, f.WorkKnown, f.APIServer.Known = false, false, false, false, false
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
		if got, ok := RuleFor(r.Class); !ok || got.Class != r.Class {
			t.Errorf("RuleFor(%s) = %v, %v", r.Class, got, ok)
		}
	}
	for _, c := range []Class{CPU, ServerThrottling, ClientRateLimit, Errors, Workers} {
		if !seen[c] {
			t.Errorf("no rule for %s", c)
		}
	}
	if _, ok := RuleFor(None); ok {
		t.Error("RuleFor(none) found a rule")
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
		{Classify(set(neutral(), SignalCPUUtilization, 0.95)), "bottleneck=cpu (cpu_utilization 0.95 >= 0.9: give the controller more CPU"},
		{Classify(set(neutral(), SignalRateLimiterShare, 0.62)), "bottleneck=client-rate-limit (rate_limiter_share 0.62 >= 0.25: raise the client's QPS/Burst"},
		{Classify(set(neutral(), SignalErrorRetries, 0.6)), "bottleneck=errors (error_retries 0.60 > 0.5: fix the reconcile's errors"},
		{Classify(set(neutral(), SignalWorkersNeeded, 1.2)), "bottleneck=workers (Little's law 12 > configured)"},
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
		if got := LittlesLaw(tc.arrivals, tc.work); got != tc.want {
			t.Errorf("LittlesLaw(%v/s, %v) = %d, want %d", tc.arrivals, tc.work, got, tc.want)
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
