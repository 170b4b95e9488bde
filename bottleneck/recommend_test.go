package bottleneck

import (
	"math"
	"strings"
	"testing"
	"time"

	"github.com/otelqueue/otelqueue/internal/sizing"
)

var t0 = time.Date(2026, 12, 6, 12, 0, 0, 0, time.UTC)

// span is a span of one queue "orders" ending at t0+end, PeakSpan long,
// with arrivals per second of work each on workers, and the process's CPU.
func span(end time.Duration, workers int, arrivals float64, work time.Duration, cpu float64, memory uint64) Span {
	d := PeakSpan
	n := uint64(arrivals * d.Seconds())
	w := Window{Name: "orders", Duration: d, Workers: workers, Adds: n, Reconciles: n, Busy: time.Duration(n) * work}
	c := CPUUse{Known: true, Used: cpu, Cores: 2}
	w.CPU = c
	return Span{End: t0.Add(end), Queues: []Window{w}, CPU: c, Memory: memory}
}

func TestRecommendNothing(t *testing.T) {
	r := Recommend(nil)
	if !r.At.IsZero() || r.CPU.Known || r.Memory.Known || len(r.Queues) != 0 || r.Queues == nil {
		t.Errorf("no history: %+v", r)
	}
	if got := r.String(); got != "size: nothing measured yet" {
		t.Errorf("String = %q", got)
	}
}

// TestRecommendHoldsThePeak checks that the busiest span of the horizon
// sets the workers, the CPU and the memory, each from its own peak, and
// that a span older than the horizon no longer counts.
func TestRecommendHoldsThePeak(t *testing.T) {
	history := []Span{
		span(0, 4, 400, 50*time.Millisecond, 1.5, 900<<20), // beyond the horizon at the end
		span(10*time.Minute, 4, 20, 50*time.Millisecond, 0.1, 40<<20),
		span(20*time.Minute, 4, 60, 50*time.Millisecond, 0.3, 30<<20), // the busiest queue and CPU
		span(30*time.Minute, 4, 20, 50*time.Millisecond, 0.1, 50<<20), // the most memory
		span(Horizon+5*time.Minute, 4, 10, 50*time.Millisecond, 0.05, 20<<20),
	}
	r := Recommend(history)
	if len(r.Queues) != 1 {
		t.Fatalf("queues %+v", r.Queues)
	}
	q := r.Queues[0]
	// 60/s × 50ms / 0.7 = 4.29: 5 workers, the class workers.
	if !q.Known || q.Run != 5 || q.Workers != 4 || q.Class != Workers || !q.PeakAt.Equal(t0.Add(20*time.Minute)) {
		t.Errorf("queue %+v, want 5 workers from the span at 20m", q)
	}
	// The CPU per reconcile is 0.3 cores / 60 reconciles/s = 5ms; 60/s ×
	// 5ms / 0.7 = 0.4286: request 0.43, limit 0.86.
	if c := r.CPU; !c.Known || c.Request != 0.43 || c.Limit != 0.86 || c.PerReconcile != 5*time.Millisecond || !c.PeakAt.Equal(t0.Add(20*time.Minute)) {
		t.Errorf("cpu %+v", c)
	}
	// 50 MiB: limit 62.5 → 63 MiB, GOMEMLIMIT 0.9 × 63 = 56.7 → 56 MiB.
	if m := r.Memory; !m.Known || m.Request != 50<<20 || m.Limit != 63<<20 || m.GOMEMLIMIT != 56<<20 {
		t.Errorf("memory %+v, want 50, 63 and 56 MiB", m)
	}
	if r.Over != Horizon+5*time.Minute-10*time.Minute+PeakSpan || r.Span != PeakSpan {
		t.Errorf("over %v span %v", r.Over, r.Span)
	}
	for _, want := range []string{"orders 5 (4 run: too few; 60.0 arrivals/s × 50ms / 0.7)", "cpu: request 0.43 limit 0.86", "memory: request 50MiB limit 63MiB GOMEMLIMIT=56MiB", "the busiest 5m0s of the last 1h0m0s"} {
		if !strings.Contains(r.String(), want) {
			t.Errorf("String %q lacks %q", r, want)
		}
	}
}

// TestRecommendEnough checks that a queue whose workers are more than its
// busiest span needs says so, with the count it needs.
func TestRecommendEnough(t *testing.T) {
	r := Recommend([]Span{span(time.Minute, 8, 20, 50*time.Millisecond, 0.1, 10<<20)})
	q := r.Queues[0]
	if q.Run != 2 || q.Workers != 8 || q.Class != None {
		t.Errorf("%+v, want 2 of 8", q)
	}
	if !strings.Contains(q.String(), "orders 2 (8 run: more than enough") {
		t.Errorf("String %q", q)
	}
	// The workers stopped (a Runner's Run returned): the count known last.
	stopped := span(2*time.Minute, 0, 0, 0, 0.01, 10<<20)
	if q := Recommend([]Span{span(time.Minute, 8, 20, 50*time.Millisecond, 0.1, 10<<20), stopped}).Queues[0]; q.Workers != 8 || q.Run != 2 {
		t.Errorf("after the workers stopped: %+v, want 2 of 8", q)
	}
	if !strings.Contains(r.String(), "over the 5m0s so far") && r.Span < PeakSpan {
		t.Errorf("String %q", r)
	}
}

// TestRecommendDownstreamLimit checks that a span whose class is not
// workers never recommends more workers than run, however slow its work.
func TestRecommendDownstreamLimit(t *testing.T) {
	s := span(time.Minute, 4, 60, 200*time.Millisecond, 0.1, 10<<20)
	s.Queues[0].Client = Client{Used: true, Work: s.Queues[0].Busy, RateLimiterWait: s.Queues[0].Busy / 2}
	r := Recommend([]Span{s})
	if q := r.Queues[0]; q.Run != 4 || q.Class != ClientRateLimit {
		t.Errorf("%+v, want 4 for client-rate-limit", q)
	}
	if !strings.Contains(r.Queues[0].String(), "client-rate-limit, not more than run") {
		t.Errorf("String %q", r.Queues[0])
	}
}

// TestRecommendFewReconciles checks that a queue with fewer reconciles than
// Little's law needs in every span is unknown, not 1.
func TestRecommendFewReconciles(t *testing.T) {
	s := span(time.Minute, 4, 0, 0, 0.1, 10<<20)
	s.Queues[0].Reconciles, s.Queues[0].Adds = sizing.MinReconciles-1, sizing.MinReconciles-1
	r := Recommend([]Span{s})
	if q := r.Queues[0]; q.Known || q.Run != 0 {
		t.Errorf("%+v, want unknown", q)
	}
	if !strings.Contains(r.Queues[0].String(), "orders unknown (4 run; fewer than 5 reconciles in every span)") {
		t.Errorf("String %q", r.Queues[0])
	}
}

// TestRecommendIdleCPU checks that a span with no reconcile still needs
// the CPU it used (informers, collection), over the target utilization.
func TestRecommendIdleCPU(t *testing.T) {
	s := span(time.Minute, 4, 0, 0, 0.07, 10<<20)
	r := Recommend([]Span{s})
	if c := r.CPU; !c.Known || c.Request != 0.1 || c.PerReconcile != 0 {
		t.Errorf("%+v, want 0.07/0.7 = 0.1", c)
	}
	if !strings.Contains(r.CPU.String(), "0.07 used idle / 0.7") {
		t.Errorf("String %q", r.CPU)
	}
	s.CPU, s.Queues[0].CPU = CPUUse{}, CPUUse{}
	if r := Recommend([]Span{s}); r.CPU.Known || r.CPU.String() != "unknown (no CPU read)" {
		t.Errorf("no CPU read: %+v", r.CPU)
	}
}

// TestRecommendCPULowerBound checks that a busiest span whose class is cpu
// gives a lower bound.
func TestRecommendCPULowerBound(t *testing.T) {
	s := span(time.Minute, 4, 20, 50*time.Millisecond, 0.49, 10<<20)
	s.CPU.Cores, s.Queues[0].CPU.Cores = 0.5, 0.5
	r := Recommend([]Span{s})
	if c := r.CPU; !c.LowerBound || c.Cores != 0.5 || !strings.Contains(c.String(), "request >=") {
		t.Errorf("%+v %q, want a lower bound", c, c)
	}
}

// TestRecommendMemoryPerObject checks the memory one cached object takes
// (its heap times the heap's growth) and the base that is left.
func TestRecommendMemoryPerObject(t *testing.T) {
	s := span(time.Minute, 4, 20, 50*time.Millisecond, 0.1, 100<<20)
	s.Objects, s.ObjectBytes, s.HeapGrowth = 10000, 4096, 2
	m := Recommend([]Span{s}).Memory
	if m.Objects != 10000 || m.PerObject != 8192 || m.Base != 100<<20-10000*8192 {
		t.Errorf("%+v, want 10000 objects of 8KiB", m)
	}
	if !strings.Contains(m.String(), "(peak 100MiB = 21.9MiB + 10000 objects × 8KiB)") {
		t.Errorf("String %q", m)
	}
}

// TestRecommendQueues checks that several queues are each sized, by name,
// and that a queue no longer in the last span is not.
func TestRecommendQueues(t *testing.T) {
	a := span(time.Minute, 4, 20, 50*time.Millisecond, 0.1, 10<<20)
	b := a
	b.Queues = []Window{a.Queues[0], a.Queues[0]}
	b.Queues[0].Name, b.Queues[1].Name = "zebras", "ants"
	b.End = a.End.Add(time.Minute)
	b.CPU.Used = 0.3
	r := Recommend([]Span{a, b})
	if len(r.Queues) != 2 || r.Queues[0].Name != "ants" || r.Queues[1].Name != "zebras" {
		t.Errorf("queues %+v, want ants and zebras, not orders", r.Queues)
	}
	// Two queues of 20/s each at 0.3 cores for 40 reconciles/s: 7.5ms
	// each; 40/s × 7.5ms / 0.7 = 0.429, more than orders alone needed.
	if c := r.CPU; c.Request != 0.43 || c.Arrivals != 40 || c.PerReconcile != 7500*time.Microsecond {
		t.Errorf("cpu %+v", c)
	}
}

// TestRecommendYoungHistory: while a history is younger than PeakSpan its
// spans are prefixes of the longest, which alone counts; and a span's
// keys that its reconciles did not serve (an initial list of 100,000
// objects, 2,000 of them reconciled in the first 9 s) count as a backlog
// drained over PeakSpan, not as a rate.
func TestRecommendYoungHistory(t *testing.T) {
	list := func(d time.Duration, adds, reconciles uint64, cpu float64) Span {
		w := Window{Name: "orders", Duration: d, Workers: 8, Adds: adds, Reconciles: reconciles, Busy: 8 * d}
		c := CPUUse{Known: true, Used: cpu, Cores: 2}
		w.CPU = c
		return Span{End: t0.Add(d), Queues: []Window{w}, CPU: c, Memory: 300 << 20}
	}
	first := list(9*time.Second, 100_000, 2_000, 1.9)
	r := Recommend([]Span{first})
	// 100,000 in 9 s is 11,111/s, 2,000 served: 222.2/s, and the other
	// 98,000 drained over 5 minutes: 326.7/s more. CPU per reconcile:
	// 1.9 × 9 s / 2,000 = 8.55 ms. 548.9/s × 8.55ms / 0.7 = 6.70 cores,
	// where the rate of the 9 s asked for 135.7.
	if c := r.CPU; !c.Known || c.Request != 6.71 || c.PerReconcile.Round(time.Microsecond) != 8550*time.Microsecond || c.Arrivals < 548.8 || c.Arrivals > 549 {
		t.Errorf("the first 9 s: cpu %+v, want a request of 6.71 for 548.9 arrivals/s at 8.55ms", c)
	}
	// A minute in, the list is served (100,600 adds, 100,600 reconciles,
	// 1.2 cores on average): the 9 s prefix no longer counts.
	r = Recommend([]Span{first, list(time.Minute, 100_600, 100_600, 1.2)})
	// 1,676.7/s × (1.2 × 60 / 100,600 = 715.7µs) / 0.7 = 1.714 cores.
	if c := r.CPU; c.Request != 1.72 || !c.PeakAt.Equal(t0.Add(time.Minute)) {
		t.Errorf("a minute in: cpu %+v, want a request of 1.72 from the minute's span", c)
	}
	if r.Span != time.Minute || r.Over != time.Minute {
		t.Errorf("span %v over %v, want a minute each", r.Span, r.Over)
	}
}

// TestRecommendQueuesNamedAlike: two queues of one name stay two, each
// recommended from the windows of its position among the windows of that
// name.
func TestRecommendQueuesNamedAlike(t *testing.T) {
	busy, idle := span(time.Minute, 4, 60, 50*time.Millisecond, 0.3, 10<<20).Queues[0], span(time.Minute, 8, 2, 50*time.Millisecond, 0.3, 10<<20).Queues[0]
	s := span(time.Minute, 4, 60, 50*time.Millisecond, 0.3, 10<<20)
	s.Queues = []Window{busy, idle}
	r := Recommend([]Span{s})
	if len(r.Queues) != 2 {
		t.Fatalf("queues %+v, want two", r.Queues)
	}
	// 60/s × 50ms / 0.7 = 4.29: 5 of 4; 2/s × 50ms / 0.7 = 0.14: 1 of 8.
	if a, b := r.Queues[0], r.Queues[1]; !a.Known || a.Run != 5 || a.Workers != 4 || !b.Known || b.Run != 1 || b.Workers != 8 {
		t.Errorf("queues %+v, want 5 of 4 then 1 of 8", r.Queues)
	}
}

// TestRecommendCPUNotANumber: a span whose CPU reading is not a number
// (a hand-made CPUUse; ProcessCPU makes none) sets no CPU figure.
func TestRecommendCPUNotANumber(t *testing.T) {
	for _, used := range []float64{math.NaN(), math.Inf(1)} {
		s := Span{End: t0, CPU: CPUUse{Known: true, Used: used, Cores: 2}}
		if c := Recommend([]Span{s}).CPU; c.Known {
			t.Errorf("CPU used %v: %+v, want no CPU figure", used, c)
		}
	}
}
